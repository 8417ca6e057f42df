"""Builders for the Qieman portfolio tools: correlation, back-test, diagnosis, risk, allocation, Monte Carlo.

All figures come from the world's daily fund returns over a common window ending at ``as_of``: the
last three years (one year for correlation and risk), shortened to the youngest fund's life.
Positions with the same code are merged. Unlike the list tools of the fund-analysis family, these
tools refuse a portfolio naming an unknown fund (ToolInputError naming the list index and code):
a portfolio figure computed over part of the portfolio would be misleading.

``GetFundsBackTest`` is buy-and-hold from the window start with the given amounts; its ``navSeries``
samples every fifth trading day plus the last day. ``AnalyzePortfolioRisk`` scores the weighted
daily returns and fits them on the world's four market factors (R², residual variance and its
standard error, as in the one real sample). ``MonteCarloSimulate`` does not draw paths: it computes
the percentiles of a lognormal model of the mix analytically and adds, per period, a seeded
perturbation the size of the sampling error ``simulationCount`` paths would show, so the answer
depends on the seed, the arguments and the path count, and costs O(periodCount).
"""

from __future__ import annotations

import json
import math
from datetime import time
from typing import Any

from finmcp.recordings.plumbing.seeding import derive_seed, rng_for
from finmcp.server.sim.qieman.common import r4, r6
from finmcp.server.sim.qieman.fund_diagnosis import fit_against_factors, last_month_end, risk_score
from finmcp.server.sim.registry import BuildContext, ToolInputError, qieman_builder
from finmcp.server.world import World
from finmcp.server.world.fund_profiles import asset_ratios
from finmcp.server.world.quant import (
    annual_volatility,
    correlation,
    levels_from_returns,
    phi,
    portfolio_returns,
    return_metrics,
)
from finmcp.server.world.rng import normal

BACKTEST_DAYS = 750
CORRELATION_DAYS = 250
NAV_SAMPLE_STEP = 5
ASSET_CLASSES = ("股票", "债券", "现金", "商品", "其他")

# MonteCarloSimulate capital-market assumptions: annual arithmetic mean and volatility per class
CMA = {
    "cash": (0.018, 0.003),
    "fixedIncome": (0.032, 0.03),
    "equity": (0.08, 0.22),
    "commodity": (0.05, 0.16),
    "overseasEquity": (0.075, 0.18),
    "overseasFixedIncome": (0.035, 0.06),
}
CMA_CORRELATION = {
    ("cash", "fixedIncome"): 0.1,
    ("fixedIncome", "equity"): -0.1,
    ("fixedIncome", "overseasFixedIncome"): 0.3,
    ("equity", "overseasEquity"): 0.55,
    ("equity", "commodity"): 0.1,
    ("commodity", "overseasEquity"): 0.15,
    ("overseasEquity", "overseasFixedIncome"): 0.2,
}
PERIODS_PER_YEAR = {"YEAR": 1, "MONTH": 12, "WEEK": 52, "DAY": 250}
DEFAULT_PERIODS = {"YEAR": 10, "MONTH": 12, "WEEK": 52, "DAY": 250}
MAX_PERIODS = 600
QUANTILES = (
    ("p5", -1.6448536269514722),
    ("p25", -0.6744897501960817),
    ("p50", 0.0),
    ("p75", 0.6744897501960817),
    ("p95", 1.6448536269514722),
)


# ---------------------------------------------------------------- inputs


def positions(world: World, args: dict, tool: str, list_field: str, size_field: str) -> dict[str, float]:
    """Merged ``{code: size}`` of a position list; ToolInputError for unknown codes or bad sizes."""
    items = args.get(list_field)
    if not isinstance(items, list) or not items:
        raise ToolInputError(f"{tool}: {list_field} must be a non-empty list")
    out: dict[str, float] = {}
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ToolInputError(f"{tool}: {list_field}[{i}] must be an object")
        code = item.get("fundCode")
        if not isinstance(code, str) or world.fund_stub(code) is None:
            raise ToolInputError(f"{tool}: {list_field}[{i}].fundCode {code!r} is not a known fund")
        size = item.get(size_field, 1.0) if size_field else 1.0
        if not isinstance(size, int | float) or isinstance(size, bool) or size < 0:
            raise ToolInputError(f"{tool}: {list_field}[{i}].{size_field} must be a non-negative number")
        out[code] = out.get(code, 0.0) + float(size)
    if sum(out.values()) <= 0:
        raise ToolInputError(f"{tool}: the {size_field} values of {list_field} add up to zero")
    return out


def aligned_returns(world: World, codes: list[str], days: int) -> tuple[list[str], dict[str, list[float]]]:
    """Common trading dates and each fund's daily returns on them (the youngest fund bounds the window)."""
    rows = {c: world.recent_returns(c, days) for c in codes}
    n = min(len(r) for r in rows.values())
    dates = [d for d, _ in rows[codes[0]][len(rows[codes[0]]) - n :]] if n else []
    return dates, {c: [r for _, r in rows[c][len(rows[c]) - n :]] for c in codes}


def pair_correlations(codes: list[str], rets: dict[str, list[float]]) -> list[tuple[str, str, float]]:
    """Correlation of every fund pair, in input order."""
    return [(a, b, correlation(rets[a], rets[b])) for i, a in enumerate(codes) for b in codes[i + 1 :]]


def normalised(sizes: dict[str, float]) -> dict[str, float]:
    """Sizes scaled to fractions summing to 1."""
    total = sum(sizes.values())
    return {c: s / total for c, s in sizes.items()}


def look_through(world: World, sizes: dict[str, float]) -> dict[str, float]:
    """Portfolio fractions per asset class from each fund's asset allocation (gold funds' stocks count as 商品)."""
    weights = normalised(sizes)
    out = dict.fromkeys(ASSET_CLASSES, 0.0)
    for code, w in weights.items():
        stub = world.require_stub(code)
        parts = dict(zip(("股票", "债券", "现金", "其他"), asset_ratios(world, stub), strict=True))
        total = sum(parts.values()) or 1.0
        for name, ratio in parts.items():
            cls = "商品" if name == "股票" and stub.theme == "黄金" else name
            out[cls] = out.get(cls, 0.0) + w * ratio / total
    return out


def backtest(world: World, sizes: dict[str, float]) -> dict[str, Any]:
    """Back-test figures and the NAV curve of a buy-and-hold portfolio."""
    codes = list(sizes)
    dates, rets = aligned_returns(world, codes, BACKTEST_DAYS)
    if len(dates) < 2:
        raise ToolInputError("the funds have no common trading history yet; try funds set up earlier")
    port = portfolio_returns(normalised(sizes), rets)
    m = return_metrics(port)
    levels = levels_from_returns(port)[1:]
    picks = list(range(0, len(dates), NAV_SAMPLE_STEP))
    if picks[-1] != len(dates) - 1:
        picks.append(len(dates) - 1)
    return {
        "dates": dates,
        "returns": port,
        "rets": rets,
        "metrics": m,
        "navSeries": [{"date": dates[i], "nav": round(levels[i], 4)} for i in picks],
    }


def score_0_100(annual: float, volatility: float, drawdown: float) -> float:
    """Return-for-risk score: higher return, lower volatility and drawdown score higher."""
    return round(max(0.0, min(100.0, 50 + 300 * annual - 80 * volatility - 100 * drawdown)), 2)


def diversification_text(avg: float | None) -> str:
    """Plain-language reading of the mean pairwise correlation."""
    if avg is None:
        return "只有一只基金，无法评估分散效果，建议搭配不同类型的基金"
    if avg >= 0.8:
        return "基金之间走势高度相关，分散效果弱，建议加入债券或海外等低相关资产"
    if avg >= 0.5:
        return "基金之间相关性偏高，分散效果一般，可适当增加不同风格或资产类别"
    if avg >= 0.2:
        return "基金之间相关性适中，具有一定的分散效果"
    return "基金之间相关性低，分散效果好"


# ---------------------------------------------------------------- builders


@qieman_builder("GetFundsCorrelation")
def build_correlation(ctx: BuildContext, args: dict) -> dict:
    """Pairwise correlations of daily returns over the last year (or the common life of the funds)."""
    world = ctx.world
    codes = list(positions(world, args, "GetFundsCorrelation", "fundList", ""))
    dates, rets = aligned_returns(world, codes, CORRELATION_DAYS)
    pairs = pair_correlations(codes, rets)
    avg = sum(c for _, _, c in pairs) / len(pairs) if pairs else None
    radar = 50.0 if avg is None else round(100 * (1 - max(0.0, avg)), 2)
    window = f"{dates[0]}至{dates[-1]}" if dates else "暂无共同区间"
    return {
        "funds": [{"fundCode": c, "fundName": world.require_stub(c).name} for c in codes],
        "correlationMatrix": [{"fundCodeA": a, "fundCodeB": b, "correlation": r4(c)} for a, b, c in pairs],
        "averageCorrelation": None if avg is None else r4(avg),
        "radarScore": radar,
        "diagnosis": f"统计区间{window}（{len(dates)}个交易日）：{diversification_text(avg)}",
    }


@qieman_builder("GetFundsBackTest")
def build_backtest(ctx: BuildContext, args: dict) -> dict:
    """Buy-and-hold back-test of the positions over up to three years."""
    world = ctx.world
    tool = "GetFundsBackTest"
    sizes = positions(world, args, tool, "fundList", "amount")
    try:
        bt = backtest(world, sizes)
    except ToolInputError as exc:
        raise ToolInputError(f"{tool}: {exc}") from None
    m = bt["metrics"]
    vol = m["volatility"] or 0.0
    radar = score_0_100(m["annual"], vol, m["max_drawdown"])
    return {
        "startDate": bt["dates"][0],
        "endDate": bt["dates"][-1],
        "totalReturn": r4(m["total"]),
        "annualReturn": r4(m["annual"]),
        "maxDrawdown": r4(-m["max_drawdown"]),
        "volatility": r4(vol),
        "sharpeRatio": round(m["sharpe"] or 0.0, 2),
        "navSeries": bt["navSeries"],
        "radarScore": radar,
        "diagnosis": (
            f"回测区间{bt['dates'][0]}至{bt['dates'][-1]}，组合累计收益{m['total'] * 100:.2f}%，年化收益"
            f"{m['annual'] * 100:.2f}%，最大回撤{m['max_drawdown'] * 100:.2f}%，年化波动{vol * 100:.2f}%。"
            + (
                "收益风险比较好。"
                if radar >= 60
                else "收益风险比一般。"
                if radar >= 40
                else "收益风险比偏弱，建议优化配置。"
            )
        ),
    }


def _score_1_5(x: float) -> float:
    return round(max(1.0, min(5.0, x)), 1)


@qieman_builder("DiagnoseFundPortfolio")
def build_diagnose_portfolio(ctx: BuildContext, args: dict) -> dict:
    """Scores for diversification, asset mix and returns, with look-through mix, back-test and advice."""
    world = ctx.world
    tool = "DiagnoseFundPortfolio"
    sizes = positions(world, args, tool, "fundList", "amount")
    codes = list(sizes)
    try:
        bt = backtest(world, sizes)
    except ToolInputError as exc:
        raise ToolInputError(f"{tool}: {exc}") from None
    m = bt["metrics"]
    pairs = pair_correlations(codes, {c: r[-CORRELATION_DAYS:] for c, r in bt["rets"].items()})
    avg = sum(c for _, _, c in pairs) / len(pairs) if pairs else None
    mix = look_through(world, sizes)
    equity = mix["股票"]
    diversification = _score_1_5(1.5 if avg is None else 5.0 - 4.0 * max(0.0, avg))
    asset_mix = _score_1_5(5.0 - 6.0 * abs(equity - 0.5) - (1.0 if max(mix.values()) > 0.9 else 0.0))
    returns = _score_1_5(3.0 + 20.0 * (m["annual"] - 0.03) - 5.0 * m["max_drawdown"])
    overall = _score_1_5((diversification + asset_mix + returns) / 3)
    suggestions = []
    if avg is None or avg >= 0.5:
        suggestions.append(
            "持仓基金走势相近，可加入与现有持仓低相关的资产（如债券、黄金或海外资产）提升分散度"
        )
    if equity > 0.8:
        suggestions.append("权益仓位偏高，波动与回撤可能较大，可配置部分固收类基金平衡风险")
    elif equity < 0.1:
        suggestions.append("几乎没有权益资产，长期收益弹性有限，可根据风险承受能力逐步增加权益配置")
    if m["max_drawdown"] > 0.2:
        suggestions.append("历史最大回撤超过20%，请确认能否承受，或采用定投、分批买入降低择时风险")
    if len(codes) > 10:
        suggestions.append("持有基金数量较多，可精简风格重复的基金，便于跟踪管理")
    if not suggestions:
        suggestions.append("组合整体配置较均衡，建议定期（如每半年）检视并再平衡")
    vol = m["volatility"] or 0.0
    return {
        "overallScore": overall,
        "scores": {"diversification": diversification, "assetMix": asset_mix, "returns": returns},
        "assetAllocation": [{"assetClass": k, "ratio": r4(v)} for k, v in mix.items() if v > 0],
        "averageCorrelation": None if avg is None else r4(avg),
        "backTest": {
            "annualReturn": r4(m["annual"]),
            "maxDrawdown": r4(-m["max_drawdown"]),
            "volatility": r4(vol),
            "sharpeRatio": round(m["sharpe"] or 0.0, 2),
        },
        "suggestions": suggestions,
        "summary": (
            f"组合共{len(codes)}只基金，综合评分{overall}分（满分5分）：股票类资产约占{equity * 100:.1f}%，"
            f"近{len(bt['dates']) // 250 or 1}年回测年化收益{m['annual'] * 100:.2f}%，最大回撤{m['max_drawdown'] * 100:.2f}%。"
        ),
    }


@qieman_builder("AnalyzePortfolioRisk")
def build_portfolio_risk(ctx: BuildContext, args: dict) -> dict:
    """Risk score and factor-fit quality of a weighted portfolio over the last year."""
    world = ctx.world
    tool = "AnalyzePortfolioRisk"
    sizes = positions(world, args, tool, "holdings", "weight")
    total = sum(sizes.values())
    if total > 1.0001:
        raise ToolInputError(f"{tool}: holdings weights add up to {total:.4f}; they must not exceed 1")
    codes = list(sizes)
    dates, rets = aligned_returns(world, codes, CORRELATION_DAYS)
    if len(dates) < 2:
        raise ToolInputError(f"{tool}: the funds have no common trading history yet")
    port = portfolio_returns(normalised(sizes), rets)
    vol = annual_volatility(port) or 0.0
    fit = fit_against_factors(world, dates, port)
    key = json.dumps(sorted(sizes.items()))
    h = derive_seed(ctx.seed, "portfolio_id", key)
    letters = "".join(chr(97 + (h >> (5 * i)) % 26) for i in range(8))
    stamp = time(8 + (h >> 40) % 10, (h >> 48) % 60, (h >> 56) % 60)
    return {
        "portfolioId": f"ai_user_{letters}_{world.as_of:%Y%m%d}{stamp:%H%M%S}",
        "riskScore": risk_score(vol),
        "rSquared": None if fit is None else r4(fit["r_squared"]),
        "residualVariance": None if fit is None else float(f"{fit['residual_variance']:.3g}"),
        "standardError": None if fit is None else r4(fit["standard_error"]),
        "effectiveDate": last_month_end(world.as_of).isoformat(),
        "status": "SUCCESS",
    }


@qieman_builder("GetAssetAllocation")
def build_asset_allocation(ctx: BuildContext, args: dict) -> dict:
    """Look-through amounts per asset class of the positions."""
    world = ctx.world
    sizes = positions(world, args, "GetAssetAllocation", "fundList", "amount")
    total = sum(sizes.values())
    mix = look_through(world, sizes)
    equity, bonds, cash = mix["股票"], mix["债券"], mix["现金"]
    radar = round(max(0.0, 100 - 120 * abs(equity - 0.5) - (20 if max(mix.values()) > 0.9 else 0)), 2)
    if equity >= 0.8:
        text = "以权益资产为主，进攻性强但波动较大"
    elif equity >= 0.4:
        text = "股债搭配较均衡，兼顾收益与波动"
    elif bonds + cash >= 0.8:
        text = "以固收和现金类资产为主，稳健但长期收益弹性有限"
    else:
        text = "偏稳健配置，权益资产占比较低"
    return {
        "totalAmount": round(total, 2),
        "assetClassDetails": [
            {"assetClass": k, "amount": round(total * v, 2), "ratio": r4(v)} for k, v in mix.items() if v > 0
        ],
        "radarScore": radar,
        "diagnosis": f"股票类约{equity * 100:.1f}%，债券类约{bonds * 100:.1f}%，现金类约{cash * 100:.1f}%：{text}。",
    }


def _mix_moments(weights: dict[str, float]) -> tuple[float, float]:
    mean = sum(w * CMA[k][0] for k, w in weights.items())
    var = 0.0
    keys = list(weights)
    for a in keys:
        for b in keys:
            rho = 1.0 if a == b else CMA_CORRELATION.get((a, b), CMA_CORRELATION.get((b, a), 0.0))
            var += weights[a] * weights[b] * CMA[a][1] * CMA[b][1] * rho
    return mean, math.sqrt(var)


def _count(args: dict, field: str, tool: str, default: int, lo: int, hi: int) -> int:
    value = args.get(field)
    if value is None:
        return default
    if (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or int(value) != value
        or not lo <= value <= hi
    ):
        raise ToolInputError(f"{tool}: {field} must be a whole number from {lo} to {hi}, got {value!r}")
    return int(value)


@qieman_builder("MonteCarloSimulate")
def build_monte_carlo(ctx: BuildContext, args: dict) -> dict:
    """Percentiles of cumulative return per period for an asset-class mix (see the module docstring)."""
    tool = "MonteCarloSimulate"
    raw = args.get("weights")
    if not isinstance(raw, dict) or not raw:
        raise ToolInputError(
            f"{tool}: weights must be an object of asset-class fractions, e.g. {{'equity': 0.6}}"
        )
    unknown = sorted(set(raw) - set(CMA))
    if unknown:
        raise ToolInputError(f"{tool}: weights has unknown asset classes {unknown}; expected {list(CMA)}")
    weights = {}
    for k, w in raw.items():
        if not isinstance(w, int | float) or isinstance(w, bool) or not 0 <= w <= 1:
            raise ToolInputError(f"{tool}: weights.{k} must be a fraction from 0 to 1, got {w!r}")
        weights[k] = float(w)
    total = sum(weights.values())
    if abs(total - 1.0) > 0.01:
        raise ToolInputError(f"{tool}: weights add up to {total:.4f}; they must add up to 1")
    frequency = args.get("frequency") or "YEAR"
    if frequency not in PERIODS_PER_YEAR:
        raise ToolInputError(f"{tool}: frequency {frequency!r} must be one of {list(PERIODS_PER_YEAR)}")
    periods = _count(args, "periodCount", tool, DEFAULT_PERIODS[frequency], 1, MAX_PERIODS)
    paths = _count(args, "simulationCount", tool, 10000, 1000, 10_000_000)
    mean, vol = _mix_moments({k: w / total for k, w in weights.items()})
    # lognormal per-year growth with the mix's arithmetic mean and volatility
    s2 = math.log(1.0 + vol * vol / (1.0 + mean) ** 2)
    mu_log = math.log(1.0 + mean) - s2 / 2
    dt = 1.0 / PERIODS_PER_YEAR[frequency]
    rng = rng_for(ctx.seed, "monte_carlo", json.dumps(args, sort_keys=True, ensure_ascii=False))
    results = []
    for k in range(1, periods + 1):
        m, s = mu_log * k * dt, math.sqrt(s2 * k * dt)
        row: dict[str, Any] = {"period": k}
        values = []
        for _, z in QUANTILES:
            q = phi(z)
            density = math.exp(-z * z / 2) / math.sqrt(2 * math.pi)
            se = (
                math.sqrt(q * (1 - q) / paths) / density
            )  # sampling error of an empirical quantile, in z units
            values.append(math.exp(m + s * (z + se * normal(rng))) - 1.0)
        for (name, _), x in zip(QUANTILES, sorted(values), strict=True):
            row[name] = r6(x)
        loss = phi(-m / s) if s > 0 else (1.0 if m < 0 else 0.0)
        row["lossProbability"] = r4(
            min(1.0, max(0.0, loss + math.sqrt(loss * (1 - loss) / paths) * normal(rng)))
        )
        results.append(row)
    return {
        "frequency": frequency,
        "periodCount": periods,
        "simulationCount": paths,
        "expectedAnnualReturn": r4(mean),
        "expectedAnnualVolatility": r4(vol),
        "results": results,
        "chartUrl": None,
    }
