"""The entities a benchmark names, harvested so the simulated world adopts them (docs/recordings-and-world.md).

Sources: recorded answers (their arguments and outputs, :func:`harvest_recordings`) and benchmark
sample files (the gold calls' arguments, the questions and the tool outputs of official FinMCP-Bench
files or finmcp JSONL benchmarks, :func:`harvest_samples`). What is kept:

- fund codes, with the name, full name and fund type (from a type field, else guessed from the name)
  where an output gives them, and the NAV of the latest day a record states one for (``nav`` with
  ``navDate``, ``最新净值`` with ``最新净值日期``);
- strategy codes, with their names.

The harvest is a pure function of its inputs (sorted, first-seen wins), so the same recordings give
the same world for a seed.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from finmcp.recordings.store import RecordingStore

FUND_CODE_KEYS = frozenset(
    {"fundCode", "fundCodes", "fundCodeList", "基金代码", "assetCode", "fundNameOrCode"}
)
STRATEGY_CODE_KEYS = frozenset({"strategyCode", "strategyCodes", "poCode", "策略代码"})
FUND_NAME_KEYS = ("fundName", "基金名称", "基金简称", "fundShortName", "shortName")
FUND_FULL_NAME_KEYS = ("基金全称", "fundFullName", "fullName")
STRATEGY_NAME_KEYS = ("strategyName", "策略名称")
TYPE_KEYS = ("fundInvestType", "基金类型", "fundType")
NAV_KEYS = ("nav", "最新净值", "unitNav")
NAV_DATE_KEYS = ("navDate", "最新净值日期", "净值日期")
_DAY_RE = re.compile(r"^(\d{4})[-年/](\d{1,2})[-月/](\d{1,2})日?(?:[ T].*)?$")
FUND_RE = re.compile(r"^\d{6}$")
STRATEGY_RE = re.compile(r"^[A-Z][A-Z0-9_]{0,23}$")
_TEXT_STRATEGY_RE = re.compile(r"(?<![A-Za-z0-9])((?:ZH|SI)\d{6})(?![A-Za-z0-9])")
_TYPE_HINTS = (  # (substring of a type field or a fund name, world fund type), first match wins
    ("FOF", "FOF"),
    ("QDII", "QDII型"),
    ("货币", "货币型"),
    ("MONEY", "货币型"),
    ("债", "债券型"),
    ("BOND", "债券型"),
    ("指数", "指数型"),
    ("ETF", "指数型"),
    ("INDEX", "指数型"),
    ("股票", "股票型"),
    ("STOCK", "股票型"),
    ("混合", "混合型"),
    ("MIX", "混合型"),
)


def iso_day(value: Any) -> str | None:
    """``YYYY-MM-DD`` of a recorded date (``2025-08-15``, ``2025-08-15 00:00:00``, ``2025年08月15日``)."""
    if not isinstance(value, str):
        return None
    match = _DAY_RE.match(value.strip())
    return f"{match[1]}-{int(match[2]):02d}-{int(match[3]):02d}" if match else None


def fund_type_of(text: str) -> str | None:
    """The world fund type a type field or a fund name suggests (``货币`` -> 货币型), or None."""
    upper = text.upper()
    return next((kind for hint, kind in _TYPE_HINTS if hint in upper), None)


@dataclass
class Harvest:
    """Entities named by recordings and benchmark samples (see the module doc)."""

    funds: dict[str, dict[str, str]] = field(default_factory=dict)
    """code -> hints: ``name``, ``full_name``, ``field_type`` (from a type field), ``name_type`` (from the
    name); the world keeps the type it drew for a code it has (``server.world.funds.build_universe``)."""
    strategies: dict[str, dict[str, str]] = field(default_factory=dict)  # code -> {"name"?}

    def add_fund(
        self, code: str, name: str | None = None, kind: str | None = None, full_name: str | None = None
    ) -> None:
        """Adopt a fund code; a name, full name or type is kept when none is known yet (first seen wins)."""
        hints = self.funds.setdefault(code, {})
        if name and "name" not in hints:
            hints["name"] = name
        if full_name and "full_name" not in hints:
            hints["full_name"] = full_name
        if kind and "field_type" not in hints:
            hints["field_type"] = kind
        guessed = fund_type_of(name) if name else None
        if guessed and "name_type" not in hints:
            hints["name_type"] = guessed

    def add_nav(self, code: str, day: str, nav: float) -> None:
        """Keep a fund's recorded NAV on a day; the latest day recorded wins (the first NAV of that day)."""
        hints = self.funds.setdefault(code, {})
        if nav > 0 and day > hints.get("nav_date", ""):
            hints["nav_date"], hints["nav"] = day, repr(nav)

    def add_strategy(self, code: str, name: str | None = None) -> None:
        """Adopt a strategy code (and its name when first given)."""
        hints = self.strategies.setdefault(code, {})
        if name and "name" not in hints:
            hints["name"] = name

    def names(self) -> dict[str, str]:
        """Fund and strategy name -> code (the first code named so wins)."""
        out: dict[str, str] = {}
        for table in (self.funds, self.strategies):
            for code in sorted(table):
                name = table[code].get("name")
                if name:
                    out.setdefault(name, code)
        return out

    def world_arguments(self) -> dict[str, Any]:
        """``World(**harvest.world_arguments())`` keyword arguments: the adopted funds and strategies."""
        return {
            "extra_fund_codes": {code: dict(self.funds[code]) for code in sorted(self.funds)},
            "extra_strategy_codes": {code: dict(self.strategies[code]) for code in sorted(self.strategies)},
        }

    def add_value(self, value: Any) -> None:
        """Adopt every entity named in one JSON value (an argument object or a tool output)."""
        _walk(value, self)

    def add_text(self, text: str) -> None:
        """Adopt the strategy codes (``ZH``/``SI`` + 6 digits) written in free text (a question).

        Six-digit numbers are not taken for fund codes: a question's ``110000`` is as often an amount
        in yuan as E Fund's code, and a code the agent must use is in the gold calls' arguments."""
        for code in _TEXT_STRATEGY_RE.findall(text):
            self.add_strategy(code)

    def add_call(self, tool: str, arguments: Any, output: Any) -> None:
        """Adopt a call's arguments and its output (``tool`` is the tool's name, kept for callers' logs)."""
        self.add_value(arguments)
        if output is not None:
            self.add_value(output)


def _walk(node: Any, harvest: Harvest) -> None:
    """Adopt the entities of every object in ``node`` (a parsed JSON value)."""
    if isinstance(node, dict):
        _adopt_object(node, harvest)
        for value in node.values():
            if isinstance(value, (dict, list)):
                _walk(value, harvest)
    elif isinstance(node, list):
        for item in node:
            if isinstance(item, (dict, list)):
                _walk(item, harvest)


def _adopt_object(node: Mapping[str, Any], harvest: Harvest) -> None:
    """Adopt what one object names: its code fields (a code or a list of codes), a record's name and
    type, the strategy codes a map is keyed by. Called once per object (also as a ``json`` hook)."""
    _record(node, harvest)
    for key, value in node.items():
        if key in FUND_CODE_KEYS or key in STRATEGY_CODE_KEYS:
            for item in value if isinstance(value, list) else (value,):
                if isinstance(item, str):
                    if key in FUND_CODE_KEYS and FUND_RE.match(item):
                        harvest.add_fund(item)
                    elif key in STRATEGY_CODE_KEYS and STRATEGY_RE.match(item):
                        harvest.add_strategy(item)
        elif key[:2] in ("ZH", "SI") and STRATEGY_RE.match(key):
            harvest.add_strategy(key)  # a map keyed by strategy code


def _record(node: Mapping[str, Any], harvest: Harvest) -> None:
    """A record naming a fund or a strategy with its name: keep the pair."""
    fund = next((node[k] for k in ("fundCode", "基金代码") if isinstance(node.get(k), str)), None)
    if fund is not None and FUND_RE.match(fund):
        name = next((node[k] for k in FUND_NAME_KEYS if isinstance(node.get(k), str) and node[k]), None)
        full = next((node[k] for k in FUND_FULL_NAME_KEYS if isinstance(node.get(k), str) and node[k]), None)
        kind_text = next((node[k] for k in TYPE_KEYS if isinstance(node.get(k), str)), None)
        harvest.add_fund(fund, name, fund_type_of(kind_text) if kind_text else None, full)
        nav = next((node[k] for k in NAV_KEYS if isinstance(node.get(k), (int, float))), None)
        day = next((iso_day(node[k]) for k in NAV_DATE_KEYS if node.get(k) is not None), None)
        if nav is not None and day is not None and not isinstance(nav, bool):
            harvest.add_nav(fund, day, float(nav))
    strategy = next((node[k] for k in ("strategyCode", "策略代码") if isinstance(node.get(k), str)), None)
    if strategy is not None and STRATEGY_RE.match(strategy) and fund is None:
        name = next((node[k] for k in STRATEGY_NAME_KEYS if isinstance(node.get(k), str) and node[k]), None)
        harvest.add_strategy(strategy, name)


def output_value(result: Mapping[str, Any]) -> Any:
    """The JSON value of a recorded result: its text parsed (the value the tool printed, an array
    unwrapped), else its structured content; None for prose and errors."""
    if result.get("isError"):
        return None
    for block in result.get("content") or []:
        try:
            return json.loads(block.get("text") or "")
        except (json.JSONDecodeError, TypeError, AttributeError):
            continue
    return result.get("structuredContent")


def harvest_recordings(
    store: RecordingStore, harvest: Harvest | None = None, keep: list[tuple[str, Any, Any]] | None = None
) -> Harvest:
    """Adopt every entity in the recorded arguments and outputs of ``store`` (one pass: each output's
    text is parsed once, its objects adopted as they are parsed). ``keep`` receives each recording's
    ``(tool, arguments, output value)`` (None for prose and errors), for :class:`near_miss.RecordedAnswers`."""
    harvest = harvest or Harvest()

    def hook(node: dict[str, Any]) -> dict[str, Any]:
        _adopt_object(node, harvest)
        return node

    for record in store.iter_responses():
        harvest.add_value(record["arguments"])
        result = record["result"]
        value = None
        if not result.get("isError"):
            for block in result.get("content") or []:
                try:
                    value = json.loads(block.get("text") or "", object_hook=hook)
                    break
                except (json.JSONDecodeError, TypeError, AttributeError):
                    continue
            else:
                value = result.get("structuredContent")
                harvest.add_value(value)
        if keep is not None:
            keep.append((record["tool"], record["arguments"], value))
    return harvest


def _sample_calls(sample: Mapping[str, Any]) -> Iterator[tuple[str, Any, Any]]:
    """(tool, arguments, output) of a sample: official ``messages`` calls, or a finmcp sample's
    ``turns`` (their gold ``calls``); a user's text comes as ``("", text, None)``."""
    for name in ("messages", "messages_list"):
        messages = sample.get(name)
        if not isinstance(messages, list):
            continue
        results = {m.get("tool_call_id"): m.get("content") for m in messages if isinstance(m, Mapping)}
        for message in messages:
            if not isinstance(message, Mapping):
                continue
            if message.get("role") == "user" and isinstance(message.get("content"), str):
                yield "", message["content"], None
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                try:
                    arguments = json.loads(function.get("arguments") or "{}")
                except (json.JSONDecodeError, TypeError):
                    continue
                try:
                    output = json.loads(results.get(call.get("id")) or "")
                except (json.JSONDecodeError, TypeError):
                    output = None
                yield str(function.get("name") or ""), arguments, output
    turns = sample.get("turns")
    for turn in [t for t in turns if isinstance(t, Mapping)] if isinstance(turns, list) else []:
        if isinstance(turn.get("user"), str):
            yield "", turn["user"], None
        for group in turn.get("calls") or []:
            for call in group if isinstance(group, list) else [group]:
                if isinstance(call, Mapping):
                    yield str(call.get("tool") or ""), call.get("arguments"), None


def _read_samples(path: Path) -> list[Any]:
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    text = raw.decode("utf-8")
    if path.name.endswith((".jsonl", ".jsonl.gz")):
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    value = json.loads(text)
    if not isinstance(value, list):
        raise ValueError(f"{path}: expected a JSON list of samples")
    return value


def harvest_samples(
    paths: Iterable[str | Path], harvest: Harvest | None = None, outputs: bool = True
) -> Harvest:
    """Adopt the entities of benchmark sample files: questions, gold calls' arguments, tool outputs.

    ``outputs=False`` reads the questions and the calls' arguments only (the samples' answers stay
    unseen: a measurement of calls whose answers are held out).
    Official FinMCP-Bench files (a JSON list with ``messages``) and finmcp JSONL benchmarks (lines
    with ``turns``: ``user`` and gold ``calls``), optionally gzipped; ValueError naming a file it
    cannot read.
    """
    harvest = harvest or Harvest()
    for path in map(Path, paths):
        try:
            samples = _read_samples(path)
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path}: cannot read benchmark samples ({exc})") from None
        for sample in samples:
            if not isinstance(sample, Mapping):
                continue
            for text_key in ("question", "query"):
                if isinstance(sample.get(text_key), str):
                    harvest.add_text(sample[text_key])
            for tool, arguments, output in _sample_calls(sample):
                if tool == "" and isinstance(arguments, str):
                    harvest.add_text(arguments)
                else:
                    harvest.add_call(tool, arguments, output if outputs else None)
    return harvest
