"""One call of the schema-driven builder: its parsed arguments, its rows and the bars behind them.

How the rows are chosen (``meta.output_rows_by``, else inferred from the arguments and the tool's
name) is described in :mod:`server.sim.schema_driven`.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from finmcp.recordings.plumbing.seeding import derive_seed
from finmcp.server.sim.registry import ToolInputError
from finmcp.server.sim.schema_values import parse_date
from finmcp.server.sim.sim_entities import INSTRUMENT_TYPES, Bar, Entity, bars, entity_name, universe
from finmcp.server.world import World
from finmcp.server.world import trading_calendar as cal
from finmcp.tool_specs.entities import INSTRUMENT_ARGUMENTS
from finmcp.tool_specs.model import ToolSpec

MAX_ROWS = 250
"""Largest number of rows one call returns (date ranges keep their most recent days)."""


DEFAULT_HISTORY_DAYS = 60
"""Trading days returned by a history tool called without a date range."""


DEFAULT_LIST_ROWS = 20
"""Entities returned by a list tool called without a size argument."""


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


HISTORY_TOKENS = frozenset(
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


Gen = Callable[["Call", "Row"], Any]


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


def name_tokens(name: str) -> set[str]:
    return set(re.split(r"[_\-.]+", name.lower()))


def _param_entity(spec: ToolSpec, name: str) -> str | None:
    prop = (spec.input_schema.get("properties") or {}).get(name) or {}
    desc = str(prop.get("description") or "")
    if "enum" in prop or re.search(r"One of:|Which category", desc):
        return None
    if name not in INSTRUMENT_ARGUMENTS and not (name == "is_id" and re.search(r"symbol", desc, re.I)):
        return None
    for rx, etype in _DESC_TYPES:
        if rx.search(desc):
            return etype
    for etype in spec.consumes:
        if etype in INSTRUMENT_TYPES and etype not in ("article_id", "region", "exchange"):
            return etype
    return "stock_symbol"


def tool_entity_type(spec: ToolSpec, entity_columns: dict[str, str]) -> str:
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
    tokens = name_tokens(spec.name)
    for token, etype in _TOKEN_TYPES:
        if token in tokens:
            return etype
    return "stock_symbol"


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


def parse_args(call: Call) -> None:
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
        elif lname in _SIZE_ARGS and (size := _as_int(value)) is not None:
            call.size = max(1, min(MAX_ROWS, size))
        elif lname in _PAGE_ARGS and (page := _as_int(value)) is not None:
            call.page = max(1, page)
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


def default_entity(call: Call) -> Entity:
    plan = call.plan
    ents = universe(call.world, plan.entity_type, plan.western)
    return ents[derive_seed(call.world.seed, "default_entity", plan.spec.name) % len(ents)]


def _build_rows(call: Call) -> list[Row]:
    mode = _rows_by(call)
    latest = call.latest_g()
    rows: list[Row]
    if mode == "date_range" and call.plan.time_step == "minute":
        days = _range_days(call)[-1:]
        ent = (call.entities or [default_entity(call)])[0]
        rows = [Row(0, ent, days[0], minute=m) for m in _minutes(call.minute_step)] if days else []
    elif mode == "date_range":
        days = _range_days(call)
        ents = call.entities or [default_entity(call)]
        rows = []
        per = max(1, MAX_ROWS // len(ents))
        for ent in ents:
            rows.extend(Row(0, ent, g) for g in days[-per:])
        rows = rows[:MAX_ROWS]
    elif mode == "single":
        g = _range_days(call)[-1:] if (call.on_date or call.end) else [latest]
        day = g[0] if g else latest
        rows = [Row(0, ent, day) for ent in (call.entities or [default_entity(call)])]
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
