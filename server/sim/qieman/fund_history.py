"""Builders for the Qieman fund history tools: NAV history, window performance, splits and dividends."""

from __future__ import annotations

from datetime import date
from typing import Any

from finmcp.recordings.plumbing.seeding import rng_for
from finmcp.server.sim.qieman.common import choice_arg, cn_trading_dates
from finmcp.server.sim.qieman.fund_batch import batch, batch_tool
from finmcp.server.sim.registry import BuildContext, ToolInputError, qieman_builder
from finmcp.server.world import World
from finmcp.server.world.dates import shift_months
from finmcp.server.world.funds import Fund

DIMENSIONS = (
    "oneMonth",
    "quarter",
    "halfYear",
    "oneYear",
    "twoYear",
    "threeYear",
    "fiveYear",
    "thisYear",
    "setupDay",
)


_DIMENSION_MONTHS = {
    "oneMonth": 1,
    "quarter": 3,
    "halfYear": 6,
    "oneYear": 12,
    "twoYear": 24,
    "threeYear": 36,
    "fiveYear": 60,
}


def _window_start(dimension: str, last: date) -> date | None:
    if dimension == "setupDay":
        return None
    if dimension == "thisYear":
        return date(last.year, 1, 1)
    return shift_months(last, -_DIMENSION_MONTHS[dimension])


@qieman_builder("BatchGetFundNavHistory")
def build_nav_history(ctx: BuildContext, args: dict[str, Any]) -> list[dict[str, Any]]:
    """Daily NAV rows over a window ending at the latest NAV (newest first unless ``isDesc`` is false).

    A window is valid when the fund existed at its start; asking for an invalid one returns the whole
    history with ``curDimensionType`` ``setupDay``.
    """
    tool = "BatchGetFundNavHistory"
    dimension = choice_arg(args, "dimensionType", tool, DIMENSIONS, "oneMonth")
    desc = args.get("isDesc", True)
    if not isinstance(desc, bool):
        raise ToolInputError(f"{tool}: isDesc must be true or false, got {desc!r}")

    def data(c: BuildContext, fund: Fund) -> dict[str, Any]:
        series = c.world.fund_nav_series(fund.code)[0]
        valid = {d: False for d in DIMENSIONS}
        current = dimension
        window = range(0)
        if series.dates:
            first, last = date.fromisoformat(series.dates[0]), date.fromisoformat(series.dates[-1])
            for d in DIMENSIONS:
                start = _window_start(d, last)
                valid[d] = start is None or first <= start
            if not valid[dimension]:
                current = "setupDay"
            window = series.positions(_window_start(current, last), None)  # only the days it prints
        # the rows column by column: cn_date of each day, the rounded NAV, pct_text of the rounded return
        adj, lo, hi = series.adj, window.start, window.stop
        days = cn_trading_dates()[series.start_index + lo : series.start_index + hi]
        returns = [None if i <= 0 else f"{round(adj[i] / adj[i - 1] - 1.0, 6) * 100:.2f}%" for i in window]
        points = [
            {"navDate": d, "nav": n, "dailyReturn": r}
            for d, n, r in zip(days, series.nav[lo:hi], returns, strict=True)
        ]
        if desc:
            points.reverse()
        return {
            "code": fund.code,
            "curDimensionType": current,
            "allDimension": [{"type": d, "isValid": valid[d]} for d in DIMENSIONS],
            "data": points,
        }

    return batch(ctx, args, tool, data)


_PERIODS = (
    ("oneWeek", "近1周", None),
    ("oneMonth", "近1月", 1),
    ("threeMonth", "近3月", 3),
    ("sixMonth", "近6月", 6),
    ("thisYear", "今年来", None),
    ("oneYear", "近1年", 12),
    ("twoYear", "近2年", 24),
    ("threeYear", "近3年", 36),
    ("fiveYear", "近5年", 60),
    ("setupDay", "成立来", None),
)


PEER_SAMPLE = 24
PEER_WINDOWS = tuple(months for _, _, months in _PERIODS if months is not None)


def peer_codes(world: World, fund_type: str) -> list[str]:
    """The seeded sample of funds of ``fund_type`` that GetBatchFundPerformance ranks a fund among."""
    codes = world.codes_by_type(fund_type)
    rng = rng_for(world.seed, "peer_sample", fund_type)
    if len(codes) <= PEER_SAMPLE:
        return list(codes)
    return sorted(rng.sample(sorted(codes), PEER_SAMPLE))


def _week_return(ctx: BuildContext, code: str) -> float | None:
    recent = ctx.world.recent_returns(code, 5)
    if len(recent) < 5:
        return None
    x = 1.0
    for _, r in recent:
        x *= 1.0 + r
    return round(x - 1.0, 6)


def _clip_score(x: float) -> float:
    return round(min(100.0, max(0.0, x)), 1)


@batch_tool("GetBatchFundPerformance")
def fund_performance(ctx: BuildContext, fund: Fund) -> dict[str, Any]:
    """Window returns with peer averages and ranks (peers: a seeded sample of the same fund type)."""
    perf = fund.performance
    peers = [c for c in peer_codes(ctx.world, fund.fund_type) if c != fund.code]
    periods = []
    one_year_pct = None
    for period, label, months in _PERIODS:
        own = _week_return(ctx, fund.code) if period == "oneWeek" else perf.get(label)
        bench = rank = None
        if months is not None and own is not None:
            values = [r for c in peers if (r := ctx.world.quick_return(c, months)) is not None]
            if values:
                bench = round(sum(values) / len(values), 6)
                position = 1 + sum(1 for r in values if r > own)
                rank = f"{position}/{len(values) + 1}"
                if period == "oneYear":
                    one_year_pct = 1.0 - (position - 1) / len(values)
        periods.append(
            {"period": period, "periodName": label, "returnRate": own, "benchmarkReturn": bench, "rank": rank}
        )
    drawdown, vol = perf.get("近1年最大回撤"), perf.get("近1年波动率")
    ret_score = _clip_score(100 * one_year_pct) if one_year_pct is not None else 50.0
    risk_score = _clip_score(100 - (vol or 0.0) * 250) if vol is not None else 50.0
    recovery = _clip_score(100 - (drawdown or 0.0) * 300) if drawdown is not None else 50.0
    return {
        "fundCode": fund.code,
        "fundName": fund.name,
        "navDate": fund.latest["nav_date"] or fund.setup_date,
        "abilityScores": {
            "returnAbility": ret_score,
            "riskControlAbility": risk_score,
            "drawdownRecoveryAbility": recovery,
            "overallScore": round((ret_score + risk_score + recovery) / 3, 1),
        },
        "maxDrawdown": None if drawdown is None else -drawdown,
        "volatility": vol,
        "sharpeRatio": perf.get("近1年夏普"),
        "periodReturns": periods,
    }


@batch_tool("BatchGetFundsSplitHistory")
def split_history(ctx: BuildContext, fund: Fund) -> dict[str, Any]:
    """Share splits, newest first (most funds have none)."""
    records = [
        {"splitDate": s["date"], "splitType": s["type"], "splitRatio": s["ratio"]}
        for s in reversed(fund.splits)
    ]
    return {"fundCode": fund.code, "fundName": fund.name, "splitRecords": records}


@batch_tool("BatchGetFundsDividendRecord")
def dividend_record(ctx: BuildContext, fund: Fund) -> dict[str, Any]:
    """Cash dividends, newest first."""
    records = [
        {
            "recordDate": d["record_date"],
            "exDividendDate": d["ex_date"],
            "paymentDate": d["pay_date"],
            "dividendPerShare": d["cash_per_unit"],
        }
        for d in reversed(fund.dividends)
    ]
    return {
        "fundCode": fund.code,
        "fundName": fund.name,
        "totalDividendCount": len(records),
        "dividendRecords": records,
    }
