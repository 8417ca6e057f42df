"""Strategies (fund portfolios): universe of codes, risk info, compositions, asset classes, NAV."""

from __future__ import annotations

from array import array
from dataclasses import asdict, dataclass
from datetime import date, timedelta
from itertools import accumulate, repeat
from operator import add, mul
from typing import TYPE_CHECKING, TypedDict

from finmcp.recordings.plumbing.seeding import rng_for

from . import trading_calendar as cal
from . import vocab as v
from .asset_classes import asset_class_tree, leaf_for_fund
from .navs import NavSeries, performance, year_bounds
from .rng import pick, proportional_bp, sample, split_basis_points, weighted_pick

_ONE = 1.0

if TYPE_CHECKING:
    from .view import WorldView

N_STRATEGIES = 300
_RISK_SCORE = {1: (1, 5), 2: (6, 20), 3: (21, 45), 4: (46, 70), 5: (71, 100)}
# category mixes (fund type -> relative weight) by risk level
_MIX = {
    1: {"货币型": 1.0},
    2: {"债券型": 7.0, "货币型": 0.5, "指数型": 1.2, "股票型": 0.5, "混合型": 0.4},
    3: {"债券型": 4.0, "混合型": 2.0, "指数型": 2.0, "股票型": 1.0, "QDII型": 0.6, "货币型": 0.4},
    4: {"指数型": 3.0, "混合型": 3.0, "股票型": 2.0, "QDII型": 1.0, "货币型": 0.8, "债券型": 0.5},
    5: {"股票型": 4.0, "指数型": 3.0, "混合型": 2.0, "QDII型": 1.0},
}


class CompositionPart(TypedDict):
    """One fund of a strategy's composition (weights of all parts add up to 10000 basis points)."""

    fund_code: str
    fund_name: str
    fund_full_name: str
    fund_type: str
    category: str
    category_code: str
    weight_bp: int
    weight: float


@dataclass
class Strategy:
    """A fund portfolio strategy; ``composition`` weights are basis points summing to 10000."""

    code: str
    name: str
    risk_level: int
    risk_name: str
    risk_score: int
    recommended_holding: str
    setup_date: str
    manager_name: str
    intro: str
    description: str
    target_return: str
    score_effective_date: str
    composition: list[CompositionPart]
    asset_classes: list[dict]

    def to_dict(self) -> dict:
        return asdict(self)

    def category_weights(self) -> dict[str, float]:
        """Composition category -> total weight (fraction)."""
        out: dict[str, int] = {}
        for c in self.composition:
            out[c["category"]] = out.get(c["category"], 0) + c["weight_bp"]
        return {k: round(bp / 10000, 4) for k, bp in out.items()}


def build_strategy_codes(seed: int, extra: tuple[str, ...]) -> list[str]:
    """The strategy universe: ZH + 6 digits codes plus any extra codes, sorted."""
    rng = rng_for(seed, "strategy_universe")
    codes: set[str] = set()
    while len(codes) < N_STRATEGIES:
        codes.add(f"ZH{rng.randrange(1000, 70000):06d}")
    codes.update(extra)
    return sorted(codes)


def build_strategy(world: WorldView, code: str, name: str | None = None) -> Strategy:
    """One strategy, its composition over world funds and its asset-class tree; ``name`` (an adopted
    strategy's real name) replaces the drawn one and leaves every other field as drawn."""
    rng = rng_for(world.seed, "strategy", code)
    level = weighted_pick(rng, (1, 2, 3, 4, 5), (1, 3, 3, 3, 1))
    drawn = pick(rng, v.STRATEGY_NAME_PARTS_A) + pick(rng, v.STRATEGY_NAME_PARTS_B)
    name = name or drawn
    lo, hi = _RISK_SCORE[level]
    setup = cal.trading_day_on_or_before(date(2015, 6, 1) + timedelta(days=rng.randrange(3000)))
    mix = _MIX[level]
    types = [t for t in mix if rng.random() < 0.85 or t == max(mix, key=mix.__getitem__)]
    raw = [mix[t] * (0.6 + 0.8 * rng.random()) for t in types]
    type_bp = proportional_bp(raw)
    composition: list[CompositionPart] = []
    for t, bp in zip(types, type_bp, strict=True):
        pool = [
            c
            for c in world.codes_by_type(t)
            if world.require_stub(c).setup_date <= setup + timedelta(days=900)
        ]
        pool = pool or world.codes_by_type(t)
        chosen = sorted(sample(rng, pool, min(len(pool), 1 + rng.randrange(5 if bp > 1500 else 2))))
        parts = (
            split_basis_points(rng, len(chosen), bp) if bp >= len(chosen) else [bp] + [0] * (len(chosen) - 1)
        )
        category, category_code = v.FUND_TYPE_CATEGORY[t]
        for fc, p in zip(chosen, parts, strict=True):
            if p <= 0:
                continue
            stub = world.require_stub(fc)
            composition.append(
                {
                    "fund_code": fc,
                    "fund_name": stub.name,
                    "fund_full_name": stub.full_name,
                    "fund_type": t,
                    "category": category,
                    "category_code": category_code,
                    "weight_bp": p,
                    "weight": round(p / 10000, 4),
                }
            )
    leaf_bp: dict[str, int] = {}
    for c in composition:
        leaf = leaf_for_fund(world.require_stub(c["fund_code"]))
        leaf_bp[leaf] = leaf_bp.get(leaf, 0) + c["weight_bp"]
    target = {1: "2%-3%", 2: "4%-6%", 3: "6%-8%", 4: "8%-12%", 5: "10%-15%"}[level]
    holding = v.HOLDING_DURATIONS[level]
    manager = pick(rng, v.STRATEGY_MANAGERS)
    intro = f"以{'、'.join(v.FUND_TYPE_CATEGORY[t][0] for t in types)}为主的{v.RISK_LEVEL_NAMES[level]}组合，建议持有{holding}。"
    desc = (
        f"{name}由{manager}管理，自{setup.year}年{setup.month}月运行，目标年化收益率{target}；"
        f"根据市场环境动态调整各类资产仓位，{'严控回撤' if level <= 2 else '追求长期增值'}。"
    )
    score_date = date(world.as_of.year, world.as_of.month, 1) - timedelta(days=1)
    return Strategy(
        code,
        name,
        level,
        v.RISK_LEVEL_NAMES[level],
        lo + rng.randrange(hi - lo + 1),
        holding,
        setup.isoformat(),
        manager,
        intro,
        desc,
        target,
        score_date.isoformat(),
        composition,
        asset_class_tree(leaf_bp),
    )


def strategy_span(world: WorldView, strategy: Strategy) -> tuple[int, int]:
    """Global trading-day indices of the strategy NAV's first (setup) and last (as_of) days."""
    return cal.index_on_or_after(date.fromisoformat(strategy.setup_date)), cal.index_on_or_before(world.as_of)


def strategy_returns(world: WorldView, strategy: Strategy, lo_g: int, e: int) -> list[float]:
    """The strategy's daily returns on global trading days ``lo_g..e`` (``lo_g`` at or after its setup).

    Each day's is the weighted sum of the returns of the funds that exist that day over their weights
    (0.0 on a day with none), summed fund by fund in composition order: a day's value does not depend
    on the days around it, so any span gives the same floats as the whole history.
    """
    s = strategy_span(world, strategy)[0]
    days = cal.all_trading_days()
    num = [0.0] * (e - lo_g + 1)
    den = [0.0] * (e - lo_g + 1)
    for c in strategy.composition:
        stub = world.require_stub(c["fund_code"])
        weight = c["weight_bp"]
        first = max(s, cal.index_on_or_after(stub.setup_date)) + 1  # a fund's first day has no return
        first = max(first, lo_g)
        if first > e:
            continue
        as_float = float(weight)  # int * float and float + int convert the int exactly like this
        for year in range(days[first].year, days[e].year + 1):
            lo, hi = year_bounds(year)
            chunk = world.fund_returns_year(stub, year)
            a, b = max(first, lo), min(e + 1, hi)
            # num[g] += weight * r[g] and den[g] += weight over the year's days, a slice at a time
            num[a - lo_g : b - lo_g] = map(
                add, num[a - lo_g : b - lo_g], map(as_float.__mul__, chunk[a - lo : b - lo])
            )
            den[a - lo_g : b - lo_g] = map(as_float.__add__, den[a - lo_g : b - lo_g])
    return [total / weights if weights else 0.0 for total, weights in zip(num, den, strict=True)]


def running_values(rets: list[float], x: float) -> list[float]:
    """``x *= 1.0 + r`` for each return, every value (``x`` itself not included), unrounded."""
    running = accumulate(map(_ONE.__add__, rets), mul, initial=x)
    next(running)  # the initial x is no day
    return list(running)


def year_end_indices(s: int, e: int) -> list[int]:
    """Global indices of the last trading day of each year from day ``s``'s to the year before ``e``'s."""
    if e < s:
        return []
    days = cal.all_trading_days()
    return [year_bounds(year)[1] - 1 for year in range(days[s].year, days[e].year)]


def build_strategy_nav(world: WorldView, strategy: Strategy) -> tuple[NavSeries, dict, array]:
    """Daily NAV from the setup date: daily-rebalanced weighted fund returns (weights renormalised over
    the funds that already exist on a day; a day with none is flat), its performance, and marks: the
    unrounded running value on each year's last day before as_of's year (:func:`year_end_indices`),
    from which any later span continues (:func:`strategy_returns`, :func:`running_values`).

    Reads each constituent's daily returns for the strategy's years only (``World.fund_returns_year``),
    not its whole NAV history since its own setup: a fund's return on a day is the same either way.
    """
    s, e = strategy_span(world, strategy)
    # x *= 1.0 + r day by day, then round(x, 6) and round(., 4): the same operations, run by C loops
    xs = running_values(strategy_returns(world, strategy, s, e), 1.0)
    adj = list(map(round, xs, repeat(6)))
    navs = array("d", map(round, adj, repeat(4)))
    series = NavSeries(s, cal.all_trading_day_strings()[s : e + 1], navs, navs, array("d", adj))
    marks = array("d", (xs[g - s] for g in year_end_indices(s, e)))
    return series, performance(series), marks
