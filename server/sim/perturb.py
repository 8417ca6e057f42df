"""Near-miss calls of a recorded call, and whether an answer has a recorded answer's key structure.

:func:`perturbations` gives, deterministically, the small variations of a gold call an agent makes:
another page size, another date range or window, a fund's name for its code (and a code for a name),
one more code in a batch, another adopted entity in a one-code call. :func:`same_shape` and
:func:`agreeing` check a simulated answer against the recorded one (docs/recordings-and-world.md,
entity adoption).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import date, timedelta
from typing import Any

from finmcp.server.sim.entity_harvest import FUND_RE, Harvest
from finmcp.server.sim.near_miss import CODE_LIST_KEYS, PAGE_SIZE_KEYS, RECORD_CODE_KEYS, code_of, main_list

DATE_ARG_KEYS = ("startDate", "endDate", "beginDate")


def _shift(text: str, days: int) -> str | None:
    try:
        return (date.fromisoformat(text) + timedelta(days=days)).isoformat()
    except ValueError:
        return None


def perturbations(
    tool: str, arguments: Mapping[str, Any], harvest: Harvest, schema: Mapping[str, Any]
) -> list[tuple[str, dict[str, Any]]]:
    """(kind, arguments) near misses of one call, in a fixed order; kinds: ``page size``, ``dates``,
    ``window``, ``name for code``, ``code for name``, ``one more code``, ``another entity``."""
    props = schema.get("properties") or {}
    out: list[tuple[str, dict[str, Any]]] = []
    args = dict(arguments)
    for key in PAGE_SIZE_KEYS:
        if key in props:
            current = args.get(key, props[key].get("default", 10))
            new = current + 2 if isinstance(current, int) and current <= 3 else max(1, (current or 10) // 2)
            out.append(("page size", {**args, key: new}))
            break
    shifted = {k: _shift(args[k], -30) for k in DATE_ARG_KEYS if isinstance(args.get(k), str)}
    if shifted and all(shifted.values()):
        out.append(("dates", {**args, **shifted}))
    enum = (props.get("dimensionType") or {}).get("enum")
    if enum and args.get("dimensionType") in enum:
        others = [e for e in enum if e != args["dimensionType"]]
        if others:
            out.append(("window", {**args, "dimensionType": others[0]}))
    funds, strategies = sorted(harvest.funds), sorted(harvest.strategies)
    for key in ("fundNameOrCode", "keyword"):
        value = args.get(key)
        if isinstance(value, str) and FUND_RE.match(value) and harvest.funds.get(value, {}).get("name"):
            out.append(("name for code", {**args, key: harvest.funds[value]["name"]}))
        elif key == "keyword" and isinstance(value, str) and tool == "SearchFunds":
            code = harvest.names().get(value)
            if code and FUND_RE.match(code):
                out.append(("code for name", {**args, key: code}))
    named = {**harvest.funds, **harvest.strategies}
    for key in (*CODE_LIST_KEYS, "strategyCode", "fundCode"):
        value = args.get(key)
        names: list[Any] = list(value) if isinstance(value, list) else [value]
        at = next(
            (i for i, c in enumerate(names) if isinstance(c, str) and named.get(c, {}).get("name")), None
        )
        prop = props.get(key) or {}
        pattern = (prop.get("items") if isinstance(value, list) else prop) or {}
        if at is not None and _accepts(pattern, named[str(names[at])]["name"]):
            names[at] = named[str(names[at])]["name"]
            out.append(("name for code", {**args, key: names if isinstance(value, list) else names[0]}))
    for key in CODE_LIST_KEYS:
        codes = args.get(key)
        if isinstance(codes, list) and codes and all(isinstance(c, str) for c in codes):
            pool = funds if FUND_RE.match(codes[0]) else strategies
            extra = next((c for c in pool if c not in codes), None)
            if extra is not None:
                out.append(("one more code", {**args, key: [*codes, extra]}))
    for key, pool in (("strategyCode", strategies), ("fundCode", funds)):
        code = args.get(key)
        if isinstance(code, str) and code in pool and len(pool) > 1:
            other = pool[(pool.index(code) + 1) % len(pool)]
            out.append(("another entity", {**args, key: other}))
    return out


def _accepts(schema: Mapping[str, Any], text: str) -> bool:
    """Whether a string schema's ``pattern`` (if any) lets ``text`` through (names where codes must be
    six digits are invalid calls, not near misses)."""
    pattern = schema.get("pattern")
    return not isinstance(pattern, str) or re.search(pattern, text) is not None


def _generalize(key: str) -> str:
    return "<code>" if FUND_RE.match(key) or key[:2] in ("ZH", "SI") else key


def _records(value: Any, path: str = "", out: dict[str, set[str]] | None = None) -> dict[str, set[str]]:
    """Path (lists as ``[]``, code keys as ``<code>``) -> the keys of every object found there."""
    out = {} if out is None else out
    if isinstance(value, Mapping):
        out.setdefault(path, set()).update(_generalize(k) for k in value)
        for key, item in value.items():
            _records(item, f"{path}/{_generalize(key)}", out)
    elif isinstance(value, list):
        for item in value:
            _records(item, path + "[]", out)
    return out


def is_empty(value: Any) -> bool:
    """An answer with nothing in it: ``[]``, ``{}``, or only empty lists and zero totals."""
    if isinstance(value, list):
        return not value
    if isinstance(value, Mapping):
        return all(
            is_empty(v) or k in ("total", "pageSize", "page", "status", "success") for k, v in value.items()
        )
    return value is None


def same_shape(recorded: Any, simulated: Any) -> bool:
    """True when ``simulated`` is not empty (unless ``recorded`` is) and every object at a path both
    answers have carries the recorded object's keys, at the top as well (objects keyed by codes compare
    as one)."""
    if is_empty(simulated) and not is_empty(recorded):
        return False
    if type(recorded) is not type(simulated):
        return False
    ours, theirs = _records(simulated), _records(recorded)
    return all(keys <= ours[path] for path, keys in theirs.items() if path in ours) and (
        "" not in theirs or "" in ours
    )


ENTITY_FACT_KEYS = frozenset(
    {
        "fundName",
        "基金名称",
        "基金简称",
        "基金全称",
        "strategyName",
        "策略名称",
        "nav",
        "最新净值",
        "最新净值日期",
        "navDate",
    }
)
"""Fields of an undated record that belong to its entity (its name, its latest NAV), not to the call."""


def _facts(
    value: Any, code: str | None = None, out: dict[tuple[str, str], str] | None = None
) -> dict[tuple[str, str], str]:
    """(code@day, key) -> value: every scalar of a dated row, and the entity fields of other records."""
    out = {} if out is None else out
    if isinstance(value, Mapping):
        own = next((value[k] for k in RECORD_CODE_KEYS if isinstance(value.get(k), str)), None)
        code = own or code
        when = next((value[k] for k in ("date", "navDate", "净值日期") if isinstance(value.get(k), str)), "")
        for key, item in value.items():
            if code and not isinstance(item, (Mapping, list)) and (when or key in ENTITY_FACT_KEYS):
                out.setdefault((f"{code}@{when}", key), json.dumps(item, ensure_ascii=False))
            _facts(item, code, out)
    elif isinstance(value, list):
        for item in value:
            _facts(item, code, out)
    return out


def disagreements(recorded: Any, simulated: Any) -> list[str]:
    """The facts both answers state for the same code (and day) with different values, as text."""
    ours, theirs = _facts(simulated), _facts(recorded)
    return [
        f"{k[0]} {k[1]}: recorded {theirs[k]}, simulated {ours[k]}"
        for k in sorted(theirs.keys() & ours.keys())
        if theirs[k] != ours[k]
    ]


def members_in_order(recorded: Any, simulated: Any) -> bool:
    """For a re-paged answer: its members' codes begin with the recorded members' codes, in order
    (as many as both have); True when either answer has no list of coded records."""
    ours, theirs = main_list(simulated), main_list(recorded)
    if ours is None or theirs is None:
        return True
    mine = [code_of(m) for m in ours[1]]
    recorded_codes = [code_of(m) for m in theirs[1]]
    n = min(len(mine), len(recorded_codes))
    return mine[:n] == recorded_codes[:n]
