"""Market data: stocks, bonds, indices (levels on the trading calendar), macro series, valuations."""

from __future__ import annotations

from array import array
from datetime import date
from typing import TYPE_CHECKING, Any

from finmcp.recordings.plumbing.seeding import rng_for

from . import trading_calendar as cal
from . import vocab as v
from .navs import NavSeries, noisy_returns, year_bounds
from .rng import normal, pick

if TYPE_CHECKING:
    from .view import WorldView

N_STOCKS = 800
N_BONDS = 300
INDEX_HISTORY_START = date(2005, 1, 4)
_STOCK_PREFIXES = (
    ("600", "SH"),
    ("601", "SH"),
    ("603", "SH"),
    ("688", "SH"),
    ("000", "SZ"),
    ("002", "SZ"),
    ("300", "SZ"),
)


def build_stocks(seed: int) -> list[dict]:
    """The A-share universe: code, name, exchange, industry, price, valuation, market value."""
    rng = rng_for(seed, "stocks")
    seen_codes: set[str] = set()
    seen_names: set[str] = set()
    out: list[dict[str, Any]] = []
    while len(out) < N_STOCKS:
        prefix, exch = pick(rng, _STOCK_PREFIXES)
        code = f"{prefix}{rng.randrange(1000):03d}"
        industry = pick(rng, v.INDUSTRIES)
        name = pick(rng, v.STOCK_PREFIXES) + pick(rng, v.STOCK_MIDDLES) + v.INDUSTRY_SUFFIX[industry]
        if code in seen_codes or name in seen_names:
            continue
        seen_codes.add(code)
        seen_names.add(name)
        price = round(3 + rng.random() ** 2 * 200, 2)
        out.append(
            {
                "code": code,
                "name": name,
                "exchange": exch,
                "industry": industry,
                "price": price,
                "pe_ttm": round(6 + rng.random() * 60, 2),
                "pb": round(0.5 + rng.random() * 8, 2),
                "market_value_yi": round(20 + rng.random() ** 3 * 8000, 2),
                "daily_change": round((rng.random() - 0.5) * 0.06, 4),
            }
        )
    return sorted(out, key=lambda s: s["code"])


def build_bonds(seed: int, as_of: date) -> list[dict]:
    """The bond universe: code, name, type, issuer, rating, coupon, maturity."""
    rng = rng_for(seed, "bonds")
    kinds = (
        ("国债", "AAA"),
        ("政策性金融债", "AAA"),
        ("信用债", None),
        ("同业存单", "AAA"),
        ("可转债", None),
        ("地方政府债", "AAA"),
    )
    issuers = (
        "国开",
        "农发",
        "进出口",
        "中石化",
        "国家电网",
        "招商银行",
        "工商银行",
        "中铁",
        "华能",
        "万科",
        "宁德",
        "比亚迪",
    )
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    while len(out) < N_BONDS:
        kind, rating = pick(rng, kinds)
        yy = 18 + rng.randrange(8)
        seq = 1 + rng.randrange(40)
        if kind == "国债":
            name, code = f"{yy}国债{seq:02d}", f"019{rng.randrange(1000):03d}"
        elif kind == "政策性金融债":
            name, code = f"{yy}{pick(rng, issuers[:3])}{seq:02d}", f"{yy}02{rng.randrange(10000):04d}.IB"
        elif kind == "同业存单":
            name, code = f"{yy}{pick(rng, issuers[5:7])}CD{seq:03d}", f"1{yy}09{rng.randrange(10000):04d}.IB"
        elif kind == "可转债":
            name, code = f"{pick(rng, issuers[7:])}转债", f"11{rng.randrange(10000):04d}"
        elif kind == "地方政府债":
            name, code = (
                f"{yy}{pick(rng, ('广东', '江苏', '浙江', '山东', '四川'))}债{seq:02d}",
                f"{yy}7{rng.randrange(10000):04d}.IB",
            )
        else:
            name, code = f"{yy}{pick(rng, issuers[3:])}MTN{seq:03d}", f"1{yy}8{rng.randrange(100000):05d}.IB"
        if code in seen:
            continue
        seen.add(code)
        coupon = round(1.5 + rng.random() * 3, 2)
        maturity = date(2000 + yy + 1 + rng.randrange(10), 1 + rng.randrange(12), 1 + rng.randrange(28))
        out.append(
            {
                "code": code,
                "name": name,
                "bond_type": kind,
                "rating": rating or pick(rng, ("AAA", "AA+", "AA")),
                "coupon": coupon,
                "maturity": maturity.isoformat(),
                "remaining_years": round(max(0.0, (maturity - as_of).days / 365), 2),
            }
        )
    return sorted(out, key=lambda b: b["code"])


def build_index_series(world: WorldView, code: str) -> NavSeries:
    """Daily closing levels from 2005 to ``as_of``, anchored so the last level is near today's level."""
    spec = next(s for s in v.INDICES if s[0] == code)
    _, _, level, factor, beta = spec
    s = cal.index_on_or_after(INDEX_HISTORY_START)
    e = cal.index_on_or_before(world.as_of)
    rets: list[float] = []
    for year in range(INDEX_HISTORY_START.year, world.as_of.year + 1):
        lo, hi = year_bounds(year)
        f = world.factor_year(factor, year)
        idio = noisy_returns(rng_for(world.seed, "index", code, year), hi - lo, 0.0, 0.003)
        chunk = [beta * a + b for a, b in zip(f, idio, strict=True)]
        rets.extend(chunk[max(s, lo) - lo : min(e + 1, hi) - lo])
    rets[0] = 0.0
    levels = []
    x = 1.0
    for r in rets:
        x *= 1.0 + r
        levels.append(x)
    anchor = level * (0.9 + 0.2 * rng_for(world.seed, "index_level", code).random()) / levels[-1]
    vals = array("d", [round(x * anchor, 2) for x in levels])  # doubles, a quarter of a tuple's memory
    adj = array("d", [round(x * anchor, 6) for x in levels])
    return NavSeries(s, cal.all_trading_day_strings()[s : e + 1], vals, vals, adj)


def valuation(series: NavSeries, code: str, seed: int) -> dict:
    """PE/PB and their 5-year percentiles plus a 0-100 'temperature' for an index at its last day."""
    window = series.adj[-1250:]
    last = window[-1]
    pct = sum(1 for x in window if x < last) / len(window)
    rng = rng_for(seed, "valuation", code)
    mean = sum(window) / len(window)
    pe = round((8 + rng.random() * 25) * last / mean, 2)
    pb = round((0.9 + rng.random() * 3) * last / mean, 2)
    pb_pct = min(1.0, max(0.0, pct + (rng.random() - 0.5) * 0.1))
    return {
        "index_code": code,
        "date": series.dates[-1],
        "pe": pe,
        "pb": pb,
        "pe_percentile": round(pct, 4),
        "pb_percentile": round(pb_pct, 4),
        "temperature": round((pct + pb_pct) / 2 * 100, 1),
    }


# name -> (frequency, mean, reversion, noise, decimals, unit)
MACRO_SPECS = {
    "CPI同比": ("M", 1.2, 0.25, 0.35, 1, "%"),
    "PPI同比": ("M", -0.5, 0.12, 0.8, 1, "%"),
    "制造业PMI": ("M", 50.0, 0.35, 0.6, 1, ""),
    "M2同比": ("M", 9.0, 0.15, 0.4, 1, "%"),
    "GDP同比": ("Q", 5.2, 0.4, 0.5, 1, "%"),
    "LPR1年": ("M", 0.0, 0.0, 0.0, 2, "%"),
    "LPR5年": ("M", 0.0, 0.0, 0.0, 2, "%"),
    "10年期国债收益率": ("M", 0.0, 0.0, 0.0, 4, "%"),
}


def build_macro(seed: int, name: str, as_of: date) -> list[dict]:
    """A monthly or quarterly macro series from 2015 to the last period published before ``as_of``."""
    if name not in MACRO_SPECS:
        raise KeyError(f"macro series {name!r} unknown; known: {sorted(MACRO_SPECS)}")
    freq, mean, rev, noise, dec, _ = MACRO_SPECS[name]
    rng = rng_for(seed, "macro", name)
    periods = []
    y, m = 2015, 1
    step = 3 if freq == "Q" else 1
    last_y, last_m = (as_of.year, as_of.month - 1) if as_of.month > 1 else (as_of.year - 1, 12)
    if freq == "Q":  # a quarter is published after it ends: its last month must precede as_of's quarter
        q_start = (as_of.month - 1) // 3 * 3 + 1
        last_y, last_m = (as_of.year, q_start - 3) if q_start > 3 else (as_of.year - 1, 10)
    while (y, m) <= (last_y, last_m):
        periods.append((y, m))
        m += step
        if m > 12:
            y, m = y + 1, m - 12
    out = []
    x = mean
    n = len(periods)
    for i, (yy, mm) in enumerate(periods):
        if name.startswith("LPR"):  # stepwise easing from 2015 levels to 2025 levels
            hi, lo = (4.35, 3.0) if name == "LPR1年" else (4.9, 3.5)
            x = hi - (hi - lo) * int((i / max(1, n - 1)) * 12) / 12
        elif name.startswith("10年期"):
            x = 3.6 - 1.8 * i / max(1, n - 1) + 0.15 * normal(rng)
        else:
            x = x + rev * (mean - x) + noise * normal(rng)
        label = f"{yy}Q{(mm - 1) // 3 + 1}" if freq == "Q" else f"{yy}-{mm:02d}"
        out.append({"period": label, "value": round(x, dec)})
    return out
