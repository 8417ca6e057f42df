"""Fund profiles: what the world holds about a fund beyond its record, from a seeded per-product profile.

The fund record (``World.fund``) carries the latest asset mix, holdings and industries. The analysis
tools also need what the record does not model: bond-type mix, credit ratings, duration, stock
turnover, regional allocation, the fundamentals of the stocks held, and how report-based figures
move over a window. Each comes from a profile seeded by ``derive_seed(world seed, kind, product key)``
and shaped by the fund's type and theme, cached per world (``World.memo``), so cheap screens over
hundreds of funds and the one-fund tools always agree.

**Windows.** ``WINDOW_MONTHS`` names trailing windows ending at ``as_of``; ``LatestReportDate`` is
the latest quarterly report. Report-based figures for a window are the latest report's values moved
by a seeded drift per (fund, window) that grows with the window length (:func:`drift`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from finmcp.recordings.plumbing.seeding import derive_seed

from . import vocab as v
from .funds import Fund, FundStub, asset_mix
from .quant import clamp
from .rng import unit

if TYPE_CHECKING:
    from .view import WorldView

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


def stock_ratio(fund: Fund) -> float:
    """Stocks as a fraction of net assets (from the fund's asset allocation)."""
    return next((a["ratio"] for a in fund.asset_allocation if a["name"] == "股票"), 0.0)


def bond_ratio(fund: Fund) -> float:
    """Bonds as a fraction of net assets."""
    return next((a["ratio"] for a in fund.asset_allocation if a["name"] == "债券"), 0.0)


def asset_ratios(world: WorldView, stub: FundStub) -> tuple[float, float, float, float]:
    """(stock, bond, cash, other) ratios of net assets without building the fund record (cached)."""
    return world.memo(("asset_ratios", stub.code), lambda: asset_mix(world.seed, stub))


def drift(world: WorldView, key: str, window: str, amplitude: float, *extra: object) -> float:
    """A seeded multiplicative drift in ``[-amplitude, amplitude]`` for report-based windows (0 for latest)."""
    if window == LATEST:
        return 0.0
    return (unit(derive_seed(world.seed, "window_drift", key, window, *extra)) * 2.0 - 1.0) * amplitude


def window_amplitude(window: str) -> float:
    """How far a window average may sit from the latest report (longer windows drift more)."""
    if window in WINDOW_MONTHS:
        return 0.05 + 0.25 * WINDOW_MONTHS[window] / 60
    return 0.0 if window == LATEST else 0.3


def industry_weights(world: WorldView, fund: Fund, window: str) -> list[tuple[str, float]]:
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


def window_stock_ratio(world: WorldView, fund: Fund, window: str) -> float:
    """The stock share of net assets averaged over the window."""
    return clamp(
        stock_ratio(fund) * (1.0 + drift(world, fund.code, window, 0.5 * window_amplitude(window), "stock")),
        0.0,
        1.0,
    )


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


def bond_type_mix(world: WorldView, stub: FundStub, window: str) -> dict[str, float]:
    """Bond types as fractions of the bond assets (sum 1) for a window (cached per world)."""
    return world.memo(("bond_mix", stub.product_key, window), lambda: _bond_type_mix(world, stub, window))


def _bond_type_mix(world: WorldView, stub: FundStub, window: str) -> dict[str, float]:
    h = derive_seed(world.seed, "bond_mix", stub.product_key)
    base = _bond_base_mix(stub)
    raw = {k: w * (0.6 + 0.8 * unit(h + i)) for i, (k, w) in enumerate(sorted(base.items()))}
    if window != LATEST:
        amp = window_amplitude(window)
        hw = derive_seed(world.seed, "bond_mix_window", stub.product_key, window)
        raw = {k: w * (1.0 + (unit(hw + i) * 2 - 1) * amp) for i, (k, w) in enumerate(sorted(raw.items()))}
    s = sum(raw.values())
    return {k: w / s for k, w in sorted(raw.items(), key=lambda kv: (-kv[1], kv[0]))}


def bond_denominator_factor(world: WorldView, stub: FundStub, window: str, asset_type: str) -> float:
    """Multiplier turning bond-asset fractions into fractions of net or total assets."""
    stock, bond, cash, other = asset_ratios(world, stub)
    if window != LATEST:
        bond = bond * (1.0 + drift(world, stub.code, window, 0.3 * window_amplitude(window), "bond"))
    if asset_type in ("bond_asset", "bondAsset"):
        return 1.0
    if asset_type in ("total_net_asset", "totalNetAsset"):
        return bond
    return bond / max(1.0, stock + bond + cash + other)


def rating_mix(world: WorldView, stub: FundStub, window: str) -> dict[str, float]:
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


def duration_years(world: WorldView, stub: FundStub, window: str) -> float:
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


def turnover_rate(world: WorldView, stub: FundStub, window: str) -> float:
    """Annual stock turnover (2.0 = 200%) averaged over a window."""
    lo, hi = v.TURNOVER_RANGE[stub.fund_type]
    base = lo + (hi - lo) * unit(derive_seed(world.seed, "turnover", stub.product_key))
    return round(
        base * (1.0 + drift(world, stub.product_key, window, window_amplitude(window), "turnover")), 4
    )


def peer_turnover(fund_type: str) -> float | None:
    """Average turnover of a fund type (mid-range of the type's profile)."""
    lo, hi = v.TURNOVER_RANGE[fund_type]
    return None if hi == 0 else round((lo + hi) / 2, 4)


def stock_fundamentals(world: WorldView, code: str) -> tuple[float, float, float, float]:
    """(gross margin, revenue growth, net-profit growth, crowding ratio) of a stock held by funds."""
    h = derive_seed(world.seed, "stock_extras", code)
    return (
        0.1 + 0.6 * unit(h),
        -0.2 + 0.6 * unit(h + 1),
        -0.4 + 1.0 * unit(h + 2),
        0.4 * unit(h + 3) ** 2,
    )


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


def area_weights(world: WorldView, stub: FundStub, window: str) -> list[tuple[str, float]]:
    """Regions as fractions of the invested assets (sum 1), largest first."""
    base = _area_base(stub)
    if len(base) == 1:
        return list(base.items())
    h = derive_seed(world.seed, "areas", stub.product_key, window)
    amp = 0.15 + window_amplitude(window)
    raw = {k: w * (1.0 + (unit(h + i) * 2 - 1) * amp) for i, (k, w) in enumerate(sorted(base.items()))}
    s = sum(raw.values())
    return sorted(((k, w / s) for k, w in raw.items()), key=lambda t: (-t[1], t[0]))
