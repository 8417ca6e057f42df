"""The schema-driven builder: answers any non-Qieman tool from its output schema and ``meta`` hints.

``build_from_schema(ctx, args)`` returns the tool's *unwrapped* value (the rows that go under ``result``
for ``meta.output_wrapped`` tools). How it decides:

- **Schema**: the result schema is compiled once per tool into value generators (objects -> their
  properties in ``meta.output_columns`` order, arrays -> rows, leaves -> values chosen by the column's
  name: dates, the row's instrument code/name, bar fields, changes, ratios, amounts, ...). ``enum``,
  ``const``, ``pattern``, ``format``, bounds and ``minItems``/``maxItems`` are honoured, so the output
  validates against the tool's ``outputSchema``.
- **Rows** (``meta.output_rows_by``, else inferred): ``date_range`` -> one row per trading day (Shanghai
  /Shenzhen calendar) of the argument range, ascending, at most :data:`MAX_ROWS` (the most recent ones
  are kept), default the last :data:`DEFAULT_HISTORY_DAYS` trading days up to ``world.as_of``;
  ``list`` -> a deterministic sample of world entities (stocks, funds, indices, bonds, ...; size from a
  size/limit argument, default :data:`DEFAULT_LIST_ROWS`); ``single`` -> one row per argument symbol.
- **Entities**: a symbol/fund code/ticker argument is the row entity, so its code appears in the entity
  columns; a symbol's bars are the same in every tool (``server.sim.sim_entities``).
- **Determinism**: every random draw comes from ``derive_seed(seed, "schema_driven", tool, canonical
  args)``; no wall clock, no ``hash()``.

A date argument that does not parse, or a range that ends before it starts, raises
:class:`ToolInputError` naming the tool and argument.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from recordings.canonical import canonical_json
from recordings.plumbing.seeding import derive_seed
from server.sim.registry import BuildContext, ToolInputError
from server.sim.schema_values import (
    column_kind,
    date_format_from_text,
    format_date,
    is_chinese,
    parse_date,
    sample_pattern,
)
from server.sim.sim_entities import INSTRUMENT_TYPES, Bar, Entity, bars, entity_name, universe
from server.world import World
from server.world import trading_calendar as cal
from server.world import vocab as v
from tool_specs.model import ToolSpec

MAX_ROWS = 250
"""Largest number of rows one call returns (date ranges keep their most recent days)."""
DEFAULT_HISTORY_DAYS = 60
"""Trading days returned by a history tool called without a date range."""
DEFAULT_LIST_ROWS = 20
"""Entities returned by a list tool called without a size argument."""

_SYMBOL_ARGS = frozenset(
    {
        "symbol",
        "symbols",
        "code",
        "stock",
        "ticker",
        "tickers",
        "fund",
        "bond_code",
        "coin",
        "crypto_name",
        "ticker_slug",
        "ticker_slugs",
    }
)
_START_ARGS = frozenset(
    {
        "start_date",
        "date_start",
        "datestart",
        "startdate",
        "start_day",
        "start_year",
        "start_time",
        "start",
        "since",
        "creation_from_date",
        "is_from",
        "from",
        "begin_date",
    }
)
_END_ARGS = frozenset(
    {
        "end_date",
        "date_end",
        "dateend",
        "enddate",
        "end_day",
        "end_year",
        "end_time",
        "end",
        "until",
        "creation_to_date",
        "to",
        "end_month",
    }
)
_STRICT_DATE_ARGS = frozenset({"start_date", "end_date", "date", "trade_date", "date_start", "date_end"})
_DATE_ARGS = frozenset({"date", "trade_date", "delivery_date", "day", "time", "calDate"})
_SIZE_ARGS = frozenset(
    {
        "size",
        "limit",
        "count",
        "pagesize",
        "page_size",
        "outputsize",
        "output_size",
        "numberofdays",
        "n",
        "top",
    }
)
_PAGE_ARGS = frozenset({"page", "page_number", "pageindex", "pagenum"})
_HISTORY_TOKENS = frozenset(
    {
        "hist",
        "history",
        "historical",
        "daily",
        "kline",
        "candles",
        "chart",
        "charts",
        "ohlc",
        "ohlcv",
        "series",
        "sparks",
        "nav",
        "prices",
        "min",
        "minute",
        "intraday",
    }
)
_DESC_TYPES = (
    (re.compile(r"fund code|基金", re.I), "fund_code"),
    (re.compile(r"index code|指数", re.I), "index_symbol"),
    (re.compile(r"bond code|债", re.I), "bond_code"),
    (re.compile(r"option", re.I), "option_symbol"),
    (re.compile(r"futures|commodity", re.I), "futures_symbol"),
    (re.compile(r"crypto", re.I), "crypto_symbol"),
    (re.compile(r"currency", re.I), "currency_pair"),
    (re.compile(r"board|sector|industry", re.I), "industry"),
    (re.compile(r"stock|ticker", re.I), "stock_symbol"),
)
_TOKEN_TYPES = (
    ("fund", "fund_code"),
    ("bond", "bond_code"),
    ("index", "index_symbol"),
    ("futures", "futures_symbol"),
    ("option", "option_symbol"),
    ("crypto", "crypto_symbol"),
    ("coin", "crypto_symbol"),
    ("coins", "crypto_symbol"),
    ("currency", "currency_pair"),
    ("fx", "currency_pair"),
    ("forex", "currency_pair"),
)
_NUMERIC_KINDS = frozenset(
    {
        "rank",
        "open",
        "high",
        "low",
        "close",
        "prev_close",
        "acc_close",
        "change_pct",
        "change",
        "amplitude",
        "turnover_rate",
        "amount",
        "volume",
        "pe",
        "pb",
        "market_cap",
        "count",
        "ratio",
        "rate",
        "money",
        "year",
    }
)
_WORDS_EN = ("alpha", "beta", "gamma", "delta", "sigma", "omega", "kappa", "theta")
_HEADLINES_CN = (
    "发布年度报告",
    "召开业绩说明会",
    "获机构调研",
    "披露回购进展",
    "公告分红方案",
    "发布经营数据",
)
_HEADLINES_EN = ("reports quarterly results", "announces dividend", "raises guidance", "expands buyback")

Gen = Callable[["Call", "Row"], Any]


# ----------------------------------------------------------------------------- call state


@dataclass
class Row:
    """What one generated row is about: its position, instrument and trading day."""

    i: int
    entity: Entity
    g: int | None  # global trading-day index
    summary: bool = False
    minute: str | None = None  # HH:MM:SS for intraday rows
    keyed: bool = False  # the value of one key of a keyed object: its rows are about that key's entity
    _bar: Bar | None = None


@dataclass
class Call:
    """Everything one call's generators share: world, plan, seeded draws and parsed arguments."""

    world: World
    plan: ToolPlan
    args: dict[str, Any]
    rng: random.Random
    entities: list[Entity] = field(default_factory=list)
    start: date | None = None
    end: date | None = None
    on_date: date | None = None
    date_label: str = "YYYY-MM-DD"
    size: int | None = None
    page: int = 1
    period: str = "daily"
    minute_step: int = 1
    _rows: list[Row] | None = None
    _bars: dict[tuple[str, str], dict[int, Bar]] = field(default_factory=dict)

    def latest_g(self) -> int:
        return cal.index_on_or_before(self.world.as_of)

    def bar(self, row: Row) -> Bar | None:
        """The row's daily bar (computed for all rows of the same entity at once)."""
        if row._bar is not None:
            return row._bar
        g = row.g if row.g is not None else self.latest_g()
        key = (row.entity.type, row.entity.code)
        if key not in self._bars:
            days = {r.g for r in (self._rows or []) if r.entity == row.entity and r.g is not None}
            days.add(g)
            self._bars[key] = bars(self.world, row.entity, sorted(days))
        got = self._bars[key].get(g)
        if got is None:
            self._bars[key].update(bars(self.world, row.entity, [g]))
            got = self._bars[key].get(g)
        if got is not None and row.minute is not None:
            got = _minute_bar(got, row, self.world.seed)
        row._bar = got
        return got

    def row_day(self, row: Row) -> date:
        g = row.g if row.g is not None else self.latest_g()
        return cal.all_trading_days()[g]

    def rows(self) -> list[Row]:
        """The rows of the call's main table (built once)."""
        if self._rows is None:
            self._rows = _build_rows(self)
        return self._rows


# ----------------------------------------------------------------------------- tool plan


@dataclass
class ToolPlan:
    """What is known about a tool before any call: its result generator and row strategy."""

    spec: ToolSpec
    entity_type: str
    western: bool
    rows_by: str | None
    entity_columns: dict[str, str]
    column_order: list[str]
    history_like: bool
    time_step: str | None = None
    row_has_date: bool = False
    row_has_code: bool = False
    gen: Gen | None = None


_PLANS: dict[int, ToolPlan] = {}


def _tokens(name: str) -> set[str]:
    return set(re.split(r"[_\-.]+", name.lower()))


def _param_entity(spec: ToolSpec, name: str) -> str | None:
    prop = (spec.input_schema.get("properties") or {}).get(name) or {}
    desc = str(prop.get("description") or "")
    if "enum" in prop or re.search(r"One of:|Which category", desc):
        return None
    if name not in _SYMBOL_ARGS and not (name == "is_id" and re.search(r"symbol", desc, re.I)):
        return None
    for rx, etype in _DESC_TYPES:
        if rx.search(desc):
            return etype
    for etype in spec.consumes:
        if etype in INSTRUMENT_TYPES and etype not in ("article_id", "region", "exchange"):
            return etype
    return "stock_symbol"


def _tool_entity_type(spec: ToolSpec, entity_columns: dict[str, str]) -> str:
    for name in spec.input_schema.get("properties") or {}:
        etype = _param_entity(spec, name)
        if etype:
            return etype
    for etype in entity_columns.values():
        if etype in INSTRUMENT_TYPES and etype not in ("article_id", "region", "exchange"):
            return etype
    for etype in (*spec.consumes, *spec.produces):
        if etype in INSTRUMENT_TYPES and etype not in ("article_id", "region", "exchange", "company_id"):
            return etype
    tokens = _tokens(spec.name)
    for token, etype in _TOKEN_TYPES:
        if token in tokens:
            return etype
    return "stock_symbol"


def _result_schema(spec: ToolSpec) -> dict[str, Any]:
    schema = spec.output_schema or {}
    if spec.meta.get("output_wrapped"):
        return ((schema.get("properties") or {}).get("result")) or {}
    return schema


def _plan(spec: ToolSpec) -> ToolPlan:
    plan = _PLANS.get(id(spec))
    if plan is not None and plan.spec is spec:
        return plan
    meta = spec.meta
    entity_columns = dict(meta.get("output_entity_columns") or {})
    plan = ToolPlan(
        spec=spec,
        entity_type=_tool_entity_type(spec, entity_columns),
        western=spec.source == "rapidapi",
        rows_by=meta.get("output_rows_by"),
        entity_columns=entity_columns,
        column_order=list(meta.get("output_columns") or []),
        history_like=bool(_tokens(spec.name) & _HISTORY_TOKENS),
        time_step=meta.get("output_time_step"),
    )
    plan.gen = _Compiler(plan, _result_schema(spec)).compile(_result_schema(spec), "result", 0)
    if len(_PLANS) > 4096:
        _PLANS.clear()
    _PLANS[id(spec)] = plan
    return plan


# ----------------------------------------------------------------------------- argument parsing


def _arg_date(spec: ToolSpec, name: str, value: Any) -> tuple[date, str] | None:
    if value is None or value == "":
        return None
    prop = (spec.input_schema.get("properties") or {}).get(name) or {}
    desc = str(prop.get("description") or "")
    if re.search(r"offset|paging|record", desc, re.I):
        return None
    if name in ("start_year", "end_year") and str(value).isdigit() and len(str(value)) == 4:
        y = int(value)
        return (date(y, 1, 1) if name == "start_year" else date(y, 12, 31)), "YYYY"
    parsed = parse_date(value)
    if parsed is None:
        if name not in _STRICT_DATE_ARGS:
            return None  # a month code, a count or an id sharing a date-ish name
        raise ToolInputError(
            f"{spec.name}: argument {name!r} = {value!r} is not a date (expected YYYYMMDD or YYYY-MM-DD)"
        )
    d, label = parsed
    if label == "YYYY" and name in _END_ARGS:
        d = date(d.year, 12, 31)
    elif label in ("YYYYMM", "YYYY-MM") and name in _END_ARGS:
        d = (date(d.year + d.month // 12, d.month % 12 + 1, 1)) - timedelta(days=1)
    return d, label


def _split_symbols(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(x) for x in value if str(x).strip()]
    text = str(value).strip()
    if not text:
        return []
    return [s.strip() for s in re.split(r"[,，;\s]+", text) if s.strip()]


def _parse_args(call: Call) -> None:
    spec, world = call.plan.spec, call.world
    for name, value in call.args.items():
        lname = name.lower()
        etype = _param_entity(spec, name)
        if etype:
            for code in _split_symbols(value)[:MAX_ROWS]:
                call.entities.append(Entity(etype, code, entity_name(world, etype, code)))
            continue
        if lname in _START_ARGS or lname in _END_ARGS or name in _DATE_ARGS:
            got = _arg_date(spec, name, value)
            if got is None:
                continue
            d, label = got
            if label not in ("unix", "YYYY", "YYYYMM", "YYYY-MM"):
                call.date_label = label
            if lname in _START_ARGS:
                call.start = d
            elif lname in _END_ARGS:
                call.end = d
            else:
                call.on_date = d
        elif lname in _SIZE_ARGS and _as_int(value) is not None:
            call.size = max(1, min(MAX_ROWS, _as_int(value)))
        elif lname in _PAGE_ARGS and _as_int(value) is not None:
            call.page = max(1, _as_int(value))
        elif lname in ("period", "interval", "gran", "timeperiod", "time_bucket"):
            text = str(value).lower()
            digits = re.match(r"^(\d+)\s*(m|min|minute)?$", text)
            if digits and int(digits.group(1)) in (1, 5, 15, 30, 60):
                call.minute_step = int(digits.group(1))
            if text in ("weekly", "week", "周k", "1wk", "1w", "w"):
                call.period = "weekly"
            elif text in ("monthly", "month", "月k", "1mo", "1m", "m"):
                call.period = "monthly"
    if call.start and call.end and call.start > call.end:
        raise ToolInputError(f"{spec.name}: the date range starts ({call.start}) after it ends ({call.end})")


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


# ----------------------------------------------------------------------------- rows


def _rows_by(call: Call) -> str:
    plan = call.plan
    if plan.rows_by in ("date_range", "list", "single"):
        return plan.rows_by
    if call.start or call.end:
        return "date_range"
    if plan.history_like and (plan.row_has_date or not plan.row_has_code):
        return "date_range"
    if call.entities and plan.row_has_date:
        return "date_range"
    if len(call.entities) == 1:
        return "single"
    return "list"


def _range_days(call: Call) -> list[int]:
    latest = call.latest_g()
    if call.on_date and not (call.start or call.end):
        g = cal.index_on_or_before(min(max(call.on_date, cal.CALENDAR_START), call.world.as_of))
        return [g] if g >= 0 else []
    end = min(call.end or call.world.as_of, call.world.as_of)
    if end < cal.CALENDAR_START:
        return []
    g_end = cal.index_on_or_before(end)
    if call.start:
        g_start = cal.index_on_or_after(max(call.start, cal.CALENDAR_START))
    else:
        g_start = max(0, g_end - (call.size or DEFAULT_HISTORY_DAYS) + 1)
    days = list(range(g_start, min(g_end, latest) + 1))
    step = call.period if call.period != "daily" else (call.plan.time_step or "day")
    if step in ("weekly", "week", "monthly", "month", "quarter", "year"):
        all_days = cal.all_trading_days()

        def bucket(g: int) -> tuple[int, int]:
            d = all_days[g]
            if step in ("weekly", "week"):
                return d.isocalendar()[0], d.isocalendar()[1]
            if step == "quarter":
                return d.year, (d.month - 1) // 3
            return (d.year, d.month) if step in ("monthly", "month") else (d.year, 0)

        days = [g for k, g in enumerate(days) if k + 1 == len(days) or bucket(days[k + 1]) != bucket(g)]
    limit = min(MAX_ROWS, call.size or MAX_ROWS)
    return days[-limit:]


def _minutes(step: int) -> list[str]:
    """Bar times of one trading session (09:31-11:30, 13:01-15:00) every ``step`` minutes."""
    out = []
    for start, end in ((9 * 60 + 30, 11 * 60 + 30), (13 * 60, 15 * 60)):
        for t in range(start + step, end + 1, step):
            out.append(f"{t // 60:02d}:{t % 60:02d}:00")
    return out[:MAX_ROWS]


def _minute_bar(day: Bar, row: Row, seed: int) -> Bar:
    """An intraday bar of ``row.minute`` interpolated between the day's open and close."""
    assert row.minute is not None
    hh, mm = int(row.minute[:2]), int(row.minute[3:5])
    minutes = hh * 60 + mm - (9 * 60 + 30) - (90 if hh >= 13 else 0)
    frac, prev_frac = minutes / 240, max(0, minutes - 1) / 240
    u = (derive_seed(seed, "minute", day.day.isoformat(), row.minute) % 10_000) / 10_000
    dec = 4 if day.close < 20 else 2
    close = round(day.open + (day.close - day.open) * frac, dec)
    open_ = round(day.open + (day.close - day.open) * prev_frac, dec)
    high = round(max(open_, close) * (1 + 0.001 * u), dec)
    low = round(min(open_, close) * (1 - 0.001 * u), dec)
    return Bar(day.day, open_, high, low, close, open_, max(1, int(day.volume / 240 * (0.5 + u))), close)


def _default_entity(call: Call) -> Entity:
    plan = call.plan
    ents = universe(call.world, plan.entity_type, plan.western)
    return ents[derive_seed(call.world.seed, "default_entity", plan.spec.name) % len(ents)]


def _build_rows(call: Call) -> list[Row]:
    mode = _rows_by(call)
    latest = call.latest_g()
    if mode == "date_range" and call.plan.time_step == "minute":
        days = _range_days(call)[-1:]
        ent = (call.entities or [_default_entity(call)])[0]
        rows = [Row(0, ent, days[0], minute=m) for m in _minutes(call.minute_step)] if days else []
    elif mode == "date_range":
        days = _range_days(call)
        ents = call.entities or [_default_entity(call)]
        rows: list[Row] = []
        per = max(1, MAX_ROWS // len(ents))
        for ent in ents:
            rows.extend(Row(0, ent, g) for g in days[-per:])
        rows = rows[:MAX_ROWS]
    elif mode == "single":
        g = _range_days(call)[-1:] if (call.on_date or call.end) else [latest]
        day = g[0] if g else latest
        rows = [Row(0, ent, day) for ent in (call.entities or [_default_entity(call)])]
    else:
        day = _range_days(call)[-1] if (call.on_date or call.end) and _range_days(call) else latest
        if len(call.entities) > 1:
            ents = call.entities
        else:
            pool = universe(call.world, call.plan.entity_type, call.plan.western)
            n = min(call.size or DEFAULT_LIST_ROWS, MAX_ROWS, len(pool))
            offset = ((call.page - 1) * n + call.rng.randrange(len(pool))) % len(pool)
            ents = [pool[(offset + k) % len(pool)] for k in range(n)]
            if call.entities:
                ents = [call.entities[0], *[e for e in ents if e.code != call.entities[0].code]][:n]
        rows = [Row(0, ent, day) for ent in ents]
    for i, row in enumerate(rows):
        row.i = i
    return rows


# ----------------------------------------------------------------------------- schema compiler


def _num_bounds(schema: dict[str, Any], x: float, integer: bool) -> float | int:
    lo, hi = schema.get("minimum"), schema.get("maximum")
    xlo, xhi = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    step = 1 if integer else 0.01
    if isinstance(xlo, (int, float)) and not isinstance(xlo, bool) and x <= xlo:
        x = xlo + step
    if isinstance(xhi, (int, float)) and not isinstance(xhi, bool) and x >= xhi:
        x = xhi - step
    if isinstance(lo, (int, float)) and x < lo:
        x = lo
    if isinstance(hi, (int, float)) and x > hi:
        x = hi
    mult = schema.get("multipleOf")
    if isinstance(mult, (int, float)) and mult > 0:
        x = round(x / mult) * mult
    if integer:
        return int(round(x))
    return round(x, 6) if isinstance(x, float) else x


class _Compiler:
    """Turns a JSON Schema into a generator function ``(call, row) -> value``."""

    def __init__(self, plan: ToolPlan, root: dict[str, Any]) -> None:
        self.plan = plan
        self.root = root
        self.rows_claimed = False

    def resolve(self, schema: Any, hops: int = 0) -> dict[str, Any]:
        if not isinstance(schema, dict):
            return {}
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/") and hops < 16:
            node: Any = self.root
            for part in ref[2:].split("/"):
                node = node.get(part, {}) if isinstance(node, dict) else {}
            merged = {**node, **{k: val for k, val in schema.items() if k != "$ref"}}
            return self.resolve(merged, hops + 1)
        if "allOf" in schema and isinstance(schema["allOf"], list):
            merged = {k: val for k, val in schema.items() if k != "allOf"}
            for part in schema["allOf"]:
                part = self.resolve(part, hops + 1)
                props = {**merged.get("properties", {}), **part.get("properties", {})}
                req = list(dict.fromkeys([*merged.get("required", []), *part.get("required", [])]))
                merged = {**merged, **part, "properties": props, "required": req}
            return merged
        return schema

    def _type(self, schema: dict[str, Any], name: str, depth: int) -> str:
        t = schema.get("type")
        if isinstance(t, list):
            choices = [x for x in t if x != "null"] or ["null"]
            if depth == 0 and len(choices) > 1:
                hint = self.plan.spec.meta.get("output_shape_hint")
                if hint in choices:
                    return hint
            return choices[0]
        if isinstance(t, str):
            return t
        if "properties" in schema:
            return "object"
        if "items" in schema:
            return "array"
        kind = column_kind(name)
        return "number" if kind in _NUMERIC_KINDS else "string"

    def compile(self, schema: Any, name: str, depth: int) -> Gen:
        schema = self.resolve(schema)
        if "const" in schema:
            const = schema["const"]
            return lambda call, row: const
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            options = schema["enum"]
            return lambda call, row: options[call.rng.randrange(len(options))]
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list) and schema[key]:
                subs = [self.resolve(s) for s in schema[key]]
                non_null = [s for s in subs if s.get("type") != "null"] or subs
                base = {k: val for k, val in schema.items() if k != key}
                return self.compile({**base, **non_null[0]}, name, depth)
        t = self._type(schema, name, depth)
        if t == "object":
            return self._object(schema, name, depth)
        if t == "array":
            return self._array(schema, name, depth)
        if t in ("number", "integer"):
            return self._number(schema, name, t == "integer")
        if t == "boolean":
            return lambda call, row: call.rng.random() < 0.5
        if t == "null":
            return lambda call, row: None
        return self._string(schema, name, depth)

    # -- objects and arrays

    def _default_columns(self, depth: int) -> dict[str, dict[str, Any]]:
        plan = self.plan
        if plan.column_order:
            return {c: {} for c in plan.column_order}
        chinese = plan.spec.source == "akshare"
        if plan.history_like:
            cols = (
                ("日期", "开盘", "收盘", "最高", "最低", "成交量", "成交额", "涨跌幅")
                if chinese
                else ("date", "open", "high", "low", "close", "volume")
            )
        else:
            cols = (
                ("代码", "名称", "最新价", "涨跌幅", "成交量")
                if chinese
                else ("symbol", "name", "price", "changePercent", "volume")
            )
        return {c: {} for c in cols}

    def _keyed(self, schema: dict[str, Any], name: str, depth: int) -> Gen:
        """An object mapping entity names (``meta.output_keyed_by``) to values, e.g. one table each."""
        value_gen = self.compile(schema["additionalProperties"], name, depth + 1)
        lo = schema.get("minProperties", 1) if isinstance(schema.get("minProperties"), int) else 1

        def gen(call: Call, row: Row) -> dict[str, Any]:
            pool = universe(call.world, call.plan.entity_type, call.plan.western)
            start = call.rng.randrange(len(pool))
            ents = [pool[(start + k) % len(pool)] for k in range(max(lo, 3))]
            ents = call.entities[:1] + [
                e for e in ents if not call.entities or e.code != call.entities[0].code
            ]
            out: dict[str, Any] = {}
            for ent in ents[: max(lo, 3)]:
                out[ent.name or ent.code] = value_gen(
                    call, Row(row.i, ent, row.g, summary=row.summary, keyed=True)
                )
            return out

        return gen

    def _object(self, schema: dict[str, Any], name: str, depth: int) -> Gen:
        props = schema.get("properties")
        if (not isinstance(props, dict) or not props) and isinstance(
            schema.get("additionalProperties"), dict
        ):
            return self._keyed(schema, name, depth)
        if not isinstance(props, dict) or not props:
            if schema.get("additionalProperties") is False:
                return lambda call, row: {}
            props = self._default_columns(depth) if depth <= 2 else {"value": {"type": "number"}}
        order = [c for c in self.plan.column_order if c in props] + [
            c for c in props if c not in self.plan.column_order
        ]
        kinds = {column_kind(c) for c in order}
        if depth <= 2 and "date" in kinds:
            self.plan.row_has_date = True
        if depth <= 2 and kinds & {"code", "name"}:
            self.plan.row_has_code = True
        gens = [(key, self.compile(props[key], key, depth + 1)) for key in order]

        def gen(call: Call, row: Row) -> dict[str, Any]:
            return {key: g(call, row) for key, g in gens}

        return gen

    def _tuple(self, schema: dict[str, Any], depth: int) -> Gen:
        names = self.plan.column_order
        gens = [
            self.compile(sub, names[i] if i < len(names) else f"item{i}", depth + 1)
            for i, sub in enumerate(schema["prefixItems"])
        ]

        def gen(call: Call, row: Row) -> list[Any]:
            return [g(call, row) for g in gens]

        return gen

    def _array(self, schema: dict[str, Any], name: str, depth: int) -> Gen:
        if isinstance(schema.get("prefixItems"), list) and schema["prefixItems"]:
            return self._tuple(schema, depth)
        items = schema.get("items")
        if not isinstance(items, dict):
            items = {"type": "object"} if depth == 0 or not items else {}
        lo = schema.get("minItems", 0) if isinstance(schema.get("minItems"), int) else 0
        hi = schema.get("maxItems") if isinstance(schema.get("maxItems"), int) else None
        item_name = _singular(name)
        if depth == 0 and items.get("type") not in ("object", None) and len(self.plan.column_order) == 1:
            item_name = self.plan.column_order[0]
        item_gen = self.compile(items, item_name, depth + 1)

        def fit(values: list[Any], call: Call, row: Row) -> list[Any]:
            while len(values) < lo:
                values.append(item_gen(call, Row(len(values), row.entity, row.g)))
            return values if hi is None else values[:hi]

        def rows_gen(call: Call, row: Row) -> list[Any]:
            if not row.summary:
                return fit([item_gen(call, row) for _ in range(2)], call, row)
            if row.keyed:
                return fit(
                    [item_gen(call, Row(r.i, row.entity, r.g, minute=r.minute)) for r in call.rows()],
                    call,
                    row,
                )
            return fit([item_gen(call, r) for r in call.rows()], call, row)

        return rows_gen

    # -- leaves

    def _entity_for(self, call: Call, row: Row, column: str) -> Entity:
        wanted = self.plan.entity_columns.get(column)
        if wanted is None:
            if re.search(r"基金", column):
                wanted = "fund_code"
            elif re.search(r"指数", column):
                wanted = "index_symbol"
            elif re.search(r"债", column):
                wanted = "bond_code"
        same = {wanted, row.entity.type} <= {"stock_symbol", "company_id"}
        if wanted is None or wanted == row.entity.type or same or wanted not in INSTRUMENT_TYPES:
            return row.entity
        pool = universe(call.world, wanted, self.plan.western)
        return pool[derive_seed(call.world.seed, "column_entity", row.entity.code, wanted) % len(pool)]

    def _number(self, schema: dict[str, Any], name: str, integer: bool) -> Gen:
        kind = column_kind(name)
        entity_kind = self.plan.entity_columns.get(name)
        if entity_kind and kind not in ("code", "name"):
            kind = "date" if entity_kind == "date" else "code"
        chinese = is_chinese(name)
        value = self._number_value(kind, name, chinese)

        constrained = any(
            k in schema for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
        )
        if constrained:
            return lambda call, row: _num_bounds(schema, value(call, row), integer)
        if integer:
            return lambda call, row: int(round(value(call, row)))
        return value

    def _number_value(self, kind: str, name: str, chinese: bool) -> Callable[[Call, Row], float]:
        def bar_field(attr: str) -> Callable[[Call, Row], float]:
            def get(call: Call, row: Row) -> float:
                bar = call.bar(row)
                return getattr(bar, attr) if bar else 0.0

            return get

        if kind in ("open", "high", "low", "close", "prev_close", "acc_close", "volume"):
            return bar_field({"prev_close": "prev_close", "acc_close": "acc_close"}.get(kind, kind))

        def derived(call: Call, row: Row) -> float:
            bar = call.bar(row)
            r = call.rng.random()
            if kind == "rank":
                return row.i + 1
            if kind == "amount":
                return round(bar.volume * bar.close, 2) if bar else round(r * 1e8, 2)
            if kind == "change_pct":
                return round((bar.close / bar.prev_close - 1) * 100, 2) if bar and bar.prev_close else 0.0
            if kind == "change":
                return round(bar.close - bar.prev_close, 4) if bar else 0.0
            if kind == "amplitude":
                return (
                    round((bar.high - bar.low) / bar.prev_close * 100, 2) if bar and bar.prev_close else 0.0
                )
            if kind == "turnover_rate":
                return round(0.2 + (bar.volume % 9973) / 9973 * 8, 2) if bar else round(0.2 + r * 8, 2)
            stock = call.world.stock(row.entity.code) if row.entity.type == "stock_symbol" else None
            if kind == "pe":
                return stock["pe_ttm"] if stock else round(6 + r * 50, 2)
            if kind == "pb":
                return stock["pb"] if stock else round(0.6 + r * 7, 2)
            if kind == "market_cap":
                return (
                    round(stock["market_value_yi"] * 1e8, 2) if stock else round((20 + r * r * 8000) * 1e8, 2)
                )
            if kind == "count":
                return int(1 + r * r * 100000)
            if kind == "ratio":
                return round(r * 100, 2) if chinese else round(r, 4)
            if kind == "rate":
                return round((r - 0.4) * 40, 2)
            if kind == "money":
                return round((1 + r * r * 5000) * 1e6, 2)
            if kind == "year":
                return call.world.as_of.year - int(r * 3)
            if kind == "date":
                day = call.row_day(row)
                if chinese or re.search(r"date|日期", name, re.I):
                    return int(day.strftime("%Y%m%d"))
                return format_date(day, "unix_ms" if "ms" in name.lower() else "unix")
            if kind == "code":
                code = row.entity.code
                return int(code) if code.isdigit() else derive_seed(call.world.seed, "num_id", code) % 10**8
            return round(r * 1000, 2)

        return derived

    def _string(self, schema: dict[str, Any], name: str, depth: int) -> Gen:
        kind = column_kind(name)
        entity_kind = self.plan.entity_columns.get(name)
        if entity_kind == "date":
            kind = "date"
        elif entity_kind in INSTRUMENT_TYPES and kind != "name":
            kind = "code"
        fmt = schema.get("format")
        label = None
        if fmt == "date":
            kind, label = "date", "YYYY-MM-DD"
        elif fmt == "date-time":
            kind, label = "date", "iso-datetime"
        elif kind == "date":
            label = date_format_from_text(str(schema.get("description") or ""))
        pattern = schema.get("pattern") if isinstance(schema.get("pattern"), str) else None
        compiled = re.compile(pattern) if pattern else None
        min_len = schema.get("minLength") if isinstance(schema.get("minLength"), int) else 0
        max_len = schema.get("maxLength") if isinstance(schema.get("maxLength"), int) else None
        base = self._string_value(kind, name, label, fmt, depth)
        if name == self.plan.spec.meta.get("output_keyed_by"):
            base = lambda call, row: row.entity.name or row.entity.code  # noqa: E731
        echo = _echo_arg(self.plan.spec, name) if depth > 0 and kind not in ("date", "code") else None

        def gen(call: Call, row: Row) -> str:
            text = str(call.args[echo]) if echo and isinstance(call.args.get(echo), str) else base(call, row)
            if compiled is not None and not compiled.search(text):
                text = sample_pattern(pattern, call.rng) or text
            if len(text) < min_len:
                text = text + "0" * (min_len - len(text))
            if max_len is not None and len(text) > max_len:
                text = text[:max_len]
            return text

        return gen

    def _string_value(
        self, kind: str, name: str, label: str | None, fmt: Any, depth: int
    ) -> Callable[[Call, Row], str]:
        plan = self.plan
        chinese = is_chinese(name) or plan.spec.source == "akshare"
        if depth == 0:  # a bare text result

            def text_result(call: Call, row: Row) -> str:
                ent = call.rows()[0].entity if call.rows() else row.entity
                day = call.row_day(row).isoformat()
                return (
                    f"{ent.name}（{ent.code}）截至{day}的数据摘要。"
                    if chinese
                    else (f"Summary for {ent.name} ({ent.code}) as of {day}.")
                )

            return text_result
        if fmt == "uri" or kind == "url":
            return lambda call, row: f"https://example.com/{plan.spec.name}/{row.entity.code}"
        if fmt == "email":
            return lambda call, row: "info@example.com"
        if kind == "date":

            def date_text(call: Call, row: Row) -> str:
                use = label or call.date_label
                if row.minute is not None and use in ("YYYY-MM-DD", "YYYYMMDD", "YYYY/MM/DD", "YYYY.MM.DD"):
                    use = "YYYY-MM-DD HH:MM:SS"
                return str(format_date(call.row_day(row), use, row.minute or "15:00:00"))

            return date_text
        if kind == "code":
            return lambda call, row: self._entity_for(call, row, name).code
        if kind == "name":
            return lambda call, row: self._entity_for(call, row, name).name
        if kind == "industry":

            def industry(call: Call, row: Row) -> str:
                stock = call.world.stock(row.entity.code) if row.entity.type == "stock_symbol" else None
                return stock["industry"] if stock else v.INDUSTRIES[call.rng.randrange(len(v.INDUSTRIES))]

            return industry
        if kind == "exchange":

            def exchange(call: Call, row: Row) -> str:
                stock = call.world.stock(row.entity.code) if row.entity.type == "stock_symbol" else None
                return stock["exchange"] if stock else ("NASDAQ" if plan.western else "SH")

            return exchange
        if kind == "status":
            if chinese:
                word = "开放赎回" if "赎回" in name else "开放申购" if "申购" in name else "正常"
                return lambda call, row: word
            return lambda call, row: "active"
        if kind == "currency":
            return lambda call, row: "USD" if plan.western else "CNY"
        if kind == "title":
            words = _HEADLINES_CN if chinese else _HEADLINES_EN
            sep = "" if chinese else " "
            return lambda call, row: f"{row.entity.name}{sep}{words[call.rng.randrange(len(words))]}"
        if kind == "text":
            if chinese:
                return lambda call, row: (
                    f"{row.entity.name}相关信息，数据截至{call.row_day(row).isoformat()}。"
                )
            return lambda call, row: (
                f"Information about {row.entity.name} as of {call.row_day(row).isoformat()}."
            )
        if kind in _NUMERIC_KINDS:
            number = self._number_value(kind, name, is_chinese(name))
            return lambda call, row: str(number(call, row))
        if chinese:
            return lambda call, row: f"{name}{row.i + 1}"
        return lambda call, row: f"{_WORDS_EN[call.rng.randrange(len(_WORDS_EN))]}-{row.i + 1}"


def _echo_arg(spec: ToolSpec, column: str) -> str | None:
    """The argument a column repeats (same name, case-insensitive), e.g. ``from``/``to`` of a conversion."""
    for arg in spec.input_schema.get("properties") or {}:
        if arg.lower() == column.lower():
            return arg
    return None


def _singular(name: str) -> str:
    return name[:-1] if name.endswith("s") and len(name) > 3 else name


# ----------------------------------------------------------------------------- entry point


def build_from_schema(ctx: BuildContext, args: dict[str, Any]) -> Any:
    """The tool's answer (unwrapped), generated from its output schema; deterministic per seed and args."""
    plan = _plan(ctx.spec)
    key = canonical_json(args)
    call = Call(
        ctx.world, plan, dict(args), random.Random(derive_seed(ctx.seed, "schema_driven", ctx.spec.name, key))
    )
    _parse_args(call)
    summary_g = None
    rows = None
    try:
        rows = call.rows()
    except ToolInputError:
        raise
    if rows:
        summary_g = rows[-1].g
    entity = call.entities[0] if call.entities else (rows[0].entity if rows else _default_entity(call))
    summary = Row(0, entity, summary_g, summary=True)
    return plan.gen(call, summary)
