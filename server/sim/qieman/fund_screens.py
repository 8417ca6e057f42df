"""Builders for the Qieman fund screens (``filter*``, ``getBondFundWithAlertRecord``).

Screens scan the world's funds of the right type from the cheap per-fund profiles cached once per
world; the asset mix used there reproduces ``World.fund``'s exactly (a test guards this).
``thresholdList`` values are fractions for weights and multiples for turnover; ``eq`` matches within
half a percentage point (0.05 for turnover); results are sorted highest value first and cut to
``maxResultSize`` (default 20); ``total`` counts the funds returned. The dive-alert screen examines
the 150 largest bond funds (bounded work per call).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from finmcp.server.sim.qieman.common import choice_arg, r4, r6
from finmcp.server.sim.qieman.fund_bonds import rating_type
from finmcp.server.sim.qieman.fund_windows import latest_report_date, report_date_arg, window_key
from finmcp.server.sim.registry import BuildContext, ToolInputError, qieman_builder
from finmcp.server.world import World
from finmcp.server.world.fund_profiles import (
    BOND_TYPE_GROUPS,
    BOND_TYPE_NAMES,
    LATEST,
    RATING_BUCKETS,
    asset_ratios,
    bond_denominator_factor,
    bond_type_mix,
    rating_mix,
    turnover_rate,
)
from finmcp.server.world.funds import FundStub

DEFAULT_MAX_RESULTS = 20
_OPERATORS = ("eq", "lt", "gt", "lte", "gte", "between")
ALERT_SCAN_SIZE = 150
ALERT_LOOKBACK_DAYS = 20
_ASSET_TYPES_CAMEL = ("totalAsset", "totalNetAsset", "bondAsset")


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
    op = choice_arg(args, "operator", tool, _OPERATORS, "between" if len(thresholds) == 2 else "gte")
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
            stub = world.require_stub(code)
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
    asset_type = choice_arg(args, "assetType", tool, _ASSET_TYPES_CAMEL, default_asset_type)
    field, bucket = label
    values = world.memo(
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
    rating = rating_type(args) or "长期AAA"
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
                stub = world.require_stub(code)
                out.append((code, stub.name, turnover_rate(world, stub, window)))
        return out

    values = world.memo(("screen_turnover", window), build)
    rows = [
        {"fundCode": c, "fundName": n, "reportDate": report, "turnoverRate": t}
        for c, n, t in values
        if accept(t)
    ]
    funds = _ranked(rows, "turnoverRate", limit)
    return {"total": len(funds), "funds": funds}


BOND_SCREENS = ("filterBondFundByBondType", "filterBondFundByCreditRating")


def warm_bond_screens(world: World) -> None:
    """Start-up work: every bond fund's asset ratios and latest bond-type mix (what each bond screen
    reads for ~700 funds; 80 ms on first use, about 310 KB kept, as the screens would keep them)."""
    for code in world.codes_by_type("债券型"):
        stub = world.require_stub(code)
        asset_ratios(world, stub)
        bond_type_mix(world, stub, LATEST)


def _alert_candidates(world: World) -> list[FundStub]:
    def build() -> list[FundStub]:
        stubs = [world.require_stub(c) for c in world.codes_by_type("债券型")]
        stubs.sort(key=lambda s: (-s.size_yi, s.code))
        return stubs[:ALERT_SCAN_SIZE]

    return world.memo(("alert_candidates",), build)


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
