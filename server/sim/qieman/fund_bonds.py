"""Builders for the Qieman bond-book tools: bond-type allocation, credit ratings and bond indicators."""

from __future__ import annotations

from finmcp.server.sim.qieman.common import choice_arg, r4
from finmcp.server.sim.qieman.fund_windows import (
    NAV_WINDOWS,
    fund_and_window,
    known_stubs,
    latest_report_entry,
    window_key,
)
from finmcp.server.sim.registry import BuildContext, qieman_builder
from finmcp.server.world.fund_profiles import (
    BOND_TYPE_NAMES,
    LATEST,
    RATING_BUCKETS,
    asset_ratios,
    bond_denominator_factor,
    bond_ratio,
    bond_type_mix,
    credit_style,
    drift,
    duration_style,
    duration_years,
    rating_mix,
    window_amplitude,
)

_ASSET_TYPES = ("total_asset", "total_net_asset", "bond_asset")


@qieman_builder("getBondAllocationByFundCode")
def build_bond_allocation(ctx: BuildContext, args: dict) -> dict:
    """Bond-type weights per fund with duration and credit styles (unknown codes skipped)."""
    world = ctx.world
    tool = "getBondAllocationByFundCode"
    window = window_key(args, "timeRange", tool, LATEST)
    asset_type = choice_arg(args, "assetType", tool, _ASSET_TYPES, "total_net_asset")
    funds = []
    for stub in known_stubs(world, args, "fundCodeList", tool, 50):
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
            latest_report_entry(
                world,
                stub,
                bondTypeAllocation=rows,
                durationStyle=duration_style(duration_years(world, stub, window)) if has_bonds else None,
                creditStyle=credit_style(rating_mix(world, stub, window)) if has_bonds else None,
            )
        )
    return {"timeRange": window, "assetType": asset_type, "funds": funds}


def rating_type(args: dict) -> str | None:
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
    only = rating_type(args)
    funds = []
    for stub in known_stubs(world, args, "fundCodeList", tool, 50):
        mix = rating_mix(world, stub, window) if asset_ratios(world, stub)[1] > 0 else {}
        dist = [
            {"ratingLevel": k, "weight": r4(mix[k])}
            for k in RATING_BUCKETS
            if k in mix and (only is None or k == only)
        ]
        funds.append(latest_report_entry(world, stub, ratingDistribution=dist))
    return {"timeRange": window, "funds": funds}


@qieman_builder("getBondIndicator")
def build_bond_indicator(ctx: BuildContext, args: dict) -> dict:
    """Duration, rate sensitivity, leverage and concentration of a fund's bond book."""
    tool = "getBondIndicator"
    world, fund, window = fund_and_window(ctx, args, tool, "timeInterval", "LAST_YEAR", NAV_WINDOWS)
    stub = world.require_stub(fund.code)
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
