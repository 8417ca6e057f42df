"""Builders for the Qieman fund attribution and behaviour tools: benchmark, Brinson, Campisi, timing,
recovery and dives."""

from __future__ import annotations

import math
from datetime import date

from finmcp.recordings.plumbing.seeding import derive_seed
from finmcp.server.sim.qieman.common import code_list_arg, r4, r6
from finmcp.server.sim.qieman.fund_windows import (
    NAV_WINDOWS,
    factor_returns,
    fund_and_window,
    fund_or_error,
    index_return,
    known_funds,
    month_end_positions,
    nav_window,
    split_total,
    window_dates,
    window_key,
)
from finmcp.server.sim.registry import BuildContext, ToolInputError, qieman_builder
from finmcp.server.world import vocab as v
from finmcp.server.world.fund_profiles import LATEST, bond_ratio, duration_years, industry_weights
from finmcp.server.world.funds import Fund
from finmcp.server.world.quant import (
    TRADING_DAYS_PER_YEAR,
    annual_volatility,
    daily_returns,
    levels_from_returns,
    phi,
    recovery_days,
)
from finmcp.server.world.rng import unit


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


@qieman_builder("getFundBrinsonIndicator")
def build_brinson(ctx: BuildContext, args: dict) -> dict:
    """Brinson attribution of the fund's excess return over the CSI 300 in a window."""
    tool = "getFundBrinsonIndicator"
    world, fund, window = fund_and_window(ctx, args, tool, "timePeriod", "LAST_YEAR")
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
    alloc_parts = split_total(allocation, weights, world, fund.code, window, "alloc")
    sel_parts = split_total(selection, weights, world, fund.code, window, "sel")
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
    stub = world.require_stub(fund.code)
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


@qieman_builder("getMarketTimingIndicator")
def build_market_timing(ctx: BuildContext, args: dict) -> dict:
    """Monthly timing statistics against the CSI 300 over a window."""
    tool = "getMarketTimingIndicator"
    world, fund, window = fund_and_window(ctx, args, tool, "timeInterval", "LAST_YEAR", NAV_WINDOWS)
    series, lo, hi = nav_window(world, fund, window)
    idx = world.index_series("000300")
    ends = month_end_positions(series, lo, hi) if hi > lo else [lo]
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
    for fund in known_funds(world, code_list_arg(args, "fundCodeList", tool)):
        series, lo, hi = nav_window(world, fund, window)
        rets = daily_returns(series.adj, lo, hi)
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
