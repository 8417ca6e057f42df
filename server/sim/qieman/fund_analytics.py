"""Builders for the Qieman fund-analysis and fund-screening tools.

Every figure is derived from the seeded world: asset mix, holdings and industries from
``World.fund``; returns, drawdowns, volatility and factor fits from the fund's daily returns; what the
world does not model (bond-type mix, credit ratings, turnover, regions) from a per-product profile
seeded by ``derive_seed`` and shaped by the fund's type and theme. All these tools have a designed
output shape (no real sample), so they follow the outputSchema in ``tool_specs``.

Rules shared by the family:

- **Unknown codes.** Single-fund tools (``fundCode``) refuse with a ToolInputError naming the code;
  list tools (``fundCodeList`` / ``fundCodes``) skip unknown codes, so a list of only unknown codes
  gives an empty ``funds`` (or result) list.
- **Windows.** ``timeRange`` / ``timeInterval`` / ``timePeriod`` name a trailing window ending at the
  world's ``as_of``. NAV-based figures use exactly that window of daily returns (``LatestReportDate``:
  since the latest quarterly report date; ``fromSetupDate``: since setup; ``sinceTakingOffice``: since
  the current manager started; windows longer than the fund's life start at setup). Report-based
  figures (weights, turnover) are the latest report's values when the window is omitted or
  ``LatestReportDate``, else the window average, modelled as the latest values moved by a seeded drift
  per (fund, window) that grows with the window length; a ``reportDate`` (yyyy.MM.dd) selects the
  quarterly report in effect on that day and is treated the same way.
- **Free-text filters** (``scope``, ``sumRatingType``) that name no region / rating bucket match
  nothing (empty lists), like a filter on data the server does not hold.
- **Screens** (``filter*``, ``getBondFundWithAlertRecord``) scan the world's funds of the right type
  from cheap per-fund profiles cached once per world; the asset mix used there reproduces
  ``World.fund``'s exactly (a test guards this). ``thresholdList`` values are fractions for weights and
  multiples for turnover; ``eq`` matches within half a percentage point (0.05 for turnover); results
  are sorted highest value first and cut to ``maxResultSize`` (default 20); ``total`` counts the funds
  returned. The dive-alert screen examines the 150 largest bond funds (bounded work per call).
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Sequence
from datetime import date, timedelta
from typing import Any

from recordings.plumbing.seeding import derive_seed
from server.sim.registry import BuildContext, ToolInputError, qieman_builder
from server.world import World
from server.world import trading_calendar as cal
from server.world import vocab as v
from server.world.asset_classes import asset_class_tree, leaf_for_fund
from server.world.dates import last_quarter_end, shift_months
from server.world.funds import Fund, FundStub, asset_mix
from server.world.navs import RISK_FREE, TRADING_DAYS_PER_YEAR, NavSeries, year_bounds
from server.world.rng import proportional_bp

FUND_URL = "https://qieman.com/funds/{code}"
WINDOW_MONTHS = {
    "LAST_3_MONTH": 3,
    "LAST_6_MONTH": 6,
    "LAST_9_MONTH": 9,
    "LAST_YEAR": 12,
    "LAST_2_YEAR": 24,
    "LAST_3_YEAR": 36,
    "LAST_5_YEAR": 60,
}
SPECIAL_WINDOWS = ("LatestReportDate", "fromSetupDate", "sinceTakingOffice")
LATEST = "LatestReportDate"
DEFAULT_MAX_RESULTS = 20
_MASK = (1 << 64) - 1

# Shenwan level-1 industry codes of the world's industries.
INDUSTRY_CODES = {
    "银行": "801780",
    "非银金融": "801790",
    "食品饮料": "801120",
    "医药生物": "801150",
    "电子": "801080",
    "计算机": "801750",
    "电力设备": "801730",
    "汽车": "801880",
    "机械设备": "801890",
    "有色金属": "801050",
    "化工": "801030",
    "家用电器": "801110",
    "通信": "801770",
    "传媒": "801760",
    "国防军工": "801740",
    "公用事业": "801160",
    "交通运输": "801170",
    "房地产": "801180",
    "建筑装饰": "801720",
    "煤炭": "801950",
}
BOND_TYPE_NAMES = {
    "national": "国债",
    "financial": "金融债",
    "corporate": "企业债",
    "acd": "同业存单",
    "localGovernment": "地方政府债",
    "centralBank": "央行票据",
    "shortTerm": "短期融资券",
    "mediumTerm": "中期票据",
    "other": "其他债券",
    "convertible": "可转债",
}
BOND_TYPE_GROUPS = {
    "interestRate": ("national", "financial", "localGovernment", "centralBank"),
    "credit": ("corporate", "shortTerm", "mediumTerm"),
}
RATING_BUCKETS = ("长期AAA", "长期AA+", "长期AA", "长期AA-及以下", "短期A-1", "未评级")
AREA_NAMES = {
    "CN": "中国内地",
    "HK": "中国香港",
    "US": "美国",
    "DE": "德国",
    "EU": "欧洲其他",
    "JP": "日本",
    "IN": "印度",
    "VN": "越南",
    "KR": "韩国",
    "SG": "新加坡",
    "OTHER": "其他",
}
SUITABLE_INVESTOR = {1: "保守型", 2: "稳健型", 3: "平衡型", 4: "成长型", 5: "进取型"}


# ---------------------------------------------------------------- small numeric helpers


def unit(h: int) -> float:
    """A uniform float in [0, 1) from a 64-bit integer (splitmix64 finaliser; integer arithmetic only)."""
    z = (h + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return ((z ^ (z >> 31)) >> 11) / 9007199254740992.0


def phi(x: float) -> float:
    """Standard normal CDF."""
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def clamp(x: float, lo: float, hi: float) -> float:
    """``x`` limited to ``[lo, hi]``."""
    return lo if x < lo else hi if x > hi else x


def r4(x: float) -> float:
    """Round a ratio to 4 decimals."""
    return round(x, 4)


def r6(x: float) -> float:
    """Round a return to 6 decimals."""
    return round(x, 6)


def fund_url(code: str) -> str:
    """The Qieman page of a fund."""
    return FUND_URL.format(code=code)


def max_drawdown(values: Sequence[float]) -> float:
    """Largest peak-to-trough fall of a level series, as a positive fraction."""
    peak, worst = values[0], 0.0
    for x in values:
        if x > peak:
            peak = x
        elif peak > 0 and 1.0 - x / peak > worst:
            worst = 1.0 - x / peak
    return worst


def annual_volatility(returns: Sequence[float]) -> float | None:
    """Annualised standard deviation of daily returns (None for fewer than two)."""
    if len(returns) < 2:
        return None
    mean = sum(returns) / len(returns)
    var = sum((r - mean) ** 2 for r in returns) / (len(returns) - 1)
    return math.sqrt(var * TRADING_DAYS_PER_YEAR)


def levels_from_returns(returns: Sequence[float]) -> list[float]:
    """Cumulative level series starting at 1.0 (one more element than ``returns``)."""
    out = [1.0]
    for r in returns:
        out.append(out[-1] * (1.0 + r))
    return out


def return_metrics(returns: Sequence[float]) -> dict[str, float | None]:
    """Total and annualised return, annualised volatility, max drawdown (positive) and Sharpe."""
    levels = levels_from_returns(returns)
    total = levels[-1] - 1.0
    years = len(returns) / TRADING_DAYS_PER_YEAR
    annual = (levels[-1] ** (1.0 / years) - 1.0) if years >= 1 else (total / years if years > 0 else 0.0)
    vol = annual_volatility(returns)
    sharpe = None if not vol or vol < 1e-9 else (annual - RISK_FREE) / vol
    return {
        "total": total,
        "annual": annual,
        "volatility": vol,
        "max_drawdown": max_drawdown(levels),
        "sharpe": sharpe,
    }


def solve_linear(a: list[list[float]], b: list[float]) -> list[float] | None:
    """Solve ``a x = b`` by Gaussian elimination with partial pivoting (None when singular)."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for col in range(n):
        piv = max(range(col, n), key=lambda r: abs(m[r][col]))
        if abs(m[piv][col]) < 1e-18:
            return None
        m[col], m[piv] = m[piv], m[col]
        for r in range(col + 1, n):
            f = m[r][col] / m[col][col]
            for c in range(col, n + 1):
                m[r][c] -= f * m[col][c]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (m[r][n] - sum(m[r][c] * x[c] for c in range(r + 1, n))) / m[r][r]
    return x


def factor_fit(y: Sequence[float], factors: list[Sequence[float]]) -> dict[str, float] | None:
    """OLS of ``y`` on an intercept and ``factors``: R², residual variance and its standard error."""
    n, k = len(y), len(factors) + 1
    if n <= k + 1:
        return None
    cols = [[1.0] * n, *[list(f) for f in factors]]
    xtx = [[sum(ci[t] * cj[t] for t in range(n)) for cj in cols] for ci in cols]
    xty = [sum(ci[t] * y[t] for t in range(n)) for ci in cols]
    beta = solve_linear(xtx, xty)
    mean = sum(y) / n
    sst = sum((v_ - mean) ** 2 for v_ in y)
    if beta is None or sst <= 0:
        return None
    sse = sum((y[t] - sum(beta[j] * cols[j][t] for j in range(k))) ** 2 for t in range(n))
    resid_var = sse / (n - k)
    return {
        "r_squared": 1.0 - sse / sst,
        "residual_variance": resid_var,
        "standard_error": math.sqrt(resid_var),
    }


# ---------------------------------------------------------------- world access


def fund_or_error(world: World, code: Any, tool: str, field: str = "fundCode") -> Fund:
    """The fund named by ``code`` or a ToolInputError naming the tool and field."""
    if not isinstance(code, str) or not code:
        raise ToolInputError(f"{tool}: {field} is required (a six-digit fund code)")
    fund = world.fund(code)
    if fund is None:
        raise ToolInputError(f"{tool}: {field} {code!r} is not a known fund")
    return fund


def code_list(args: dict, field: str, tool: str, limit: int | None = None) -> list[str]:
    """The de-duplicated code list argument, order kept; ToolInputError when missing, empty or too long."""
    codes = args.get(field)
    if not isinstance(codes, list) or not codes:
        raise ToolInputError(f"{tool}: {field} must be a non-empty list of fund codes")
    if limit is not None and len(codes) > limit:
        raise ToolInputError(f"{tool}: {field} holds {len(codes)} codes; at most {limit} per call")
    out: list[str] = []
    for i, c in enumerate(codes):
        if not isinstance(c, str):
            raise ToolInputError(f"{tool}: {field}[{i}] must be a string fund code")
        if c not in out:
            out.append(c)
    return out


def known_funds(world: World, codes: list[str]) -> list[Fund]:
    """Funds of ``codes`` that exist (unknown codes skipped)."""
    return [f for f in (world.fund(c) for c in codes) if f is not None]


def latest_report_date(world: World) -> date:
    """The latest published quarterly report date."""
    return last_quarter_end(world.as_of)


def latest_semiannual_date(world: World) -> date:
    """The latest half-year or annual report date."""
    d = latest_report_date(world)
    while d.month not in (6, 12):
        d = last_quarter_end(d)
    return d


def stock_ratio(fund: Fund) -> float:
    """Stocks as a fraction of net assets (from the fund's asset allocation)."""
    return next((a["ratio"] for a in fund.asset_allocation if a["name"] == "股票"), 0.0)


def bond_ratio(fund: Fund) -> float:
    """Bonds as a fraction of net assets."""
    return next((a["ratio"] for a in fund.asset_allocation if a["name"] == "债券"), 0.0)


def asset_ratios(world: World, stub: FundStub) -> tuple[float, float, float, float]:
    """(stock, bond, cash, other) ratios of net assets without building the fund record (cached)."""
    return memo(world, ("asset_ratios", stub.code), lambda: asset_mix(world.seed, stub))


# ---------------------------------------------------------------- windows


def window_key(
    args: dict, field: str, tool: str, default: str | None, allowed: Sequence[str] | None = None
) -> str:
    """The validated window name of ``args[field]`` (``default`` when absent)."""
    key = args.get(field)
    if key is None:
        key = default or LATEST
    choices = tuple(allowed) if allowed else (*WINDOW_MONTHS, *SPECIAL_WINDOWS)
    if key not in choices:
        raise ToolInputError(f"{tool}: {field} {key!r} unknown; expected one of {list(choices)}")
    return key


def report_date_arg(world: World, args: dict, tool: str) -> str | None:
    """The report in effect at ``reportDate`` (yyyy.MM.dd) as ISO, or None when absent.

    Any date is accepted: it selects the latest quarterly report on or before it (dates after the
    latest published report select that report).
    """
    raw = args.get("reportDate")
    if raw in (None, ""):
        return None
    try:
        y, m, d = (int(p) for p in str(raw).split("."))
        day = date(y, m, d)
    except ValueError:
        raise ToolInputError(f"{tool}: reportDate {raw!r} must be yyyy.MM.dd, e.g. 2024.03.31") from None
    if (m, d) not in ((3, 31), (6, 30), (9, 30), (12, 31)):
        day = last_quarter_end(day)
    latest = latest_report_date(world)
    if day.year < 2000:
        raise ToolInputError(f"{tool}: reportDate {raw!r} is before the first report of any fund")
    return min(day, latest).isoformat()


def drift(world: World, key: str, window: str, amplitude: float, *extra: object) -> float:
    """A seeded multiplicative drift in ``[-amplitude, amplitude]`` for report-based windows (0 for latest)."""
    if window == LATEST:
        return 0.0
    return (unit(derive_seed(world.seed, "window_drift", key, window, *extra)) * 2.0 - 1.0) * amplitude


def window_amplitude(window: str) -> float:
    """How far a window average may sit from the latest report (longer windows drift more)."""
    if window in WINDOW_MONTHS:
        return 0.05 + 0.25 * WINDOW_MONTHS[window] / 60
    return 0.0 if window == LATEST else 0.3


def nav_window(world: World, fund: Fund, window: str) -> tuple[NavSeries, int, int]:
    """(series, lo, hi): the fund's daily series and the positions bounding the window."""
    series, _, _ = world.fund_nav_series(fund.code)
    hi = len(series.dates) - 1
    if hi < 1:
        return series, 0, max(hi, 0)
    end_day = date.fromisoformat(series.dates[hi])
    if window in WINDOW_MONTHS:
        start = shift_months(end_day, -WINDOW_MONTHS[window])
    elif window == LATEST:
        start = latest_report_date(world)
    elif window == "sinceTakingOffice" and fund.managers:
        start = date.fromisoformat(min(m["start_date"] for m in fund.managers))
    else:
        start = date.fromisoformat(series.dates[0])
    lo = max(0, series.index_of(start))
    return series, lo, hi


def window_returns(series: NavSeries, lo: int, hi: int) -> list[float]:
    """Daily returns of ``series`` over positions ``(lo, hi]``."""
    adj = series.adj
    return [adj[i] / adj[i - 1] - 1.0 for i in range(lo + 1, hi + 1)]


def window_dates(series: NavSeries, lo: int, hi: int) -> tuple[str, str]:
    """ISO start and end dates of a window."""
    return series.dates[lo], series.dates[hi]


def index_return(world: World, code: str, start: str, end: str) -> float:
    """Return of a world index between two ISO dates."""
    s = world.index_series(code)
    i, j = s.index_of(date.fromisoformat(start)), s.index_of(date.fromisoformat(end))
    return s.adj[j] / s.adj[max(i, 0)] - 1.0


def factor_returns(world: World, factor: str, start: str, end: str) -> list[float]:
    """Daily returns of a shared factor over trading days ``(start, end]``."""
    g0 = cal.index_on_or_before(date.fromisoformat(start)) + 1
    g1 = cal.index_on_or_before(date.fromisoformat(end))
    out: list[float] = []
    days = cal.all_trading_days()
    for year in range(days[g0].year, days[g1].year + 1):
        lo, hi = year_bounds(year)
        chunk = world.factor_year(factor, year)
        out.extend(chunk[max(g0, lo) - lo : min(g1 + 1, hi) - lo])
    return out


# ---------------------------------------------------------------- per-world caches


_CACHES: weakref.WeakKeyDictionary[World, dict] = weakref.WeakKeyDictionary()


def world_cache(world: World) -> dict:
    """A dict of derived data kept as long as the world lives."""
    try:
        return _CACHES[world]
    except KeyError:
        _CACHES[world] = cache = {}
        return cache


def memo(world: World, key: tuple, build):
    """``build()`` once per (world, key)."""
    cache = world_cache(world)
    if key not in cache:
        cache[key] = build()
    return cache[key]


# ---------------------------------------------------------------- industry profile


def industry_weights(world: World, fund: Fund, window: str) -> list[tuple[str, float]]:
    """Industries with their share of the stock portfolio (sum 1), largest first; empty without stocks."""
    base = [(x["industry"], x["ratio"]) for x in fund.industry_allocation if x["ratio"] > 0]
    total = sum(w for _, w in base)
    if total <= 0:
        return []
    amp = window_amplitude(window)
    moved = [(name, w * (1.0 + drift(world, fund.code, window, amp, name))) for name, w in base]
    s = sum(w for _, w in moved)
    out = [(name, w / s) for name, w in moved]
    return sorted(out, key=lambda t: (-t[1], t[0]))


def window_stock_ratio(world: World, fund: Fund, window: str) -> float:
    """The stock share of net assets averaged over the window."""
    return clamp(
        stock_ratio(fund) * (1.0 + drift(world, fund.code, window, 0.5 * window_amplitude(window), "stock")),
        0.0,
        1.0,
    )


# ---------------------------------------------------------------- bond profile


def _bond_base_mix(stub: FundStub) -> dict[str, float]:
    theme, t = stub.theme, stub.fund_type
    if t == "货币型":
        return {"acd": 0.5, "shortTerm": 0.2, "financial": 0.15, "centralBank": 0.05, "national": 0.1}
    if t == "QDII型":
        return {"corporate": 0.6, "national": 0.3, "financial": 0.1}
    if t != "债券型":
        return {
            "national": 0.35,
            "financial": 0.3,
            "acd": 0.1,
            "corporate": 0.1,
            "convertible": 0.1,
            "localGovernment": 0.05,
        }
    if "可转债" in theme:
        return {"convertible": 0.75, "corporate": 0.1, "national": 0.1, "financial": 0.05}
    if "政策性" in theme:
        return {"financial": 0.7, "national": 0.2, "localGovernment": 0.1}
    if "短债" in theme:
        return {
            "shortTerm": 0.25,
            "mediumTerm": 0.25,
            "acd": 0.15,
            "financial": 0.15,
            "corporate": 0.1,
            "national": 0.05,
            "localGovernment": 0.05,
        }
    if "信用" in theme:
        return {
            "corporate": 0.3,
            "mediumTerm": 0.3,
            "shortTerm": 0.15,
            "financial": 0.1,
            "national": 0.05,
            "acd": 0.05,
            "other": 0.05,
        }
    if any(k in theme for k in ("增强", "双债", "回报", "永利")):
        return {
            "convertible": 0.15,
            "corporate": 0.25,
            "mediumTerm": 0.2,
            "financial": 0.15,
            "national": 0.15,
            "localGovernment": 0.1,
        }
    return {
        "national": 0.2,
        "financial": 0.3,
        "mediumTerm": 0.2,
        "corporate": 0.15,
        "localGovernment": 0.1,
        "shortTerm": 0.05,
    }


def bond_type_mix(world: World, stub: FundStub, window: str) -> dict[str, float]:
    """Bond types as fractions of the bond assets (sum 1) for a window (cached per world)."""
    return memo(world, ("bond_mix", stub.product_key, window), lambda: _bond_type_mix(world, stub, window))


def _bond_type_mix(world: World, stub: FundStub, window: str) -> dict[str, float]:
    h = derive_seed(world.seed, "bond_mix", stub.product_key)
    base = _bond_base_mix(stub)
    raw = {k: w * (0.6 + 0.8 * unit(h + i)) for i, (k, w) in enumerate(sorted(base.items()))}
    if window != LATEST:
        amp = window_amplitude(window)
        hw = derive_seed(world.seed, "bond_mix_window", stub.product_key, window)
        raw = {k: w * (1.0 + (unit(hw + i) * 2 - 1) * amp) for i, (k, w) in enumerate(sorted(raw.items()))}
    s = sum(raw.values())
    return {k: w / s for k, w in sorted(raw.items(), key=lambda kv: (-kv[1], kv[0]))}


def bond_denominator_factor(world: World, stub: FundStub, window: str, asset_type: str) -> float:
    """Multiplier turning bond-asset fractions into fractions of net or total assets."""
    stock, bond, cash, other = asset_ratios(world, stub)
    if window != LATEST:
        bond = bond * (1.0 + drift(world, stub.code, window, 0.3 * window_amplitude(window), "bond"))
    if asset_type in ("bond_asset", "bondAsset"):
        return 1.0
    if asset_type in ("total_net_asset", "totalNetAsset"):
        return bond
    return bond / max(1.0, stock + bond + cash + other)


def rating_mix(world: World, stub: FundStub, window: str) -> dict[str, float]:
    """Rating buckets as fractions of the bond assets (sum 1)."""
    mix = bond_type_mix(world, stub, window)
    unrated = sum(mix.get(k, 0.0) for k in BOND_TYPE_GROUPS["interestRate"])
    short = mix.get("shortTerm", 0.0) + mix.get("acd", 0.0)
    long_credit = max(0.0, 1.0 - unrated - short)
    if "信用" in stub.theme:
        tiers = (0.45, 0.3, 0.2, 0.05)
    elif "政策性" in stub.theme or stub.fund_type == "货币型":
        tiers = (0.9, 0.08, 0.02, 0.0)
    else:
        tiers = (0.7, 0.2, 0.08, 0.02)
    h = derive_seed(world.seed, "rating_mix", stub.product_key, window)
    moved = [t * (0.7 + 0.6 * unit(h + i)) for i, t in enumerate(tiers)]
    s = sum(moved) or 1.0
    out = dict(zip(RATING_BUCKETS[:4], (long_credit * m / s for m in moved), strict=True))
    out["短期A-1"] = short
    out["未评级"] = unrated
    return out


def duration_years(world: World, stub: FundStub, window: str) -> float:
    """Estimated duration of the bond portfolio in years."""
    theme = stub.theme
    if stub.fund_type == "货币型":
        lo, hi = 0.1, 0.3
    elif "短债" in theme and "中短" not in theme:
        lo, hi = 0.4, 1.2
    elif "中短" in theme:
        lo, hi = 1.0, 2.0
    elif "信用" in theme:
        lo, hi = 1.5, 3.0
    elif any(k in theme for k in ("政策性", "纯债", "定开")):
        lo, hi = 2.5, 5.0
    else:
        lo, hi = 1.5, 4.0
    d = lo + (hi - lo) * unit(derive_seed(world.seed, "duration", stub.product_key))
    return d * (1.0 + drift(world, stub.product_key, window, 0.5 * window_amplitude(window), "duration"))


def duration_style(d: float) -> str:
    """短久期 / 中久期 / 长久期."""
    return "短久期" if d < 1.5 else "中久期" if d < 3.5 else "长久期"


def credit_style(ratings: dict[str, float]) -> str:
    """高等级 / 中等级 / 下沉 from the long-term credit ratings."""
    credit = sum(ratings[k] for k in RATING_BUCKETS[:4])
    if credit <= 0:
        return "高等级"
    low = (ratings["长期AA"] + ratings["长期AA-及以下"]) / credit
    if low > 0.25:
        return "下沉"
    return "高等级" if ratings["长期AAA"] / credit >= 0.6 else "中等级"


# ---------------------------------------------------------------- turnover profile

_TURNOVER_RANGE = {
    "股票型": (1.5, 5.0),
    "混合型": (1.0, 6.0),
    "指数型": (0.3, 1.0),
    "QDII型": (0.3, 1.5),
    "债券型": (0.2, 1.0),
    "FOF": (0.5, 1.5),
    "货币型": (0.0, 0.0),
}


def turnover_rate(world: World, stub: FundStub, window: str) -> float:
    """Annual stock turnover (2.0 = 200%) averaged over a window."""
    lo, hi = _TURNOVER_RANGE[stub.fund_type]
    base = lo + (hi - lo) * unit(derive_seed(world.seed, "turnover", stub.product_key))
    return round(
        base * (1.0 + drift(world, stub.product_key, window, window_amplitude(window), "turnover")), 4
    )


def peer_turnover(fund_type: str) -> float | None:
    """Average turnover of a fund type (mid-range of the type's profile)."""
    lo, hi = _TURNOVER_RANGE[fund_type]
    return None if hi == 0 else round((lo + hi) / 2, 4)


# ---------------------------------------------------------------- peers (type reference distributions)

_PEER_RETURN = {
    "股票型": (0.08, 0.2),
    "混合型": (0.06, 0.15),
    "指数型": (0.06, 0.18),
    "债券型": (0.03, 0.015),
    "货币型": (0.015, 0.003),
    "QDII型": (0.1, 0.15),
    "FOF": (0.04, 0.05),
}
_PEER_VOL = {
    "股票型": (0.22, 0.06),
    "混合型": (0.18, 0.06),
    "指数型": (0.2, 0.05),
    "债券型": (0.02, 0.01),
    "货币型": (0.001, 0.0005),
    "QDII型": (0.2, 0.06),
    "FOF": (0.06, 0.03),
}
_PEER_DRAWDOWN = {
    "股票型": (0.2, 0.08),
    "混合型": (0.17, 0.07),
    "指数型": (0.2, 0.07),
    "债券型": (0.015, 0.01),
    "货币型": (0.0, 0.001),
    "QDII型": (0.18, 0.07),
    "FOF": (0.06, 0.03),
}


def beat_ratio(value: float | None, ref: tuple[float, float], higher_is_better: bool = True) -> float | None:
    """Share of peers the value beats, from the type's reference (mean, spread)."""
    if value is None:
        return None
    p = phi((value - ref[0]) / ref[1])
    return r4(p if higher_is_better else 1.0 - p)


# ================================================================= builders: diagnosis and risk


def resolve_fund(world: World, query: Any, tool: str) -> Fund:
    """A fund from a code or a (partial) name, best match first."""
    q = (query or "").strip() if isinstance(query, str) else ""
    if not q:
        raise ToolInputError(f"{tool}: fundNameOrCode is required (a fund code or name)")
    if q.isdigit() and len(q) == 6:  # a code names one fund exactly; no fuzzy fallback to another
        fund = world.fund(q)
        if fund is None:
            raise ToolInputError(f"{tool}: no fund with code {q}")
        return fund
    matches = world.guess_fund_code(q, limit=1)
    if not matches:
        raise ToolInputError(f"{tool}: no fund matches fundNameOrCode {q!r}")
    return world.fund(matches[0]["code"])


def _period_metrics(
    fund: Fund, series: NavSeries, lo: int, hi: int, label: str, year_fraction: float
) -> dict:
    rets = window_returns(series, lo, hi)
    m = (
        return_metrics(rets)
        if rets
        else {"total": 0.0, "annual": 0.0, "volatility": None, "max_drawdown": 0.0, "sharpe": None}
    )
    mu, sd = _PEER_RETURN[fund.fund_type]
    ref_ret = (mu * year_fraction, max(sd * math.sqrt(max(year_fraction, 0.05)), 1e-4))
    value_for_peer = m["annual"] if label == "成立以来" else m["total"]
    if label == "成立以来":
        ref_ret = (mu, sd)
    return {
        "period": label,
        "returnRate": r4(m["total"]),
        "returnBeatRatio": beat_ratio(value_for_peer, ref_ret),
        "volatility": None if m["volatility"] is None else r4(m["volatility"]),
        "volatilityBeatRatio": beat_ratio(m["volatility"], _PEER_VOL[fund.fund_type], higher_is_better=False),
        "maxDrawdown": r4(-m["max_drawdown"]),
        "maxDrawdownBeatRatio": beat_ratio(
            m["max_drawdown"], _PEER_DRAWDOWN[fund.fund_type], higher_is_better=False
        ),
        "sharpeRatio": None if m["sharpe"] is None else round(m["sharpe"], 2),
        "sharpeBeatRatio": beat_ratio(m["sharpe"], (0.5, 0.8)),
    }


def _month_end_positions(series: NavSeries, lo: int, hi: int) -> list[int]:
    out = [lo]
    for i in range(lo + 1, hi):
        if series.dates[i][:7] != series.dates[i + 1][:7]:
            out.append(i)
    out.append(hi)
    return out


def _beat_index_share(world: World, series: NavSeries, lo: int, hi: int) -> float | None:
    idx = world.index_series("000300")
    ends = _month_end_positions(series, lo, hi)
    if len(ends) < 4:
        return None
    wins = 0
    for a, b in zip(ends, ends[1:], strict=False):
        fr = series.adj[b] / series.adj[a] - 1.0
        ia = idx.index_of(date.fromisoformat(series.dates[a]))
        ib = idx.index_of(date.fromisoformat(series.dates[b]))
        if fr > idx.adj[ib] / idx.adj[ia] - 1.0:
            wins += 1
    return wins / (len(ends) - 1)


def _half_year_profit_probability(series: NavSeries) -> float | None:
    n = len(series.adj)
    span = 125
    if n <= span + 1:
        return None
    starts = range(0, n - span, 5)
    wins = sum(1 for i in starts if series.adj[i + span] > series.adj[i])
    return r4(wins / len(starts))


@qieman_builder("GetFundDiagnosis")
def build_fund_diagnosis(ctx: BuildContext, args: dict) -> dict:
    """A one-fund diagnosis: latest NAV, risk, valuation, trend, win rates, mix and window metrics."""
    world = ctx.world
    fund = resolve_fund(world, args.get("fundNameOrCode"), "GetFundDiagnosis")
    series, _, _ = world.fund_nav_series(fund.code)
    hi = len(series.dates) - 1
    valuation = world.valuation("000300")
    s_ratio = stock_ratio(fund)
    percentile = None
    if s_ratio >= 0.3:
        u = unit(derive_seed(world.seed, "fund_valuation", fund.code))
        percentile = r4(clamp(valuation["pe_percentile"] + (u - 0.5) * 0.4, 0.01, 0.99))
    if percentile is None:
        valuation_text = "暂无估值数据"
    elif percentile < 0.3:
        valuation_text = f"估值处于历史低位，低于{round((1 - percentile) * 100)}%的时期"
    elif percentile < 0.7:
        valuation_text = "估值处于历史中位"
    else:
        valuation_text = f"估值处于历史高位，高于{round(percentile * 100)}%的时期"
    r1 = fund.performance.get("近1月")
    r3 = fund.performance.get("近3月")
    if r1 is not None and r3 is not None and r1 > 0 and r3 > 0:
        trend = "近期上涨趋势较多"
    elif r1 is not None and r3 is not None and r1 < 0 and r3 < 0:
        trend = "近期下跌趋势较多"
    else:
        trend = "未来涨跌趋势不明确"
    metrics: list[dict] = []
    beat_text = "成立时间较短，暂无跑赢沪深300和同类平均的统计"
    if hi >= 1:
        end_day = date.fromisoformat(series.dates[hi])
        lo_1y = max(0, series.index_of(shift_months(end_day, -12)))
        lo_ytd = max(0, series.index_of(date(end_day.year - 1, 12, 31)))
        ytd_fraction = max((end_day - date(end_day.year, 1, 1)).days / 365, 0.01)
        metrics = [
            _period_metrics(fund, series, lo_1y, hi, "近1年", min(1.0, (hi - lo_1y) / TRADING_DAYS_PER_YEAR)),
            _period_metrics(fund, series, lo_ytd, hi, "今年来", ytd_fraction),
            _period_metrics(fund, series, 0, hi, "成立以来", hi / TRADING_DAYS_PER_YEAR),
        ]
        share = _beat_index_share(world, series, max(0, series.index_of(shift_months(end_day, -36))), hi)
        if share is not None:
            band = "60%以上" if share >= 0.6 else "20%-60%" if share >= 0.2 else "不足20%"
            beat_text = f"近3年有{band}的时间跑赢沪深300和同类平均"
    latest = fund.latest
    return {
        "fundCode": fund.code,
        "fundName": fund.name,
        "nav": latest["nav"] if latest["nav"] is not None else 1.0,
        "navDate": latest["nav_date"] or fund.setup_date,
        "dailyReturn": latest["daily_return"],
        "netAsset": fund.net_asset,
        "riskLevel": fund.risk_name,
        "suitableInvestor": SUITABLE_INVESTOR[fund.risk_level],
        "valuationPercentile": percentile,
        "valuationText": valuation_text,
        "trendText": trend,
        "beatBenchmarkText": beat_text,
        "halfYearProfitProbability": _half_year_profit_probability(series),
        "marketTemperature": valuation["temperature"],
        "assetAllocation": [
            {"name": a["name"], "ratio": a["ratio"], "value": a["value"]} for a in fund.asset_allocation
        ],
        "industryAllocation": [
            {"name": x["industry"], "ratio": x["ratio"], "value": round(x["ratio"] * fund.net_asset, 2)}
            for x in fund.industry_allocation
        ],
        "performanceMetrics": metrics,
        "url": fund_url(fund.code),
    }


def risk_score(volatility: float) -> float:
    """0-100 risk score from annualised volatility (12% volatility scores 50)."""
    return round(100.0 * volatility / (volatility + 0.12), 2)


def risk_text(score: float) -> str:
    """Plain-language band of a risk score."""
    if score < 15:
        return "波动很小，风险低，适合追求稳健的资金"
    if score < 35:
        return "波动较小，风险中低，短期可能有小幅回撤"
    if score < 55:
        return "波动适中，风险中等，需承受一定回撤"
    return "波动较大，风险较高，可能出现明显回撤"


def last_month_end(d: date) -> date:
    """The last calendar month end strictly before ``d``'s month."""
    return date(d.year, d.month, 1) - timedelta(days=1)


def recent_window(
    world: World, code: str, days: int = TRADING_DAYS_PER_YEAR
) -> tuple[list[str], list[float]]:
    """Dates and daily returns of the last ``days`` trading days (fewer for young funds)."""
    rows = world.recent_returns(code, days)
    return [d for d, _ in rows], [r for _, r in rows]


def fit_against_factors(world: World, dates: list[str], returns: list[float]) -> dict[str, float] | None:
    """Fit daily returns on the world's four market factors over the same dates."""
    if len(returns) < 30:
        return None
    start = cal.all_trading_days()[cal.index_on_or_before(date.fromisoformat(dates[0])) - 1].isoformat()
    factors = [factor_returns(world, f, start, dates[-1]) for f in v.FACTORS]
    if any(len(f) != len(returns) for f in factors):
        return None
    return factor_fit(returns, factors)


@qieman_builder("AnalyzeFundRisk")
def build_analyze_fund_risk(ctx: BuildContext, args: dict) -> list[dict]:
    """Risk score and factor-fit quality per known fund (unknown codes skipped)."""
    world = ctx.world
    out = []
    effective = last_month_end(world.as_of).isoformat()
    for code in code_list(args, "fundCodes", "AnalyzeFundRisk"):
        stub = world.fund_stub(code)
        if stub is None:
            continue
        dates, rets = recent_window(world, code)
        if len(rets) < 2:
            continue
        vol = annual_volatility(rets) or 0.0
        score = risk_score(vol)
        fit = fit_against_factors(world, dates, rets) if stub.fund_type != "货币型" else None
        out.append(
            {
                "fundCode": code,
                "fundName": stub.name,
                "riskScore": score,
                "rSquared": None if fit is None else r4(fit["r_squared"]),
                "residualVariance": None if fit is None else float(f"{fit['residual_variance']:.3g}"),
                "standardError": None if fit is None else r4(fit["standard_error"]),
                "riskDescription": f"{stub.name}近一年年化波动率{vol * 100:.2f}%，{risk_text(score)}",
                "effectiveDate": effective,
            }
        )
    return out


@qieman_builder("GetFundAssetClassAnalysis")
def build_fund_asset_class_analysis(ctx: BuildContext, args: dict) -> dict:
    """Asset-class tree of a list of fund holdings (unknown codes skipped); amounts in yuan."""
    world = ctx.world
    holdings = args.get("holdingList")
    if not isinstance(holdings, list) or not holdings:
        raise ToolInputError("GetFundAssetClassAnalysis: holdingList must be a non-empty list")
    by_leaf: dict[str, float] = {}
    total = 0.0
    for i, h in enumerate(holdings):
        if not isinstance(h, dict) or not isinstance(h.get("amount"), int | float) or h["amount"] <= 0:
            raise ToolInputError(
                f"GetFundAssetClassAnalysis: holdingList[{i}].amount must be a positive number"
            )
        stub = world.fund_stub(str(h.get("fundCode")))
        if stub is None:
            continue
        leaf = leaf_for_fund(stub)
        by_leaf[leaf] = by_leaf.get(leaf, 0.0) + float(h["amount"])
        total += float(h["amount"])
    if total <= 0:
        return {"totalAmount": 0.0, "assetClassCategoryInfo": []}
    leaves = sorted(by_leaf)
    bps = proportional_bp([by_leaf[k] for k in leaves])
    tree = asset_class_tree(dict(zip(leaves, bps, strict=True)))

    def to_amounts(node: dict) -> dict:
        node["amount"] = round(total * round(node["ratio"] * 10000) / 10000, 2)
        for child in node["children"]:
            to_amounts(child)
        return node

    return {"totalAmount": round(total, 2), "assetClassCategoryInfo": [to_amounts(n) for n in tree]}


# ================================================================= builders: benchmark and attribution


def _index_code_for(name: str, fund: Fund) -> str | None:
    for code, idx_name, *_ in v.INDICES:
        if name.startswith(idx_name):
            return code
    if fund.index_name and name.startswith(fund.index_name):
        return fund.index_code
    return None


@qieman_builder("getFundBenchmarkInfo")
def build_benchmark_info(ctx: BuildContext, args: dict) -> dict:
    """The contract benchmark split into weighted components."""
    fund = fund_or_error(ctx.world, args.get("fundCode"), "getFundBenchmarkInfo")
    components = []
    parts = fund.benchmark.split("+")
    for part in parts:
        name, _, pct = part.partition("*")
        weight = float(pct.rstrip("%")) / 100 if pct else 1.0 / len(parts)
        name = name.replace("收益率", "").strip()
        components.append({"indexCode": _index_code_for(name, fund), "indexName": name, "weight": r4(weight)})
    return {
        "fundCode": fund.code,
        "fundName": fund.name,
        "benchmark": fund.benchmark,
        "components": components,
    }


def _split(total: float, weights: list[float], world: World, *key: object) -> list[float]:
    """Split ``total`` across items in proportion to ``weights`` with seeded tilts; parts sum to total."""
    if not weights:
        return []
    h = derive_seed(world.seed, "split", *key)
    raw = [w * (0.4 + 1.2 * unit(h + i)) for i, w in enumerate(weights)]
    s = sum(raw) or 1.0
    parts = [round(total * x / s, 6) for x in raw]
    parts[0] = round(total - sum(parts[1:]), 6)
    return parts


@qieman_builder("getFundBrinsonIndicator")
def build_brinson(ctx: BuildContext, args: dict) -> dict:
    """Brinson attribution of the fund's excess return over the CSI 300 in a window."""
    world = ctx.world
    tool = "getFundBrinsonIndicator"
    fund = fund_or_error(world, args.get("fundCode"), tool)
    window = window_key(args, "timePeriod", tool, "LAST_YEAR")
    industries = industry_weights(world, fund, window)
    if not industries:
        raise ToolInputError(
            f"{tool}: fund {fund.code} holds no stocks; Brinson attribution needs an equity portfolio"
        )
    series, lo, hi = nav_window(world, fund, window)
    start, end = window_dates(series, lo, hi)
    fund_ret = series.adj[hi] / series.adj[lo] - 1.0
    excess = r6(fund_ret - index_return(world, "000300", start, end))
    u = unit(derive_seed(world.seed, "brinson", fund.code, window))
    interaction = r6(excess * (u - 0.5) * 0.2)
    allocation = r6((excess - interaction) * (0.2 + 0.4 * u))
    selection = r6(excess - interaction - allocation)
    names = [n for n, _ in industries]
    weights = [w for _, w in industries]
    alloc_parts = _split(allocation, weights, world, fund.code, window, "alloc")
    sel_parts = _split(selection, weights, world, fund.code, window, "sel")
    return {
        "fundCode": fund.code,
        "timePeriod": window,
        "startDate": start,
        "endDate": end,
        "allocationEffect": allocation,
        "selectionEffect": selection,
        "interactionEffect": interaction,
        "totalExcessReturn": excess,
        "industryDetails": [
            {"industryName": n, "allocationEffect": a, "selectionEffect": s}
            for n, a, s in zip(names, alloc_parts, sel_parts, strict=True)
        ],
    }


@qieman_builder("getFundCampisiIndicator")
def build_campisi(ctx: BuildContext, args: dict) -> dict:
    """Campisi attribution of a bond fund's return: income, treasury curve, spread and selection."""
    world = ctx.world
    tool = "getFundCampisiIndicator"
    fund = fund_or_error(world, args.get("fundCode"), tool)
    if bond_ratio(fund) < 0.3:
        raise ToolInputError(
            f"{tool}: fund {fund.code} ({fund.fund_type}) is not a bond fund; Campisi needs bonds"
        )
    window = window_key(args, "timePeriod", tool, "LAST_YEAR")
    series, lo, hi = nav_window(world, fund, window)
    start, end = window_dates(series, lo, hi)
    fund_ret = r6(series.adj[hi] / series.adj[lo] - 1.0)
    bench_levels = levels_from_returns(factor_returns(world, "bond_cn", start, end))
    bench = r6(bench_levels[-1] - 1.0)
    years = (hi - lo) / TRADING_DAYS_PER_YEAR
    stub = world.fund_stub(fund.code)
    coupon = 0.018 + 0.012 * unit(derive_seed(world.seed, "coupon", stub.product_key))
    income = r6(coupon * years * bond_ratio(fund))
    treasury = r6((bench - 0.02 * years) * duration_years(world, stub, window) / 3.0)
    u = unit(derive_seed(world.seed, "campisi", fund.code, window))
    spread = r6((fund_ret - income - treasury) * (0.3 + 0.4 * u))
    selection = r6(fund_ret - income - treasury - spread)
    return {
        "fundCode": fund.code,
        "timePeriod": window,
        "fundReturn": fund_ret,
        "benchmarkReturn": bench,
        "incomeEffect": income,
        "treasuryEffect": treasury,
        "spreadEffect": spread,
        "selectionEffect": selection,
        "excessReturn": r6(fund_ret - bench),
    }


# ================================================================= builders: industries and turnover


def _report_date_for(world: World, fund: Fund, window: str) -> str:
    return fund.holdings["report_date"] if window == LATEST else latest_report_date(world).isoformat()


@qieman_builder("getFundIndustryAllocation")
def build_industry_allocation(ctx: BuildContext, args: dict) -> dict:
    """Industry weights of the stock portfolio (latest report or window average)."""
    world = ctx.world
    tool = "getFundIndustryAllocation"
    fund = fund_or_error(world, args.get("fundCode"), tool)
    window = window_key(args, "timeRange", tool, LATEST)
    return {
        "fundCode": fund.code,
        "fundName": fund.name,
        "timeRange": window,
        "reportDate": _report_date_for(world, fund, window),
        "industryList": [
            {"industryCode": INDUSTRY_CODES.get(n), "industryName": n, "weight": r4(w)}
            for n, w in industry_weights(world, fund, window)
        ],
    }


@qieman_builder("getFundIndustryConcentration")
def build_industry_concentration(ctx: BuildContext, args: dict) -> dict:
    """Top-5 industries and cumulative concentration."""
    world = ctx.world
    tool = "getFundIndustryConcentration"
    fund = fund_or_error(world, args.get("fundCode"), tool)
    window = window_key(args, "timeRange", tool, LATEST)
    weights = industry_weights(world, fund, window)
    top = weights[:5]

    def cum(k: int) -> float:
        return r4(sum(w for _, w in weights[:k]))

    return {
        "fundCode": fund.code,
        "timeRange": window,
        "reportDate": _report_date_for(world, fund, window),
        "topIndustries": [
            {"rank": i + 1, "industryName": n, "weight": r4(w)} for i, (n, w) in enumerate(top)
        ],
        "top1Concentration": cum(1),
        "top2Concentration": cum(2),
        "top3Concentration": cum(3),
        "top5Concentration": cum(5),
    }


def preference_level(weight: float) -> str:
    """Label of an industry weight against an even spread over the 20 industries."""
    return "重点配置" if weight >= 0.25 else "超配" if weight >= 0.08 else "低配"


@qieman_builder("getFundIndustryPreference")
def build_industry_preference(ctx: BuildContext, args: dict) -> dict:
    """Preferred industries per fund over a window (unknown codes skipped)."""
    world = ctx.world
    tool = "getFundIndustryPreference"
    window = window_key(args, "timeRange", tool, "LAST_YEAR")
    funds = []
    for fund in known_funds(world, code_list(args, "fundCodeList", tool)):
        prefs = [
            {"industryName": n, "averageWeight": r4(w), "preferenceLevel": preference_level(w)}
            for n, w in industry_weights(world, fund, window)[:5]
        ]
        funds.append({"fundCode": fund.code, "fundName": fund.name, "preferredIndustries": prefs})
    return {"timeRange": window, "funds": funds}


@qieman_builder("getFundIndustryReturns")
def build_industry_returns(ctx: BuildContext, args: dict) -> dict:
    """Return and contribution of each industry held; contributions add up to the stock part of the return."""
    world = ctx.world
    tool = "getFundIndustryReturns"
    fund = fund_or_error(world, args.get("fundCode"), tool)
    window = window_key(args, "timeRange", tool, LATEST)
    weights = industry_weights(world, fund, window)
    rows: list[dict] = []
    if weights:
        series, lo, hi = nav_window(world, fund, window)
        start, end = window_dates(series, lo, hi)
        s_ratio = window_stock_ratio(world, fund, window) or stock_ratio(fund)
        stock_part = (series.adj[hi] / series.adj[lo] - 1.0) * min(
            1.0, s_ratio / max(s_ratio + bond_ratio(fund) * 0.2, 1e-9)
        )
        market = index_return(world, "000300", start, end)
        contributions = _split(stock_part, [w for _, w in weights], world, fund.code, window, "industry_ret")
        total_abs = sum(abs(c) for c in contributions) or 1.0
        for (name, w), c in zip(weights, contributions, strict=True):
            absolute = c / (w * s_ratio) if w * s_ratio > 0 else 0.0
            rows.append(
                {
                    "industryName": name,
                    "absoluteReturn": r6(absolute),
                    "relativeReturn": r6(absolute - market),
                    "returnContribution": c,
                    "scoreContribution": round(100 * c / total_abs, 2),
                }
            )
        rows.sort(key=lambda r: (-r["returnContribution"], r["industryName"]))
    return {"fundCode": fund.code, "timeRange": window, "industryReturns": rows}


@qieman_builder("getFundTurnoverRate")
def build_turnover(ctx: BuildContext, args: dict) -> dict:
    """Stock turnover of the fund against its type average."""
    world = ctx.world
    tool = "getFundTurnoverRate"
    fund = fund_or_error(world, args.get("fundCode"), tool)
    window = window_key(args, "timeRange", tool, LATEST)
    stub = world.fund_stub(fund.code)
    return {
        "fundCode": fund.code,
        "timeRange": window,
        "reportDate": latest_semiannual_date(world).isoformat(),
        "turnoverRate": turnover_rate(world, stub, window) if stock_ratio(fund) > 0 else 0.0,
        "peerAverageTurnoverRate": peer_turnover(fund.fund_type),
    }


# ================================================================= builders: position, recovery, sector, timing


@qieman_builder("fund-equity-position")
def build_equity_position(ctx: BuildContext, args: dict) -> dict:
    """Stock position of the fund from its latest asset allocation."""
    fund = fund_or_error(ctx.world, args.get("fundCode"), "fund-equity-position")
    pos = stock_ratio(fund)
    return {
        "fundCode": fund.code,
        "fundName": fund.name,
        "equityPosition": pos,
        "positionLevel": "高仓位" if pos >= 0.8 else "中仓位" if pos >= 0.5 else "低仓位",
        "reportDate": fund.holdings["report_date"],
    }


def recovery_days(levels: Sequence[float]) -> tuple[int | None, float]:
    """(longest peak-to-recovery span in trading days, or None when the worst span is still open; max drawdown)."""
    peak_i, peak = 0, levels[0]
    longest_closed = 0
    in_dd = False
    for i, x in enumerate(levels):
        if x >= peak:
            if in_dd:
                longest_closed = max(longest_closed, i - peak_i)
                in_dd = False
            peak_i, peak = i, x
        else:
            in_dd = True
    open_span = len(levels) - 1 - peak_i if in_dd else 0
    return (None if open_span > longest_closed else longest_closed), max_drawdown(levels)


@qieman_builder("fund-recovery-ability")
def build_recovery(ctx: BuildContext, args: dict) -> dict:
    """Drawdown and recovery over the last three years of the fund's NAV."""
    world = ctx.world
    fund = fund_or_error(world, args.get("fundCode"), "fund-recovery-ability")
    series, lo, hi = nav_window(world, fund, "LAST_3_YEAR")
    levels = list(series.adj[lo : hi + 1]) or [1.0]
    days, mdd = recovery_days(levels)
    if days is None:
        level, pct = "弱", None
    else:
        level = "强" if days <= 20 else "较强" if days <= 60 else "一般" if days <= 180 else "弱"
        pct = r4(1.0 - phi((days - 90) / 80))
    return {
        "fundCode": fund.code,
        "fundName": fund.name,
        "longestRecoveryDays": days,
        "maxDrawdown": r4(-mdd),
        "peerRankPercentile": pct,
        "recoveryLevel": level,
    }


@qieman_builder("fund-sector-preference")
def build_sector_preference(ctx: BuildContext, args: dict) -> dict:
    """The industry the fund's stock portfolio leans to most."""
    world = ctx.world
    fund = fund_or_error(world, args.get("fundCode"), "fund-sector-preference")
    weights = industry_weights(world, fund, LATEST)
    if not weights:
        return {
            "fundCode": fund.code,
            "fundName": fund.name,
            "sectorName": "无股票持仓",
            "sectorCode": "NONE",
            "sectorWeight": None,
        }
    name, weight = weights[0]
    return {
        "fundCode": fund.code,
        "fundName": fund.name,
        "sectorName": name,
        "sectorCode": INDUSTRY_CODES.get(name, "OTHER"),
        "sectorWeight": r4(weight),
    }


@qieman_builder("getMarketTimingIndicator")
def build_market_timing(ctx: BuildContext, args: dict) -> dict:
    """Monthly timing statistics against the CSI 300 over a window."""
    world = ctx.world
    tool = "getMarketTimingIndicator"
    fund = fund_or_error(world, args.get("fundCode"), tool)
    window = window_key(
        args,
        "timeInterval",
        tool,
        "LAST_YEAR",
        allowed=[*WINDOW_MONTHS, "fromSetupDate", "sinceTakingOffice"],
    )
    series, lo, hi = nav_window(world, fund, window)
    idx = world.index_series("000300")
    ends = _month_end_positions(series, lo, hi) if hi > lo else [lo]
    pairs = []
    for a, b in zip(ends, ends[1:], strict=False):
        ia = idx.index_of(date.fromisoformat(series.dates[a]))
        ib = idx.index_of(date.fromisoformat(series.dates[b]))
        pairs.append((series.adj[b] / series.adj[a] - 1.0, idx.adj[ib] / idx.adj[ia] - 1.0))
    if len(pairs) < 2:
        return {
            "fundCode": fund.code,
            "timeInterval": window,
            "timingWinRate": 0.0,
            "timingContribution": 0.0,
            "timingAbility": "弱",
        }
    mf = sum(f for f, _ in pairs) / len(pairs)
    mm = sum(m for _, m in pairs) / len(pairs)
    var_m = sum((m - mm) ** 2 for _, m in pairs)
    beta = sum((f - mf) * (m - mm) for f, m in pairs) / var_m if var_m > 0 else 0.0
    wins = sum(1 for f, m in pairs if (m >= 0 and f >= beta * m) or (m < 0 and f > beta * m))
    win_rate = wins / len(pairs)
    market_abs = sum(abs(m) for _, m in pairs)
    contribution = (win_rate - 0.5) * market_abs * 0.2 * min(1.0, abs(beta) + 0.1)
    return {
        "fundCode": fund.code,
        "timeInterval": window,
        "timingWinRate": r4(win_rate),
        "timingContribution": r6(contribution),
        "timingAbility": "强" if win_rate >= 0.6 else "中" if win_rate >= 0.45 else "弱",
    }


# ================================================================= builders: holdings metrics and regions

_CALC_METHODS = ("avg", "wavg", "float_wavg", "integral")


def _stock_extras(world: World, code: str) -> tuple[float, float, float, float]:
    """(gross margin, revenue growth, net-profit growth, crowding ratio) of a stock."""
    h = derive_seed(world.seed, "stock_extras", code)
    return (
        0.1 + 0.6 * unit(h),
        -0.2 + 0.6 * unit(h + 1),
        -0.4 + 1.0 * unit(h + 2),
        0.4 * unit(h + 3) ** 2,
    )


def _aggregate(values: list[float], weights: list[float], method: str, caps: list[float]) -> float | None:
    pairs = [(x, w, c) for x, w, c in zip(values, weights, caps, strict=True) if x is not None]
    if not pairs:
        return None
    if method == "avg":
        return sum(x for x, _, _ in pairs) / len(pairs)
    if method == "integral":
        pos = [(x, w) for x, w, _ in pairs if x > 0]
        return sum(w for _, w in pos) / sum(w / x for x, w in pos) if pos else None
    ws = [w * (c if method == "float_wavg" else 1.0) for _, w, c in pairs]
    return sum(x * w for (x, _, _), w in zip(pairs, ws, strict=True)) / (sum(ws) or 1.0)


@qieman_builder("getStockAllocationAndMetricsByFundCode")
def build_stock_allocation_metrics(ctx: BuildContext, args: dict) -> dict:
    """Stock share, top holdings and their valuation, profitability, growth and crowding per fund."""
    world = ctx.world
    tool = "getStockAllocationAndMetricsByFundCode"
    window = window_key(args, "timeRange", tool, LATEST)
    method = args.get("calculationMethod") or "wavg"
    if method not in _CALC_METHODS:
        raise ToolInputError(
            f"{tool}: calculationMethod {method!r} unknown; expected one of {list(_CALC_METHODS)}"
        )
    holding_type = args.get("holdingType") or "quarter"
    if holding_type not in ("semiannual", "quarter"):
        raise ToolInputError(f"{tool}: holdingType {holding_type!r} must be semiannual or quarter")
    threshold = args.get("threshold", 20)
    if threshold not in (10, 15, 20, 25, 30):
        raise ToolInputError(f"{tool}: threshold {threshold!r} must be one of 10, 15, 20, 25, 30 (percent)")
    report = latest_semiannual_date(world) if holding_type == "semiannual" else latest_report_date(world)
    funds = []
    for fund in known_funds(world, code_list(args, "fundCodeList", tool, limit=50)):
        stocks = fund.holdings["stocks"]
        infos = [world.stock(s["code"]) or {} for s in stocks]
        weights = [s["ratio"] for s in stocks]
        caps = [i.get("market_value_yi", 1.0) for i in infos]
        pes = [i.get("pe_ttm") for i in infos]
        pbs = [i.get("pb") for i in infos]
        extras = [_stock_extras(world, s["code"]) for s in stocks]
        roes = [pb / pe if pe and pb else None for pe, pb in zip(pes, pbs, strict=True)]

        def agg(values: list, digits: int = 4) -> float | None:
            x = _aggregate(values, weights, method, caps)  # noqa: B023 - evaluated within this iteration
            return None if x is None else round(x, digits)

        funds.append(
            {
                "fundCode": fund.code,
                "fundName": fund.name,
                "reportDate": report.isoformat(),
                "stockRatio": r4(window_stock_ratio(world, fund, window)),
                "topStocks": [
                    {"stockCode": s["code"], "stockName": s["name"], "weight": s["ratio"]} for s in stocks
                ],
                "valuation": {"pe": agg(pes, 2), "pb": agg(pbs, 2)},
                "profitability": {"roe": agg(roes), "grossMargin": agg([e[0] for e in extras])},
                "growth": {
                    "revenueGrowth": agg([e[1] for e in extras]),
                    "netProfitGrowth": agg([e[2] for e in extras]),
                },
                "crowdedStocks": [
                    {"stockCode": s["code"], "stockName": s["name"], "crowdingRatio": r4(e[3])}
                    for s, e in zip(stocks, extras, strict=True)
                    if e[3] * 100 >= threshold
                ],
            }
        )
    return {"timeRange": window, "funds": funds}


def _area_base(stub: FundStub) -> dict[str, float]:
    theme = stub.theme
    if stub.fund_type not in ("QDII型", "指数型") and "QDII" not in theme:
        return {"CN": 1.0}
    if "纳斯达克" in theme or "标普" in theme:
        return {"US": 0.96, "OTHER": 0.04}
    if "恒生" in theme or "港股" in theme:
        return {"HK": 0.97, "CN": 0.03}
    if "DAX" in theme:
        return {"DE": 0.95, "EU": 0.05}
    if "日本" in theme:
        return {"JP": 0.93, "OTHER": 0.07}
    if "印度" in theme:
        return {"IN": 0.9, "OTHER": 0.1}
    if "越南" in theme:
        return {"VN": 0.9, "OTHER": 0.1}
    if "亚洲" in theme:
        return {"HK": 0.35, "CN": 0.2, "KR": 0.15, "SG": 0.1, "IN": 0.1, "OTHER": 0.1}
    if "全球" in theme:
        return {"US": 0.6, "EU": 0.15, "JP": 0.08, "HK": 0.07, "OTHER": 0.1}
    return {"CN": 1.0}


def area_weights(world: World, stub: FundStub, window: str) -> list[tuple[str, float]]:
    """Regions as fractions of the invested assets (sum 1), largest first."""
    base = _area_base(stub)
    if len(base) == 1:
        return list(base.items())
    h = derive_seed(world.seed, "areas", stub.product_key, window)
    amp = 0.15 + window_amplitude(window)
    raw = {k: w * (1.0 + (unit(h + i) * 2 - 1) * amp) for i, (k, w) in enumerate(sorted(base.items()))}
    s = sum(raw.values())
    return sorted(((k, w / s) for k, w in raw.items()), key=lambda t: (-t[1], t[0]))


@qieman_builder("getQdFundAreaAllocation")
def build_area_allocation(ctx: BuildContext, args: dict) -> dict:
    """Regional allocation of (QDII) funds; domestic funds are 100% 中国内地."""
    world = ctx.world
    tool = "getQdFundAreaAllocation"
    window = window_key(args, "timeRange", tool, LATEST)
    scope = args.get("scope") or None
    by_name = {name: code for code, name in AREA_NAMES.items()}
    scope = by_name.get(
        scope, scope
    )  # a region name works as well as its code; unknown regions match nothing
    funds = []
    for code in code_list(args, "fundCodeList", tool, limit=50):
        stub = world.fund_stub(code)
        if stub is None:
            continue
        areas = [
            {"areaCode": k, "areaName": AREA_NAMES[k], "weight": r4(w)}
            for k, w in area_weights(world, stub, window)
            if scope is None or k == scope
        ]
        funds.append(
            {
                "fundCode": code,
                "fundName": stub.name,
                "reportDate": latest_report_date(world).isoformat(),
                "areas": areas,
            }
        )
    return {"timeRange": window, "funds": funds}


# ================================================================= builders: bonds

_ASSET_TYPES = ("total_asset", "total_net_asset", "bond_asset")
_ASSET_TYPES_CAMEL = ("totalAsset", "totalNetAsset", "bondAsset")


@qieman_builder("getBondAllocationByFundCode")
def build_bond_allocation(ctx: BuildContext, args: dict) -> dict:
    """Bond-type weights per fund with duration and credit styles (unknown codes skipped)."""
    world = ctx.world
    tool = "getBondAllocationByFundCode"
    window = window_key(args, "timeRange", tool, LATEST)
    asset_type = args.get("assetType") or "total_net_asset"
    if asset_type not in _ASSET_TYPES:
        raise ToolInputError(
            f"{tool}: assetType {asset_type!r} unknown; expected one of {list(_ASSET_TYPES)}"
        )
    funds = []
    for code in code_list(args, "fundCodeList", tool, limit=50):
        stub = world.fund_stub(code)
        if stub is None:
            continue
        factor = bond_denominator_factor(world, stub, window, asset_type)
        has_bonds = asset_ratios(world, stub)[1] > 0
        rows = (
            [
                {"bondType": k, "bondTypeName": BOND_TYPE_NAMES[k], "weight": r4(w * factor)}
                for k, w in bond_type_mix(world, stub, window).items()
            ]
            if has_bonds
            else []
        )
        funds.append(
            {
                "fundCode": code,
                "fundName": stub.name,
                "reportDate": latest_report_date(world).isoformat(),
                "bondTypeAllocation": rows,
                "durationStyle": duration_style(duration_years(world, stub, window)) if has_bonds else None,
                "creditStyle": credit_style(rating_mix(world, stub, window)) if has_bonds else None,
            }
        )
    return {"timeRange": window, "assetType": asset_type, "funds": funds}


def _rating_type(args: dict) -> str | None:
    """The rating bucket named by ``sumRatingType`` (AAA, A-1 and AA- forms accepted), or None when absent.

    A name that is no bucket is returned unchanged: no fund holds it, so it matches nothing.
    """
    kind = args.get("sumRatingType") or None
    if kind is None or kind in RATING_BUCKETS:
        return kind
    aliases = {"AAA": "长期AAA", "AA+": "长期AA+", "AA": "长期AA", "AA-": "长期AA-及以下", "A-1": "短期A-1"}
    bare = str(kind).replace("长期", "").replace("短期", "").replace("及以下", "").strip()
    return aliases.get(bare, kind)


@qieman_builder("getBondFundCreditRatingLevel")
def build_credit_rating(ctx: BuildContext, args: dict) -> dict:
    """Credit-rating distribution of each fund's bonds (fractions of bond assets)."""
    world = ctx.world
    tool = "getBondFundCreditRatingLevel"
    window = window_key(args, "timeRange", tool, LATEST)
    only = _rating_type(args)
    funds = []
    for code in code_list(args, "fundCodeList", tool, limit=50):
        stub = world.fund_stub(code)
        if stub is None:
            continue
        mix = rating_mix(world, stub, window) if asset_ratios(world, stub)[1] > 0 else {}
        dist = [
            {"ratingLevel": k, "weight": r4(mix[k])}
            for k in RATING_BUCKETS
            if k in mix and (only is None or k == only)
        ]
        funds.append(
            {
                "fundCode": code,
                "fundName": stub.name,
                "reportDate": latest_report_date(world).isoformat(),
                "ratingDistribution": dist,
            }
        )
    return {"timeRange": window, "funds": funds}


@qieman_builder("getBondIndicator")
def build_bond_indicator(ctx: BuildContext, args: dict) -> dict:
    """Duration, rate sensitivity, leverage and concentration of a fund's bond book."""
    world = ctx.world
    tool = "getBondIndicator"
    fund = fund_or_error(world, args.get("fundCode"), tool)
    window = window_key(
        args,
        "timeInterval",
        tool,
        "LAST_YEAR",
        allowed=[*WINDOW_MONTHS, "fromSetupDate", "sinceTakingOffice"],
    )
    stub = world.fund_stub(fund.code)
    b = bond_ratio(fund)
    if b <= 0:
        return {
            "fundCode": fund.code,
            "timeInterval": window,
            "duration": None,
            "rateSensitivity": None,
            "leverageRatio": None,
            "top5Concentration": None,
            "summary": f"{fund.name}不持有债券，暂无债券指标",
        }
    dur = duration_years(world, stub, window)
    leverage = max(1.0, sum(a["ratio"] for a in fund.asset_allocation))
    top5 = sum(x["ratio"] for x in fund.holdings["bonds"][:5])
    top5 *= 1.0 + drift(world, fund.code, window, 0.3 * window_amplitude(window), "top5")
    sens = -dur * 0.01 * b
    summary = (
        f"{fund.name}债券仓位{b * 100:.2f}%，久期约{dur:.2f}年（{duration_style(dur)}），利率上行1个百分点净值约变动"
        f"{sens * 100:.2f}%；杠杆率{leverage:.2f}倍，前五大债券占比{top5 * 100:.2f}%。"
    )
    return {
        "fundCode": fund.code,
        "timeInterval": window,
        "duration": round(dur, 2),
        "rateSensitivity": r4(sens),
        "leverageRatio": round(leverage, 4),
        "top5Concentration": r4(top5),
        "summary": summary,
    }


def dive_threshold(fund_type: str) -> float:
    """Daily return below which a day counts as a dive for the fund type."""
    return -0.002 if fund_type in ("债券型", "货币型", "FOF") else -0.03


@qieman_builder("getFundDiveCount")
def build_dive_count(ctx: BuildContext, args: dict) -> dict:
    """Dive days, abnormal moves (beyond 4 standard deviations) and the worst day per fund in a window."""
    world = ctx.world
    tool = "getFundDiveCount"
    window = window_key(args, "timeRange", tool, LATEST)
    funds = []
    for fund in known_funds(world, code_list(args, "fundCodeList", tool)):
        series, lo, hi = nav_window(world, fund, window)
        rets = window_returns(series, lo, hi)
        vol = (annual_volatility(rets) or 0.0) / math.sqrt(TRADING_DAYS_PER_YEAR)
        mean = sum(rets) / len(rets) if rets else 0.0
        worst = min(rets) if rets else None
        funds.append(
            {
                "fundCode": fund.code,
                "fundName": fund.name,
                "diveCount": sum(1 for r in rets if r < dive_threshold(fund.fund_type)),
                "unusualCount": sum(1 for r in rets if vol > 0 and abs(r - mean) > 4 * vol),
                "maxDailyDrop": r6(worst) if worst is not None and worst < 0 else None,
            }
        )
    return {"timeRange": window, "funds": funds}


# ================================================================= builders: screens

_OPERATORS = ("eq", "lt", "gt", "lte", "gte", "between")
ALERT_SCAN_SIZE = 150
ALERT_LOOKBACK_DAYS = 20


def _comparator(args: dict, tool: str, eq_tol: float, max_value: float | None):
    thresholds = args.get("thresholdList")
    if not isinstance(thresholds, list) or not thresholds or len(thresholds) > 2:
        raise ToolInputError(f"{tool}: thresholdList must hold one or two numbers")
    if not all(isinstance(t, int | float) and not isinstance(t, bool) for t in thresholds):
        raise ToolInputError(f"{tool}: thresholdList must hold numbers, got {thresholds!r}")
    if max_value is not None and any(abs(t) > max_value for t in thresholds):
        raise ToolInputError(
            f"{tool}: thresholdList {thresholds} looks like percentages; use fractions (0.3 = 30%)"
        )
    op = args.get("operator") or ("between" if len(thresholds) == 2 else "gte")
    if op not in _OPERATORS:
        raise ToolInputError(f"{tool}: operator {op!r} unknown; expected one of {list(_OPERATORS)}")
    if (op == "between") != (len(thresholds) == 2):
        raise ToolInputError(
            f"{tool}: operator {op!r} needs {'two thresholds' if op == 'between' else 'one threshold'}, got {len(thresholds)}"
        )
    t0 = float(thresholds[0])
    if op == "between":
        lo, hi = sorted(float(t) for t in thresholds)
        return lambda x: lo <= x <= hi
    return {
        "eq": lambda x: abs(x - t0) <= eq_tol,
        "lt": lambda x: x < t0,
        "gt": lambda x: x > t0,
        "lte": lambda x: x <= t0,
        "gte": lambda x: x >= t0,
    }[op]


def _max_results(args: dict, tool: str) -> int:
    n = args.get("maxResultSize", DEFAULT_MAX_RESULTS)
    if not isinstance(n, int | float) or isinstance(n, bool) or n < 1 or n > 200 or int(n) != n:
        raise ToolInputError(f"{tool}: maxResultSize must be a whole number from 1 to 200, got {n!r}")
    return int(n)


def _screen_window(world: World, args: dict, tool: str) -> tuple[str, str]:
    """(window key for the profiles, ISO report date shown)."""
    report = report_date_arg(world, args, tool)
    if report is not None and report != latest_report_date(world).isoformat():
        return f"report:{report}", report
    if report is not None:
        return LATEST, report
    return window_key(args, "timeRange", tool, LATEST), latest_report_date(world).isoformat()


def _ranked(rows: list[dict], key: str, limit: int) -> list[dict]:
    rows.sort(key=lambda r: (-r[key], r["fundCode"]))
    return rows[:limit]


def _bond_screen_values(world: World, window: str, asset_type: str, value_fn) -> list[tuple[str, str, float]]:
    def build() -> list[tuple[str, str, float]]:
        out = []
        for code in world.codes_by_type("债券型"):
            stub = world.fund_stub(code)
            out.append(
                (
                    code,
                    stub.name,
                    r4(value_fn(stub) * bond_denominator_factor(world, stub, window, asset_type)),
                )
            )
        return out

    return build()


def _bond_screen(
    ctx: BuildContext,
    args: dict,
    tool: str,
    label: tuple[str, str],
    default_asset_type: str,
    value_fn: Callable[[FundStub, str], float],
) -> dict:
    """A bond-fund screen: each fund's weight in one bucket (``label`` = (field, bucket)) vs a threshold."""
    world = ctx.world
    accept = _comparator(args, tool, 0.005, 1.5)
    limit = _max_results(args, tool)
    window, report = _screen_window(world, args, tool)
    asset_type = args.get("assetType") or default_asset_type
    if asset_type not in _ASSET_TYPES_CAMEL:
        raise ToolInputError(
            f"{tool}: assetType {asset_type!r} unknown; expected one of {list(_ASSET_TYPES_CAMEL)}"
        )
    field, bucket = label
    values = memo(
        world,
        (tool, window, asset_type, bucket),
        lambda: _bond_screen_values(world, window, asset_type, lambda stub: value_fn(stub, window)),
    )
    rows = [
        {"fundCode": c, "fundName": n, "reportDate": report, "weight": w, field: bucket}
        for c, n, w in values
        if accept(w)
    ]
    funds = _ranked(rows, "weight", limit)
    return {"total": len(funds), "funds": funds}


@qieman_builder("filterBondFundByBondType")
def build_filter_bond_type(ctx: BuildContext, args: dict) -> dict:
    """Bond funds whose weight in a bond type passes the threshold, highest weight first."""
    tool = "filterBondFundByBondType"
    bond_type = args.get("bondType") or "credit"
    if bond_type not in BOND_TYPE_NAMES and bond_type not in BOND_TYPE_GROUPS:
        raise ToolInputError(f"{tool}: bondType {bond_type!r} unknown")
    members = BOND_TYPE_GROUPS.get(bond_type, (bond_type,))

    def value(stub: FundStub, window: str) -> float:
        mix = bond_type_mix(ctx.world, stub, window)
        return sum(mix.get(k, 0.0) for k in members)

    return _bond_screen(ctx, args, tool, ("bondType", bond_type), "totalNetAsset", value)


@qieman_builder("filterBondFundByCreditRating")
def build_filter_credit_rating(ctx: BuildContext, args: dict) -> dict:
    """Bond funds whose weight in a rating bucket passes the threshold, highest weight first."""
    rating = _rating_type(args) or "长期AAA"
    if rating not in RATING_BUCKETS:
        return {"total": 0, "funds": []}
    return _bond_screen(
        ctx,
        args,
        "filterBondFundByCreditRating",
        ("ratingType", rating),
        "bondAsset",
        lambda stub, window: rating_mix(ctx.world, stub, window)[rating],
    )


@qieman_builder("filterStockFundByStockTurnover")
def build_filter_turnover(ctx: BuildContext, args: dict) -> dict:
    """Equity funds (股票型, 混合型) whose stock turnover passes the threshold, highest first."""
    world = ctx.world
    tool = "filterStockFundByStockTurnover"
    accept = _comparator(args, tool, 0.05, None)
    limit = _max_results(args, tool)
    window, report = _screen_window(world, args, tool)

    def build() -> list[tuple[str, str, float]]:
        out = []
        for fund_type in ("股票型", "混合型"):
            for code in world.codes_by_type(fund_type):
                stub = world.fund_stub(code)
                out.append((code, stub.name, turnover_rate(world, stub, window)))
        return out

    values = memo(world, ("screen_turnover", window), build)
    rows = [
        {"fundCode": c, "fundName": n, "reportDate": report, "turnoverRate": t}
        for c, n, t in values
        if accept(t)
    ]
    funds = _ranked(rows, "turnoverRate", limit)
    return {"total": len(funds), "funds": funds}


def _alert_candidates(world: World) -> list[FundStub]:
    def build() -> list[FundStub]:
        stubs = [world.fund_stub(c) for c in world.codes_by_type("债券型")]
        stubs.sort(key=lambda s: (-s.size_yi, s.code))
        return stubs[:ALERT_SCAN_SIZE]

    return memo(world, ("alert_candidates",), build)


@qieman_builder("getBondFundWithAlertRecord")
def build_bond_alerts(ctx: BuildContext, args: dict) -> dict:
    """Large bond funds with a dive or an abnormal move in the last 20 trading days, worst first."""
    world = ctx.world
    tool = "getBondFundWithAlertRecord"
    kind = args.get("bondAlterType") or "dailyDive"
    if kind not in ("unusual", "dailyDive", "weekDive"):
        raise ToolInputError(f"{tool}: bondAlterType {kind!r} must be unusual, dailyDive or weekDive")
    threshold = args.get("divingThreshold")
    if threshold is None:
        threshold = -0.003 if kind == "weekDive" else -0.002
    if not isinstance(threshold, int | float) or threshold > 0 or threshold < -0.5:
        raise ToolInputError(
            f"{tool}: divingThreshold must be a negative fraction (e.g. -0.002), got {threshold!r}"
        )
    limit = _max_results(args, tool)
    rows = []
    for stub in _alert_candidates(world):
        recent = world.recent_returns(stub.code, ALERT_LOOKBACK_DAYS + 60)
        if len(recent) < ALERT_LOOKBACK_DAYS + 5:
            continue
        window = recent[-ALERT_LOOKBACK_DAYS:]
        if kind == "weekDive":
            best = None
            for i in range(4, len(window)):
                ret = 1.0
                for _, r in window[i - 4 : i + 1]:
                    ret *= 1.0 + r
                ret -= 1.0
                if best is None or ret < best[1]:
                    best = (window[i][0], ret)
            hit = best if best and best[1] <= threshold else None
        elif kind == "dailyDive":
            day, ret = min(window, key=lambda t: (t[1], t[0]))
            hit = (day, ret) if ret <= threshold else None
        else:
            history = [r for _, r in recent[:-ALERT_LOOKBACK_DAYS]]
            mean = sum(history) / len(history)
            sd = math.sqrt(sum((r - mean) ** 2 for r in history) / (len(history) - 1))
            day, ret = max(window, key=lambda t: (abs(t[1] - mean), t[0]))
            hit = (day, ret) if sd > 0 and abs(ret - mean) > 3 * sd else None
        if hit:
            rows.append(
                {
                    "fundCode": stub.code,
                    "fundName": stub.name,
                    "alertDate": hit[0],
                    "alertType": kind,
                    "returnRate": r6(hit[1]),
                }
            )
    rows.sort(key=lambda r: (r["returnRate"], r["fundCode"]))
    funds = rows[:limit]
    return {"bondAlterType": kind, "total": len(funds), "funds": funds}
