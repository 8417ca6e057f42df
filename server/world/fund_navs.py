"""A fund's net asset values: its daily returns, dividends and splits, the NAV series and the latest values.

Each fund's returns are its factor mix plus its own noise, drawn per calendar year from
``(seed, code, year)``; dividends and splits are planned from the seed; the series is built once
per fund (and cached by the world), and ``nav_latest`` answers the last values without it.
"""

from __future__ import annotations

from array import array
from datetime import date
from functools import cache, reduce
from itertools import accumulate, islice
from operator import mul
from typing import TYPE_CHECKING

from finmcp.recordings.plumbing.seeding import rng_for

from . import trading_calendar as cal
from . import vocab as v
from .navs import SQRT6, NavSeries, Rounded, year_bounds

if TYPE_CHECKING:
    from .funds import FundStub
    from .view import WorldView

_ONE = 1.0


def product_params(seed: int, stub: FundStub) -> tuple[float, float, float, str]:
    """(annual drift, factor beta, idiosyncratic daily vol, factor name) of a fund product."""
    if stub.fund_type == "货币型":
        return 0.0, 0.0, 0.0, ""
    vol, (dlo, dhi), factor, (blo, bhi) = v.NAV_MODEL[stub.fund_type]
    if stub.fund_type == "QDII型" and ("债" in stub.theme):
        vol, factor, blo, bhi = 0.0015, "bond_cn", 0.8, 1.5
    if stub.fund_type == "指数型" and stub.theme == "黄金":
        factor = "gold"
    rng = rng_for(seed, "fund_params", stub.product_key)
    return (
        dlo + (dhi - dlo) * rng.random(),
        blo + (bhi - blo) * rng.random(),
        vol * (0.7 + 0.6 * rng.random()),
        factor,
    )


def _class_fee_drag(stub: FundStub) -> float:
    return 0.004 / 250 if stub.share_class == "C" else 0.0


@cache
def _day_gaps(year: int) -> tuple[int, ...]:
    """Calendar days since the previous trading day, for each trading day of ``year`` (1 for the first)."""
    days = cal.all_trading_days()
    lo, hi = year_bounds(year)
    return tuple((days[i] - days[i - 1]).days if i > 0 else 1 for i in range(lo, hi))


def fund_returns_year(world: WorldView, stub: FundStub, year: int) -> list[float]:
    """Daily returns of a fund for every trading day of ``year`` (before any setup-date cut)."""
    lo, hi = year_bounds(year)
    rng = rng_for(world.seed, "fund_nav", stub.product_key, year)
    if stub.fund_type == "货币型":
        level = 0.012 + 0.012 * rng_for(world.seed, "money_level", stub.product_key).random()
        base = level * (0.7 + 0.3 * (year - 2010) / 15 if year < 2025 else 1.0)  # the year's yield
        r = rng.random
        return [(base + 0.0015 * (r() - 0.5)) / 365 * gap for gap in _day_gaps(year)]
    drift, beta, vol, factor = world.memo(
        ("fund_params", stub.code), lambda: product_params(world.seed, stub)
    )
    f = world.factor_year(factor, year)
    if len(f) != hi - lo:
        raise ValueError(f"factor {factor!r} {year}: {len(f)} days, the calendar has {hi - lo}")
    # idiosyncratic noise mu + vol * z, z triangular (sum of 2 uniforms, unit variance), plus beta * factor
    r = rng.random
    mu = drift / 250 - _class_fee_drag(stub)
    s = vol * SQRT6
    return [mu + (r() + r() - 1.0) * s + beta * b for b in f]


def dividend_plan(seed: int, stub: FundStub) -> list[tuple[date, float]]:
    """Ex-dividend dates and cash-per-unit rates (fraction of NAV) the fund's history contains."""
    if stub.fund_type in ("货币型", "指数型", "QDII型"):
        return []
    rng = rng_for(seed, "dividends", stub.code)
    per_year = {"债券型": 1.2, "股票型": 0.2, "混合型": 0.3, "FOF": 0.1}[stub.fund_type]
    plan = []
    for year in range(stub.setup_date.year + 1, 2026):
        k = int(per_year) + (1 if rng.random() < per_year % 1 else 0)
        for _ in range(k):
            d = date(year, 1 + rng.randrange(12), 1 + rng.randrange(28))
            plan.append((d, 0.005 + rng.random() * 0.03))
    return sorted(plan)


def split_plan(seed: int, stub: FundStub) -> list[tuple[date, float]]:
    """Share splits (date, ratio new units per old unit); rare."""
    rng = rng_for(seed, "splits", stub.code)
    if stub.fund_type == "货币型" or rng.random() > 0.04 or stub.setup_date.year >= 2023:
        return []
    return [
        (
            date(
                stub.setup_date.year + 1 + rng.randrange(2024 - stub.setup_date.year),
                3 + rng.randrange(8),
                15,
            ),
            round(1.2 + rng.random() * 1.3, 4),
        )
    ]


def _factors(world: WorldView, stub: FundStub, s: int, e: int) -> list[float]:
    """``1.0 + r`` for each trading day ``s..e`` (global indices); the setup day's return is 0."""
    days = cal.all_trading_days()
    rets: list[float] = []
    for year in range(days[s].year, days[e].year + 1):
        lo, hi = year_bounds(year)
        chunk = world.fund_returns_year(stub, year)
        a, b = max(s, lo) - lo, min(e + 1, hi) - lo
        rets.extend(chunk[a:b])
    rets[0] = 0.0
    return list(map(_ONE.__add__, rets))  # 1.0 + r


def _events(world: WorldView, stub: FundStub, s: int, e: int) -> tuple[dict[int, float], dict[int, float]]:
    """(dividend rate, split ratio) by series position of the events after the setup day ``s`` up to ``e``."""
    divs = {
        cal.index_on_or_after(d) - s: r
        for d, r in dividend_plan(world.seed, stub)
        if s < cal.index_on_or_after(d) <= e
    }
    splits = {
        cal.index_on_or_after(d) - s: r
        for d, r in split_plan(world.seed, stub)
        if s < cal.index_on_or_after(d) <= e
    }
    return divs, splits


def build_nav_series(world: WorldView, stub: FundStub) -> tuple[NavSeries, list[dict], list[dict]]:
    """The fund's full daily series from setup to ``as_of`` plus its dividend and split records.

    The unit value runs as a cumulative product of ``1 + r`` (``itertools.accumulate``, one segment per
    split or ex-dividend day, where the event changes it); the unit and accumulated NAV are those values
    rounded to 4 decimals when read (:class:`Rounded`): the same numbers, in the same order of operations,
    as the day-by-day loop this replaced.
    """
    days = cal.all_trading_days()
    s = cal.index_on_or_after(stub.setup_date)
    e = cal.index_on_or_before(world.as_of)
    if e < s:
        return NavSeries(s, (), (), (), ()), [], []
    factors = _factors(world, stub, s, e)
    n = len(factors)
    dates = cal.all_trading_day_strings()[s : e + 1]
    adj = array("d", accumulate(factors, mul))
    if stub.fund_type == "货币型":
        flat = array("d", [1.0]) * n
        return NavSeries(s, dates, flat, flat, adj), [], []
    divs, splits = _events(world, stub, s, e)
    if not divs and not splits:
        nav = Rounded(adj, 4)
        return NavSeries(s, dates, nav, nav, adj), [], []
    div_rows: list[dict] = []
    split_rows: list[dict] = []
    unit = array("d")  # unit value after each day's events
    acc = array("d")  # unit value plus the dividends paid per unit so far
    unit_v, cum, pos = 1.0, 0.0, 0
    for i in sorted(divs.keys() | splits.keys()):
        segment = list(accumulate(factors[pos : i + 1], mul, initial=unit_v))
        del segment[0]
        before = cum
        unit_v = segment[-1]
        if i in splits:
            ratio_ = splits[i]
            unit_v /= ratio_
            cum /= ratio_
            split_rows.append({"date": days[s + i].isoformat(), "ratio": ratio_, "type": "份额拆分"})
        if i in divs and unit_v > 1.02:
            cash = round(unit_v * divs[i], 4)
            unit_v -= cash
            cum += cash
            div_rows.append(
                {
                    "ex_date": days[s + i].isoformat(),
                    "record_date": days[s + i - 1].isoformat(),
                    "cash_per_unit": cash,
                    "pay_date": days[min(s + i + 2, len(days) - 1)].isoformat(),
                }
            )
        segment[-1] = unit_v
        unit.extend(segment)
        del segment[-1]
        acc.extend(segment if before == 0.0 else map(before.__add__, segment))  # x + 0.0 is x
        acc.append(unit_v + cum)
        pos = i + 1
    segment = list(accumulate(factors[pos:], mul, initial=unit_v))
    del segment[0]
    unit.extend(segment)
    acc.extend(segment if cum == 0.0 else map(cum.__add__, segment))
    return NavSeries(s, dates, Rounded(unit, 4), Rounded(acc, 4), adj), div_rows, split_rows


def anchor_series(
    built: tuple[NavSeries, list[dict], list[dict]], anchor: tuple[str, float] | None
) -> tuple[NavSeries, list[dict], list[dict]]:
    """A fund's series scaled so that its unit NAV on the anchor day is the anchor's (an adopted real
    fund's recorded NAV, ``(ISO day, NAV)``).

    One factor scales every unit and accumulated NAV and each dividend's cash, so every return (``adj``),
    window figure and ranking is unchanged. No change when there is no anchor, the day is not one of
    the series' trading days, the fund is a money fund (its unit NAV is 1.0) or the series already
    prints the anchor's NAV on that day.
    """
    series, dividends, splits = built
    if anchor is None or not isinstance(series.nav, Rounded) or not isinstance(series.acc_nav, Rounded):
        return built
    day, target = anchor
    i = series.index_of(date.fromisoformat(day))
    if i < 0 or series.dates[i] != day or series.nav[i] == round(target, 4):
        return built
    current = series.nav.unrounded(i)
    if current <= 0.0 or target <= 0.0:
        return built
    factor = target / current
    nav = series.nav.scaled(factor)
    acc = nav if series.acc_nav is series.nav else series.acc_nav.scaled(factor)
    dividends = [{**d, "cash_per_unit": round(d["cash_per_unit"] * factor, 4)} for d in dividends]
    return NavSeries(series.start_index, series.dates, nav, acc, series.adj), dividends, splits


LATEST_KEYS = ("nav_date", "nav", "acc_nav", "daily_return", "yield_7d", "unit_yield")
"""The keys of ``Fund.latest``, in order."""
_NO_NAV = dict.fromkeys(LATEST_KEYS)


def nav_latest(world: WorldView, stub: FundStub) -> dict:
    """``Fund.latest`` of a non-money fund without building its series, dividend rows or record.

    The same floating-point operations as :func:`build_nav_series`, in the same order (one running
    product of ``1 + r`` per segment between events, the event applied at its day), keeping only
    the last values: the answer is bit-identical (``tests/server/world/test_nav_latest.py``).
    Money funds' yields read the last week of the series: they take the series path.
    """
    if stub.fund_type == "货币型":
        return latest_values(world.fund_nav_series(stub.code)[0], stub)
    s = cal.index_on_or_after(stub.setup_date)
    e = cal.index_on_or_before(world.as_of)
    if e < s:
        return dict(_NO_NAV)
    factors = _factors(world, stub, s, e)
    n = len(factors)
    # accumulate's values n-2 and n-1 (a one-day series has no previous value)
    adj_prev: float | None = reduce(mul, islice(factors, n - 1)) if n > 1 else None
    adj_last = factors[0] if adj_prev is None else adj_prev * factors[-1]
    divs, splits = _events(world, stub, s, e)
    if not divs and not splits:
        unit_last = acc_last = adj_last
    else:
        unit_v, cum, pos = 1.0, 0.0, 0
        for i in sorted(divs.keys() | splits.keys()):
            unit_v = reduce(mul, islice(factors, pos, i + 1), unit_v)
            if i in splits:
                ratio_ = splits[i]
                unit_v /= ratio_
                cum /= ratio_
            if i in divs and unit_v > 1.02:
                cash = round(unit_v * divs[i], 4)
                unit_v -= cash
                cum += cash
            pos = i + 1
        if pos < n:
            unit_last = reduce(mul, islice(factors, pos, n), unit_v)
            acc_last = unit_last if cum == 0.0 else cum + unit_last
        else:  # the last day's event: the day's value is the one after it
            unit_last, acc_last = unit_v, unit_v + cum
    return {
        "nav_date": cal.all_trading_day_strings()[e],
        "nav": round(unit_last, 4),
        "acc_nav": round(acc_last, 4),
        "daily_return": None if adj_prev is None else round(adj_last / adj_prev - 1.0, 6),
        "yield_7d": None,
        "unit_yield": None,
    }


def latest_values(series: NavSeries, stub: FundStub) -> dict:
    """``Fund.latest`` read off a fund's NAV series (money funds' yields included)."""
    if not series.dates:
        return {
            "nav_date": None,
            "nav": None,
            "acc_nav": None,
            "daily_return": None,
            "yield_7d": None,
            "unit_yield": None,
        }
    i = len(series.dates) - 1
    out = {
        "nav_date": series.dates[i],
        "nav": series.nav[i],
        "acc_nav": series.acc_nav[i],
        "daily_return": series.rounded_return(i),
        "yield_7d": None,
        "unit_yield": None,
    }
    if stub.fund_type == "货币型":
        out.update(money_yields(series, i))
    return out


def money_yields(series: NavSeries, i: int) -> dict:
    """万份收益 (yuan per 10,000 units) of day ``i`` and the 7-day annualised yield in percent."""
    unit = (series.adj[i] / series.adj[i - 1] - 1.0) * 10000 if i > 0 else 0.0
    end_day = date.fromisoformat(series.dates[i])
    j = i
    while j > 0 and (end_day - date.fromisoformat(series.dates[j - 1])).days < 7:
        j -= 1
    base = j - 1 if j > 0 else 0
    days = max(1, (end_day - date.fromisoformat(series.dates[base])).days)
    return {
        "unit_yield": round(unit, 4),
        "yield_7d": round((series.adj[i] / series.adj[base] - 1.0) / days * 365 * 100, 3),
    }
