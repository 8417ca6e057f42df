"""Builders for the Qieman one-fund diagnosis tools: diagnosis, risk score and factor fit, asset classes."""

from __future__ import annotations

import math
from datetime import date, timedelta

from finmcp.recordings.plumbing.seeding import derive_seed
from finmcp.server.sim.qieman.common import band_text, fund_url, r4
from finmcp.server.sim.qieman.fund_windows import (
    factor_returns,
    known_stubs,
    month_end_positions,
    resolve_fund,
)
from finmcp.server.sim.registry import BuildContext, ToolInputError, qieman_builder
from finmcp.server.world import World
from finmcp.server.world import trading_calendar as cal
from finmcp.server.world import vocab as v
from finmcp.server.world.asset_classes import asset_class_tree, leaf_for_fund
from finmcp.server.world.dates import shift_months
from finmcp.server.world.fund_profiles import stock_ratio
from finmcp.server.world.funds import Fund
from finmcp.server.world.navs import NavSeries
from finmcp.server.world.quant import (
    TRADING_DAYS_PER_YEAR,
    ReturnMetrics,
    annual_volatility,
    clamp,
    daily_returns,
    factor_fit,
    phi,
    return_metrics,
)
from finmcp.server.world.rng import proportional_bp, unit

SUITABLE_INVESTOR = {1: "保守型", 2: "稳健型", 3: "平衡型", 4: "成长型", 5: "进取型"}


def beat_ratio(value: float | None, ref: tuple[float, float], higher_is_better: bool = True) -> float | None:
    """Share of peers the value beats, from the type's reference (mean, spread)."""
    if value is None:
        return None
    p = phi((value - ref[0]) / ref[1])
    return r4(p if higher_is_better else 1.0 - p)


def _period_metrics(
    fund: Fund, series: NavSeries, lo: int, hi: int, label: str, year_fraction: float
) -> dict:
    rets = daily_returns(series.adj, lo, hi)
    m: ReturnMetrics = (
        return_metrics(rets)
        if rets
        else {"total": 0.0, "annual": 0.0, "volatility": None, "max_drawdown": 0.0, "sharpe": None}
    )
    mu, sd = v.PEER_RETURN[fund.fund_type]
    ref_ret = (mu * year_fraction, max(sd * math.sqrt(max(year_fraction, 0.05)), 1e-4))
    value_for_peer = m["annual"] if label == "成立以来" else m["total"]
    if label == "成立以来":
        ref_ret = (mu, sd)
    return {
        "period": label,
        "returnRate": r4(m["total"]),
        "returnBeatRatio": beat_ratio(value_for_peer, ref_ret),
        "volatility": None if m["volatility"] is None else r4(m["volatility"]),
        "volatilityBeatRatio": beat_ratio(
            m["volatility"], v.PEER_VOLATILITY[fund.fund_type], higher_is_better=False
        ),
        "maxDrawdown": r4(-m["max_drawdown"]),
        "maxDrawdownBeatRatio": beat_ratio(
            m["max_drawdown"], v.PEER_DRAWDOWN[fund.fund_type], higher_is_better=False
        ),
        "sharpeRatio": None if m["sharpe"] is None else round(m["sharpe"], 2),
        "sharpeBeatRatio": beat_ratio(m["sharpe"], (0.5, 0.8)),
    }


def _beat_index_share(world: World, series: NavSeries, lo: int, hi: int) -> float | None:
    idx = world.index_series("000300")
    ends = month_end_positions(series, lo, hi)
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
    assert valuation is not None  # one of the indices every world follows
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


_RISK_BANDS = (
    (15, "波动很小，风险低，适合追求稳健的资金"),
    (35, "波动较小，风险中低，短期可能有小幅回撤"),
    (55, "波动适中，风险中等，需承受一定回撤"),
)


def risk_text(score: float) -> str:
    """Plain-language band of a risk score."""
    return band_text(score, _RISK_BANDS, "波动较大，风险较高，可能出现明显回撤")


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
    for stub in known_stubs(world, args, "fundCodes", "AnalyzeFundRisk"):
        code = stub.code
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
