"""The ``World`` facade: one seed -> a lazily built, cached synthetic financial world."""

from __future__ import annotations

import re
from array import array
from collections.abc import Callable, Iterable, Mapping
from datetime import date
from functools import reduce
from itertools import islice, repeat
from operator import mul
from typing import Any, ClassVar

from . import content, market, planning, strategies, users
from . import trading_calendar as cal
from . import vocab as v
from .dates import shift_months
from .fund_navs import (
    LATEST_KEYS,
    anchor_series,
    build_nav_series,
    fund_returns_year,
    latest_values,
    nav_latest,
)
from .funds import Fund, FundStub, build_fund, build_universe
from .navs import NavSeries, factor_year, year_bounds
from .people import build_manager

_ONE = 1.0
_FUND_CODE_RE = re.compile(r"^\d{6}$")
_STRATEGY_CODE_RE = re.compile(r"^[A-Z0-9_]{1,24}$")


class World:
    """Seeded synthetic world of funds, strategies, market data, content, users and plans.

    Every entity is derived from ``(seed, kind, key)`` alone, built on first use and cached, so any
    entity can be built in any order or process with identical results, on any machine (person names
    come from the shipped name tables, ``server.world.names``).

    ``extra_fund_codes`` adds funds (a code list, or code -> hints: ``name``, ``full_name``, ``type``,
    ``name_type``, ``field_type``, and ``nav_date`` + ``nav``, a recorded NAV the fund's series is
    scaled to pass through); ``extra_strategy_codes`` adds strategies (a list, or code -> ``{"name"}``).
    A code the world already has keeps its drawn fund under the adopted names (docs/recordings-and-world.md).
    """

    MANAGERS_PER_COMPANY: ClassVar[int] = 30

    def __init__(
        self,
        seed: int = 0,
        as_of: date = date(2025, 9, 30),
        extra_fund_codes: Iterable[str] | Mapping[str, Mapping[str, str]] = (),
        extra_strategy_codes: Iterable[str] | Mapping[str, Mapping[str, str]] = (),
    ) -> None:
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise TypeError(f"World: seed must be an int, got {type(seed).__name__}")
        if not cal.CALENDAR_START.replace(year=2015) <= as_of <= cal.CALENDAR_END.replace(year=2029):
            raise ValueError(f"World: as_of {as_of} outside 2015-01-01..2029-12-31")
        self.seed = seed
        self.as_of = as_of
        extras = (
            dict(extra_fund_codes)
            if isinstance(extra_fund_codes, Mapping)
            else {c: {} for c in extra_fund_codes}
        )
        for code in extras:
            if not isinstance(code, str) or not _FUND_CODE_RE.match(code):
                raise ValueError(f"World: extra fund code {code!r} is not 6 digits")
        self._extra_funds = extras
        self._nav_anchors = {
            code: (hints["nav_date"], float(hints["nav"]))
            for code, hints in extras.items()
            if hints.get("nav_date") and hints.get("nav")
        }
        self._strategy_names = (
            {c: h["name"] for c, h in extra_strategy_codes.items() if h.get("name")}
            if isinstance(extra_strategy_codes, Mapping)
            else {}
        )
        self._extra_strategies = tuple(sorted(set(extra_strategy_codes)))
        for code in self._extra_strategies:
            if not _STRATEGY_CODE_RE.match(code):
                raise ValueError(f"World: extra strategy code {code!r} must be 1-24 of A-Z, 0-9, _")
        self.clear_caches()

    CACHE_LIMITS: dict[str, int] = {
        "fund_ret": 1024,  # one fund's daily returns of one year (2 KiB)
        "nav": 32,  # a fund's NAV series since setup (up to ~130 KiB)
        "fund": 256,  # a full fund record (a few KiB)
        "strategy_nav": 32,
        "user": 8,  # a user with positions, orders and a profit calendar (up to ~190 KiB)
    }
    """Entries kept per kind of heavy entity; beyond it the oldest quarter is dropped. Every entity is a
    function of the seed and its key, so a dropped one is rebuilt identically when named again (a long
    run's memory stays flat instead of growing with every fund it has seen). Other kinds are small
    (a float, a record per code) and are kept."""

    def clear_caches(self) -> None:
        """Forget every built entity (the world itself is unchanged: rebuilding gives the same data)."""
        self._universe: dict[str, FundStub] | None = None
        self._by_type: dict[str, list[str]] = {}
        self._cache: dict[tuple, Any] = {}
        self._bounded: dict[str, dict[tuple, Any]] = {kind: {} for kind in self.CACHE_LIMITS}

    def memo(self, key: tuple, build: Callable[[], Any]) -> Any:
        """``build()`` once per key while the caches live (for data derived from this world's entities)."""
        cache = self._bounded.get(key[0], self._cache)
        try:
            return cache[key]
        except KeyError:
            value = build()
            if cache is not self._cache and len(cache) >= self.CACHE_LIMITS[key[0]]:
                for old in list(islice(cache, max(1, len(cache) // 4))):  # oldest first
                    cache.pop(old, None)
            cache[key] = value
            return value

    def cache_sizes(self) -> dict[str, int]:
        """Entries held per kind of cached entity (for memory benchmarks and tests)."""
        sizes: dict[str, int] = {}
        for key in self._cache:
            sizes[key[0]] = sizes.get(key[0], 0) + 1
        return sizes | {kind: len(cache) for kind, cache in self._bounded.items()}

    # ------------------------------------------------------------------ funds
    def fund_universe(self) -> dict[str, FundStub]:
        """Every fund code with its stub (built once, cheap)."""
        if self._universe is None:
            self._universe = build_universe(self.seed, self._extra_funds)
        return self._universe

    def fund_codes(self) -> list[str]:
        """All fund codes, ascending."""
        return list(self.fund_universe())

    def fund_stub(self, code: str) -> FundStub | None:
        """The stub of a fund, or None for codes outside the universe."""
        return self.fund_universe().get(code)

    def require_stub(self, code: str) -> FundStub:
        """The stub of a fund of this world (a code it handed out); KeyError naming any other code."""
        stub = self.fund_universe().get(code)
        if stub is None:
            raise KeyError(f"fund {code!r} not in this world")
        return stub

    def codes_by_type(self, fund_type: str) -> list[str]:
        """Fund codes of one type (股票型, 混合型, 债券型, 指数型, 货币型, QDII型, FOF)."""
        if fund_type not in self._by_type:
            if fund_type not in v.FUND_TYPES:
                raise ValueError(f"fund type {fund_type!r} unknown; expected one of {v.FUND_TYPES}")
            self._by_type[fund_type] = [
                c for c, s in self.fund_universe().items() if s.fund_type == fund_type
            ]
        return self._by_type[fund_type]

    def factor_year(self, factor: str, year: int) -> array:
        """Daily returns of a shared market factor over one calendar year."""
        vol, drift = v.FACTORS[factor]
        return self.memo(("factor", factor, year), lambda: factor_year(self.seed, factor, year, vol, drift))

    def fund_returns_year(self, stub: FundStub, year: int) -> array:
        """Daily returns of a fund over one calendar year (cached)."""
        return self.memo(
            ("fund_ret", stub.code, year), lambda: array("d", fund_returns_year(self, stub, year))
        )

    def fund_nav_series(self, code: str) -> tuple[NavSeries, list[dict], list[dict]]:
        """(NAV series from setup to as_of, dividend records, split records); KeyError for unknown codes."""
        stub = self.fund_stub(code)
        if stub is None:
            raise KeyError(f"fund {code!r} not in this world")
        anchor = self._nav_anchors.get(code)
        return self.memo(("nav", code), lambda: anchor_series(build_nav_series(self, stub), anchor))

    def fund(self, code: str) -> Fund | None:
        """The full fund record, or None when ``code`` is not a fund of this world."""
        stub = self.fund_stub(code)
        if stub is None:
            return None
        return self.memo(("fund", code), lambda: build_fund(self, stub))

    def fund_latest(self, code: str) -> dict:
        """``require_fund(code).latest`` (a new dict) without building the fund's record or NAV series.

        Kept per code as a 6-tuple (about 140 bytes), apart from the bounded caches: a strategy's
        composition reads it for each of up to 25 funds, and building their series again would cost
        about 1 ms each (issue 19 goal 3). KeyError for codes outside this world.
        """
        stub = self.require_stub(code)
        if code in self._nav_anchors:  # an anchored fund's latest values come from its scaled series
            values = self.memo(
                ("latest", code), lambda: tuple(latest_values(self.fund_nav_series(code)[0], stub).values())
            )
        else:
            values = self.memo(("latest", code), lambda: tuple(nav_latest(self, stub).values()))
        return dict(zip(LATEST_KEYS, values, strict=True))

    def require_fund(self, code: str) -> Fund:
        """The full record of a fund of this world (a code it handed out); KeyError naming any other code."""
        fund = self.fund(code)
        if fund is None:
            raise KeyError(f"fund {code!r} not in this world")
        return fund

    def nav_history(self, code: str, start: date | None = None, end: date | None = None) -> list[dict] | None:
        """Daily rows {date, nav, acc_nav, daily_return} in ``[start, end]`` ascending (None: unknown fund)."""
        if self.fund_stub(code) is None:
            return None
        series, _, _ = self.fund_nav_series(code)
        if not series.dates:
            return []
        return [
            {
                "date": series.dates[i],
                "nav": series.nav[i],
                "acc_nav": series.acc_nav[i],
                "daily_return": series.rounded_return(i),
            }
            for i in series.positions(start, end)
        ]

    def recent_returns(self, code: str, n: int) -> list[tuple[str, float]]:
        """(date, daily return) for the last ``n`` trading days up to as_of after the setup day, from the
        yearly return chunks only (no full series)."""
        stub = self.fund_stub(code)
        if stub is None:
            raise KeyError(f"fund {code!r} not in this world")
        end_g = cal.index_on_or_before(self.as_of)
        lo_g = max(end_g - n + 1, cal.index_on_or_after(stub.setup_date) + 1)
        strings = cal.all_trading_day_strings()
        out: list[tuple[str, float]] = []
        g = lo_g
        while g <= end_g:  # a year's chunk at a time
            year = int(strings[g][:4])
            lo, hi = year_bounds(year)
            stop = min(hi, end_g + 1)
            chunk = self.fund_returns_year(stub, year)
            out.extend(zip(strings[g:stop], chunk[g - lo : stop - lo], strict=True))
            g = stop
        return out

    def manager(self, company_idx: int, k: int) -> dict:
        """Fund manager ``k`` of company ``company_idx``."""
        return self.memo(("manager", company_idx, k), lambda: build_manager(self.seed, company_idx, k))

    def quick_return(self, code: str, months: int) -> float | None:
        """Trailing return over ``months`` ending at as_of from the yearly return chunks only (no full series)."""
        return self.memo(("quick", code, months), lambda: self._quick_return(code, months))

    def _quick_return(self, code: str, months: int) -> float | None:
        stub = self.fund_stub(code)
        days = cal.all_trading_days()
        end_g = cal.index_on_or_before(self.as_of)
        start_day = shift_months(days[end_g], -months)
        if stub is None or stub.setup_date > start_day:
            return None
        base_g = cal.index_on_or_before(start_day)
        x = 1.0
        for year in range(days[base_g + 1].year, days[end_g].year + 1):
            lo, hi = year_bounds(year)
            chunk = self.fund_returns_year(stub, year)
            # x *= 1.0 + r for each day, in order
            x = reduce(mul, map(_ONE.__add__, chunk[max(base_g + 1, lo) - lo : min(end_g + 1, hi) - lo]), x)
        return round(x - 1.0, 6)

    def fund_types(self) -> tuple[str, ...]:
        """The fund types (股票型, 混合型, ...), in the vocabulary's order."""
        return tuple(v.FUND_TYPES)

    def warm_shared(self) -> None:
        """Build what many calls share, once: stock, bond and index data (the queries' indexes:
        :func:`server.world.queries.warm`)."""
        self.stocks()
        self.stock("")
        self.bonds()
        for code in self.index_codes():
            self.valuation(code)

    # ----------------------------------------------------------------- market
    def stocks(self) -> list[dict]:
        """The stock universe (sorted by code)."""
        return self.memo(("stocks",), lambda: market.build_stocks(self.seed))

    def stock(self, code: str) -> dict | None:
        """One stock by 6-digit code, or None."""
        idx = self.memo(("stock_idx",), lambda: {s["code"]: s for s in self.stocks()})
        return idx.get(code)

    def bonds(self) -> list[dict]:
        """The bond universe (sorted by code)."""
        return self.memo(("bonds",), lambda: market.build_bonds(self.seed, self.as_of))

    def index_codes(self) -> list[str]:
        """Codes of the indices the world follows."""
        return [s[0] for s in v.INDICES]

    def index_series(self, code: str) -> NavSeries:
        """Daily index levels (``nav``) from 2005 to as_of; KeyError for unknown codes."""
        if code not in self.index_codes():
            raise KeyError(f"index {code!r} unknown; known: {self.index_codes()}")
        return self.memo(("index", code), lambda: market.build_index_series(self, code))

    def index(self, code: str) -> dict | None:
        """Latest level and daily change of an index, or None."""
        if code not in self.index_codes():
            return None
        s = self.index_series(code)
        name = next(x[1] for x in v.INDICES if x[0] == code)
        return {
            "code": code,
            "name": name,
            "date": s.dates[-1],
            "level": s.nav[-1],
            "daily_return": s.rounded_return(len(s.adj) - 1),
        }

    def valuation(self, code: str) -> dict | None:
        """PE/PB, 5-year percentiles and temperature of an index at as_of, or None."""
        if code not in self.index_codes():
            return None
        return self.memo(
            ("valuation", code), lambda: market.valuation(self.index_series(code), code, self.seed)
        )

    def macro_names(self) -> list[str]:
        """Names of the macro series."""
        return list(market.MACRO_SPECS)

    def macro(self, name: str) -> list[dict]:
        """A macro series [{period, value}] ascending; KeyError for unknown names."""
        return self.memo(("macro", name), lambda: market.build_macro(self.seed, name, self.as_of))

    # ------------------------------------------------------------- strategies
    def strategy_codes(self) -> list[str]:
        """All strategy codes (ZH + 6 digits plus extras), ascending."""
        return self.memo(
            ("strategy_codes",), lambda: strategies.build_strategy_codes(self.seed, self._extra_strategies)
        )

    def strategy(self, code: str) -> strategies.Strategy | None:
        """A strategy, or None when ``code`` is not one of this world's."""
        known = self.memo(("strategy_set",), lambda: frozenset(self.strategy_codes()))
        if code not in known:
            return None
        return self.memo(
            ("strategy", code),
            lambda: strategies.build_strategy(self, code, self._strategy_names.get(code)),
        )

    def require_strategy(self, code: str) -> strategies.Strategy:
        """A strategy of this world (a code it handed out); KeyError naming any other code."""
        st = self.strategy(code)
        if st is None:
            raise KeyError(f"strategy {code!r} not in this world")
        return st

    def strategy_nav(self, code: str) -> tuple[NavSeries, dict] | None:
        """(NAV series, performance) of a strategy, or None."""
        st = self.strategy(code)
        if st is None:
            return None

        def build() -> tuple[NavSeries, dict]:
            series, perf, marks = strategies.build_strategy_nav(self, st)
            self.memo(("strategy_marks", code), lambda: marks)  # ~10 floats, kept
            return series, perf

        return self.memo(("strategy_nav", code), build)

    def strategy_nav_days(
        self, code: str, start: date | None = None, end: date | None = None
    ) -> list[tuple[str, float, float | None]]:
        """(date, NAV, daily return rounded to 6) of a strategy's days in ``[start, end]`` (open ends: its
        setup, as_of), exactly as its NAV series has them; KeyError for unknown codes.

        Once the strategy's NAV has been built (it keeps the running value at each year's end), a span
        after its first year continues from the last year end before it: the funds' returns of those
        years only, instead of the whole history when the series is no longer cached.
        """
        st = self.require_strategy(code)
        s, e = strategies.strategy_span(self, st)
        lo = s if start is None else max(s, cal.index_on_or_after(start))
        hi = e if end is None else min(e, cal.index_on_or_before(end))
        if lo > hi:
            return []
        strings = cal.all_trading_day_strings()
        marks = self._cache.get(("strategy_marks", code), ())
        before = [(g, x) for g, x in zip(strategies.year_end_indices(s, e), marks, strict=False) if g < lo]
        if not before or ("strategy_nav", code) in self._bounded["strategy_nav"]:
            found = self.strategy_nav(code)
            assert found is not None  # st is one of this world's strategies
            series = found[0]
            return [
                (series.dates[i], series.nav[i], series.rounded_return(i)) for i in range(lo - s, hi - s + 1)
            ]
        m, x = before[-1]
        xs = strategies.running_values(strategies.strategy_returns(self, st, m + 1, hi), x)
        adj = [round(x, 6), *map(round, xs, repeat(6))]  # adj[k] is day m + k
        return [
            (strings[g], round(adj[g - m], 4), round(adj[g - m] / adj[g - m - 1] - 1.0, 6))
            for g in range(lo, hi + 1)
        ]

    # ------------------------------------------------------------------ users
    def user(self, user_id: str) -> users.User:
        """The user named by any well-formed 14-hex id (ValueError otherwise)."""
        users.check_user_id(user_id)
        return self.memo(("user", user_id), lambda: users.build_user(self, user_id))

    def user_ids(self, n: int = 100) -> list[str]:
        """A stable list of user ids to sample from."""
        return users.known_user_ids(self.seed, n)

    def user_latest_profits(
        self, user_id: str, account_ids: list[str] | None = None, fund_codes: list[str] | None = None
    ) -> list[dict]:
        """Latest daily profit per fund for a user."""
        return users.latest_profits(self.user(user_id), account_ids, fund_codes)

    def user_profit_calendar(self, user_id: str) -> list[dict]:
        """Daily total profit over the recent trading days."""
        return users.profit_calendar(self.user(user_id))

    def user_asset_brief(self, user_id: str) -> dict:
        """Totals of a user's assets and profits."""
        return users.asset_brief(self.user(user_id))

    def user_holding_distribution(self, user_id: str) -> dict:
        """A user's holdings by asset class."""
        return users.holding_distribution(self, self.user(user_id))

    # ---------------------------------------------------------------- content
    def news_for_day(self, d: date) -> list[dict]:
        """News published on one day."""
        return self.memo(("news", d), lambda: content.news_for_day(self, d))

    def viewpoints_for_day(self, d: date) -> list[dict]:
        """Manager viewpoints published on one day."""
        return self.memo(("viewpoints", d), lambda: content.viewpoints_for_day(self, d))

    def fund_announcements(self, code: str) -> list[dict]:
        """A fund's announcements, newest first (empty for unknown funds)."""
        return self.memo(("announcements", code), lambda: content.fund_announcements(self, code))

    def announcement_content(self, ann_id: str) -> dict | None:
        """One announcement with its text, or None."""
        return content.announcement_content(self, ann_id)

    # --------------------------------------------------------------- planning
    def asset_allocation_plan(
        self,
        expected_return: float | None = None,
        expected_drawdown: float | None = None,
        horizon: str | None = None,
    ) -> dict:
        """An asset-allocation plan (id AAP + 6 digits) for the request."""
        return planning.build_plan(expected_return, expected_drawdown, horizon)

    def composite_model(self, plan_id: str) -> dict | None:
        """Funds per asset class for a plan id, or None for ids this world never issues."""
        return self.memo(("composite", plan_id), lambda: planning.build_composite_model(self, plan_id))
