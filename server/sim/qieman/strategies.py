"""Builders for the Qieman strategy (投顾组合) tools, formatted like the real server's answers.

Rules shared by the family:

- Codes come from ``World.strategy_codes()``; every code ``StrategySearchByKeyword`` returns resolves in
  every other strategy tool, and every fund code in a composition resolves in the fund tools.
- Unknown strategy codes are not errors when the answer can be empty: batch tools and
  ``GetStrategyDetails`` skip them, ``GetStrategyAssetClassAnalysis`` answers an empty tree and
  ``GetPortfolioNavHistory`` an empty ``navList``. Tools whose answer *is* one strategy's record
  (``GetStrategyRiskInfo``, ``GetStrategyBenchmark``) raise :class:`ToolInputError` naming the code,
  since their schema has no empty form. An empty or blank code is always a ``ToolInputError``.
- Percentages are strings with two decimals (``"5.97%"``), dates ``YYYY-MM-DD`` (``... 00:00:00`` where
  the real server prints a time), and integral numbers are printed without ``.0`` as the real server
  does (``"amount": 100``).
"""

from __future__ import annotations

import math
import re
import threading
import weakref
from collections.abc import Iterable
from datetime import date, timedelta
from typing import Any

from finmcp.recordings.plumbing.seeding import derive_seed, rng_for
from finmcp.server.sim.registry import BuildContext, ToolInputError, qieman_builder
from finmcp.server.world import World, queries
from finmcp.server.world.quant import TRADING_DAYS_PER_YEAR
from finmcp.server.world.rng import sample
from finmcp.server.world.strategies import CompositionPart, Strategy

STATUS_OK = "查询成功"
STRATEGY_URL = "https://qieman.com/alfa/portfolio/{code}"
AVATAR_URL = "https://asset2.qieman.com/images/{uuid}.png"
MISSING = "--"  # the real server's text for a metric it cannot compute
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

# Benchmark legs per top-level asset class: (index code or None, index name, fixed annual return or None)
_BENCHMARK_LEGS = {
    "30010101": (None, "一年期定期存款利率", 0.015),
    "30010102": (None, "中债综合指数", 0.035),
    "30010103": ("000300", "沪深300指数", None),
    "30010104": ("AU9999", "黄金9999", None),
}
_OVERSEAS_EQUITY = ("SPX", "标普500指数", None)


# ------------------------------------------------------------------ formatting helpers (used family-wide)
def tidy(value: Any) -> Any:
    """A copy of ``value`` where integral floats become ints, as the real server prints them."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: tidy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [tidy(v) for v in value]
    return value


def pct(fraction: float | None, digits: int = 2) -> str:
    """A fraction as the real server's percent text (``0.0597`` -> ``"5.97%"``); ``--`` when missing."""
    if fraction is None:
        return MISSING
    text = f"{fraction * 100:.{digits}f}%"
    return "0.00%" if text == "-0.00%" else text


def require_text(args: dict[str, Any], tool: str, field: str) -> str:
    """The non-blank string argument ``field`` (ToolInputError otherwise)."""
    value = args.get(field)
    if not isinstance(value, str) or not value.strip():
        raise ToolInputError(f"{tool}: {field} must be a non-empty string, got {value!r}")
    return value.strip()


def code_list(args: dict[str, Any], tool: str, field: str, required: bool = True) -> list[str]:
    """The list-of-codes argument ``field``, de-duplicated in order (ToolInputError on bad items)."""
    value = args.get(field)
    if value is None and not required:
        return []
    if not isinstance(value, list) or (required and not value):
        raise ToolInputError(f"{tool}: {field} must be a non-empty array of strings, got {value!r}")
    out: list[str] = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise ToolInputError(f"{tool}: {field}[{i}] must be a non-empty string, got {item!r}")
        if item.strip() not in out:
            out.append(item.strip())
    return out


def page_args(args: dict[str, Any], tool: str) -> tuple[int, int]:
    """(pageNum, pageSize), both >= 1."""
    page, size = args.get("pageNum", 1), args.get("pageSize", 20)
    for name, val in (("pageNum", page), ("pageSize", size)):
        if not isinstance(val, int) or isinstance(val, bool) or val < 1:
            raise ToolInputError(f"{tool}: {name} must be an integer >= 1, got {val!r}")
    return page, size


def date_time(iso_day: str | None) -> str | None:
    """``YYYY-MM-DD`` -> ``YYYY-MM-DD 00:00:00`` (the real server's timestamp text)."""
    return None if iso_day is None else f"{iso_day} 00:00:00"


def strategy_url(code: str) -> str:
    """The Qieman page of a strategy."""
    return STRATEGY_URL.format(code=code)


def paged_answer(rows: list, page: int, size: int) -> dict[str, Any]:
    """The real server's paged envelope ``{pageSize, rows, status, hasMoreRows}``."""
    return {
        "pageSize": size,
        "rows": rows[(page - 1) * size : page * size],
        "status": STATUS_OK,
        "hasMoreRows": page * size < len(rows),
    }


# ------------------------------------------------------------------ row builders
def _summary_row(st: Strategy) -> dict[str, Any]:
    return {
        "策略代码": st.code,
        "策略名称": st.name,
        "策略风险等级": st.risk_name,
        "策略简介": st.intro,
        "策略描述": st.description,
        "策略成立时间": st.setup_date,
    }


def _trailing(adj, end: int, base: int | None) -> float | None:
    return None if base is None or base < 0 or base >= end else adj[end] / adj[base] - 1.0


_FIGURE_WINDOWS = (
    "近1月",
    "近3月",
    "近6月",
    "近1年",
    "成立来",
    "成立来最大回撤",
    "近1年夏普",
    "近1年波动率",
    "年化收益",
)


def _nav_figures(world: World, st: Strategy) -> tuple[Any, ...]:
    """(NAV, its date, daily return, week return, then ``_FIGURE_WINDOWS``' performance values).

    A few floats per strategy, kept for the world's life: the NAV series they come from takes its
    funds' daily returns since the strategy's setup (about 10 ms), more than a detail call may spend.
    """

    def build() -> tuple[Any, ...]:
        found = world.strategy_nav(st.code)
        assert found is not None  # st is one of this world's strategies
        series, perf = found
        end = len(series.dates) - 1
        last_day = date.fromisoformat(series.dates[end])
        week_base = series.index_of(last_day - timedelta(days=7))
        return (
            series.adj[end],
            series.dates[end],
            series.daily_return(end),
            _trailing(series.adj, end, week_base),
            *(perf.get(k) for k in _FIGURE_WINDOWS),
        )

    return world.memo(("strategy_figures", st.code), build)


def warm_strategies(
    world: World, figures: bool, compositions: bool, codes: Iterable[str] | None = None
) -> None:
    """Start-up work: each strategy's detail figures and its funds' latest NAVs, strategy by strategy
    (its funds' yearly returns, drawn for the NAV, are still cached when their latest NAVs read them).

    ``codes``: only these strategies (default: every one). Simulators of several inventories sharing
    one world (the server's) warm it once: a second caller waits for the first, then finds it done.
    """
    with _WARM_LOCK:
        done = _WARMED.setdefault(world, set())
        wanted = {kind for kind, on in (("figures", figures), ("compositions", compositions)) if on}
        if codes is None and wanted <= done:
            return
        for code in world.strategy_codes() if codes is None else codes:
            st = world.require_strategy(code)
            if figures:
                _nav_figures(world, st)
            if compositions:
                for part in st.composition:
                    world.fund_latest(part["fund_code"])
        if codes is None:
            done |= wanted


_WARM_LOCK = threading.Lock()
_WARMED: weakref.WeakKeyDictionary[World, set[str]] = weakref.WeakKeyDictionary()


def _detail_row(world: World, st: Strategy) -> dict[str, Any]:
    nav, nav_date, daily, week, *values = _nav_figures(world, st)
    perf = dict(zip(_FIGURE_WINDOWS, values, strict=True))
    hexes = "".join(f"{derive_seed(world.seed, 'avatar', st.manager_name, k):016x}" for k in (0, 1))
    uuid = f"{hexes[:8]}-{hexes[8:12]}-{hexes[12:16]}-{hexes[16:20]}-{hexes[20:32]}"
    return {
        "策略代码": st.code,
        "策略名称": st.name,
        "策略简介": st.intro,
        "策略描述": st.description,
        "策略成立时间": st.setup_date,
        "策略风险等级": st.risk_name,
        "管理人名称": st.manager_name,
        "管理人简介": f"{st.manager_name}投资顾问团队",
        "管理人描述": None,
        "管理人头像": AVATAR_URL.format(uuid=uuid),
        "是否实名认证": "是",
        "策略净值": nav,
        "最新净值日期": nav_date,
        "日收益率": pct(daily),
        "周收益率": pct(week),
        "月收益率": pct(perf.get("近1月")),
        "季度收益率": pct(perf.get("近3月")),
        "半年收益率": pct(perf.get("近6月")),
        "年收益率": pct(perf.get("近1年")),
        "成立以来收益率": pct(perf.get("成立来")),
        "最大回撤": pct(perf.get("成立来最大回撤")),
        "夏普比率": perf.get("近1年夏普"),
        "波动率": pct(perf.get("近1年波动率")),
        "年化收益率": pct(perf.get("年化收益")),
        "url": strategy_url(st.code),
    }


def risk_record(st: Strategy) -> dict[str, Any]:
    """The risk record of a strategy (GetStrategyRiskInfo without its url)."""
    return {
        "strategyCode": st.code,
        "strategyName": st.name,
        "riskLevel": st.risk_level,
        "risk5LevelName": st.risk_name,
        "riskScore": st.risk_score,
        "recommendedHoldingDuration": st.recommended_holding,
        "scoreEffectiveDate": date_time(st.score_effective_date),
    }


def _alternates(world: World, st: Strategy, part: CompositionPart) -> list[dict] | None:
    """Interchangeable share classes/funds for about one constituent in six (else null, as usually)."""
    rng = rng_for(world.seed, "strategy_alternates", st.code, part["fund_code"])
    if rng.random() >= 1 / 6:
        return None
    pool = [c for c in world.codes_by_type(part["fund_type"]) if c != part["fund_code"]]
    out = []
    for k, code in enumerate(sorted(sample(rng, pool, 1 + rng.randrange(3))), start=1):
        cheaper = k == 1 and rng.random() < 0.5
        reason = f"{world.require_stub(code).name}手续费更低，故优先申购。" if cheaper else None
        out.append(
            {
                "备选基金代码": code,
                "优先级": k,
                "原因": reason,
                "描述": reason,
                "赎回优先级": 5 - k,
                "赎回原因": None,
                "赎回描述": None,
            }
        )
    return out


def composition_of(world: World, st: Strategy) -> dict[str, Any]:
    """A strategy's constituents grouped by fund category, categories in composition order."""
    groups: dict[str, dict[str, Any]] = {}
    totals: dict[str, int] = {}
    for part in st.composition:
        latest = world.fund_latest(part["fund_code"])
        group = groups.setdefault(part["category"], {"持有成分": [], "分类占比": ""})
        totals[part["category"]] = totals.get(part["category"], 0) + part["weight_bp"]
        group["持有成分"].append(
            {
                "策略代码": st.code,
                "基金代码": part["fund_code"],
                "基金名称": part["fund_name"],
                "基金全称": part["fund_full_name"],
                "持仓占比": pct(part["weight_bp"] / 10000),
                "最新更新时间": date_time(latest["nav_date"]),
                "最新净值": latest["nav"],
                "最新净值日期": latest["nav_date"],
                "日涨跌幅": pct(latest["daily_return"] or 0.0),
                "优先级": 0,
                "替代基金列表": _alternates(world, st, part),
                "基金类型": part["category_code"],
            }
        )
    for category, group in groups.items():
        group["分类占比"] = pct(totals[category] / 10000)
    return groups


def _known(world: World, codes: list[str]) -> list[Strategy]:
    return [st for st in (world.strategy(c) for c in codes) if st is not None]


def _one_strategy(ctx: BuildContext, args: dict[str, Any], field: str = "strategyCode") -> Strategy:
    tool = ctx.spec.name
    code = require_text(args, tool, field)
    st = ctx.world.strategy(code)
    if st is None:
        raise ToolInputError(f"{tool}: strategy {code!r} not found ({field})")
    return st


# ------------------------------------------------------------------ builders
@qieman_builder("StrategySearchByKeyword")
def strategy_search(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """Strategies whose code, name or introduction contains the keyword, paged from 1."""
    keyword = require_text(args, "StrategySearchByKeyword", "keyword")
    page, size = page_args(args, "StrategySearchByKeyword")
    found = queries.search_strategies(ctx.world, keyword, page, size)
    return {
        "pageSize": size,
        "rows": [_summary_row(st) for st in found["items"]],
        "status": STATUS_OK,
        "hasMoreRows": page * size < found["total"],
    }


@qieman_builder("GetStrategyDetails")
def strategy_details(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """Detail rows (profile, manager, NAV and performance) for the known codes, paged from 1."""
    codes = code_list(args, "GetStrategyDetails", "strategyCodes")
    page, size = page_args(args, "GetStrategyDetails")
    known = _known(ctx.world, codes)
    answer = paged_answer(known, page, size)  # page the strategies, then build only the shown rows
    answer["rows"] = [_detail_row(ctx.world, st) for st in answer["rows"]]
    return tidy(answer)


@qieman_builder("GetStrategyRiskInfo")
def strategy_risk(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """Risk level, score and suggested holding period of one strategy."""
    st = _one_strategy(ctx, args)
    return {**risk_record(st), "url": strategy_url(st.code)}


@qieman_builder("BatchGetStrategyRiskInfo")
def batch_strategy_risk(ctx: BuildContext, args: dict[str, Any]) -> list[dict[str, Any]]:
    """Risk records of the known codes, in request order (unknown codes skipped)."""
    codes = code_list(args, "BatchGetStrategyRiskInfo", "strategyCodes")
    return [risk_record(st) for st in _known(ctx.world, codes)]


@qieman_builder("BatchGetStrategiesComposition")
def batch_composition(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """Constituent funds per category for each known code (unknown codes skipped; none given: {})."""
    codes = code_list(args, "BatchGetStrategiesComposition", "strategyCodes", required=False)
    return tidy({st.code: composition_of(ctx.world, st) for st in _known(ctx.world, codes)})


@qieman_builder("BatchGetPoTradeComposition")
def batch_trade_composition(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """What following each known strategy buys: funds, weights, tradability and the minimum amount.

    The minimum amount is the smallest sum (rounded up to 100 yuan) for which every constituent's
    share meets that fund's minimum purchase.
    """
    codes = code_list(args, "BatchGetPoTradeComposition", "strategyCodes", required=False)
    out: dict[str, Any] = {}
    for st in _known(ctx.world, codes):
        parts, need = [], 0.0
        for part in st.composition:
            trade = ctx.world.require_fund(part["fund_code"]).trade
            tradable = bool(trade.get("can_allot"))
            min_buy = trade.get("min_buy")
            if tradable and min_buy:
                need = max(need, min_buy / (part["weight_bp"] / 10000))
            parts.append(
                {
                    "基金代码": part["fund_code"],
                    "基金名称": part["fund_name"],
                    "持仓占比": pct(part["weight_bp"] / 10000),
                    "基金类型": part["category_code"],
                    "是否可交易": tradable,
                    "起购金额": min_buy,
                }
            )
        minimum = float(math.ceil(round(need, 6) / 100) * 100) if need else None
        out[st.code] = {"策略名称": st.name, "最小申购金额": minimum, "交易成分": parts}
    return tidy(out)


@qieman_builder("GetStrategyAssetClassAnalysis")
def strategy_asset_classes(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """The look-through asset-class tree of a strategy (amount per 100 units, ratio as a fraction)."""
    code = require_text(args, "GetStrategyAssetClassAnalysis", "strategyCode")
    st = ctx.world.strategy(code)
    return {"strategyAssetClassCategoryInfo": [] if st is None else tidy(st.asset_classes)}


def _index_annual_return(world: World, index_code: str, since: date) -> float | None:
    series = world.index_series(index_code)
    lo = max(0, series.index_of(since))
    hi = len(series.adj) - 1
    if hi - lo < TRADING_DAYS_PER_YEAR:
        return None
    return (series.adj[hi] / series.adj[lo]) ** (TRADING_DAYS_PER_YEAR / (hi - lo)) - 1.0


@qieman_builder("GetStrategyBenchmark")
def strategy_benchmark(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """A weighted benchmark built from the strategy's top-level asset classes.

    Equity maps to 沪深300 (overseas equity to 标普500), commodities to 黄金9999, bonds to 中债综合
    (3.5% a year) and cash to the one-year deposit rate (1.5% a year); the annual return is the
    weighted sum of each leg's annualised return since the strategy's launch.
    """
    st = _one_strategy(ctx, args)
    legs: list[tuple[tuple, float]] = []
    for top in st.asset_classes:
        if top["categoryCode"] == "30010103":
            for child in top["children"]:
                leg = (
                    _OVERSEAS_EQUITY if child["categoryCode"] == "3001010302" else _BENCHMARK_LEGS["30010103"]
                )
                legs.append((leg, child["ratio"]))
        else:
            legs.append((_BENCHMARK_LEGS[top["categoryCode"]], top["ratio"]))
    merged: dict[tuple, float] = {}
    for leg, weight in legs:
        merged[leg] = round(merged.get(leg, 0.0) + weight, 4)
    since = date.fromisoformat(st.setup_date)
    components: list[dict[str, Any]] = []
    annual: float | None = 0.0
    for (code, name, fixed), weight in sorted(merged.items(), key=lambda kv: (-kv[1], kv[0][1])):
        leg_return = fixed if code is None else _index_annual_return(ctx.world, code, since)
        if leg_return is None:
            annual = None
        elif annual is not None:
            annual += weight * leg_return
        components.append({"indexCode": code, "indexName": name, "weight": weight})
    name = "+".join(f"{c['indexName']}收益率×{pct(c['weight'])}" for c in components)
    return tidy(
        {
            "strategyCode": st.code,
            "strategyName": st.name,
            "benchmarkName": name,
            "benchmarkComponents": components,
            "benchmarkAnnualReturn": None if annual is None else round(annual, 4),
        }
    )


def _holders_index(world: World) -> dict[str, list[tuple[int, str]]]:
    """fund code -> [(weight bp, strategy code)] over every strategy (built once per world)."""
    index = _HOLDERS.get(world)
    if index is None:
        index = {}
        for code in world.strategy_codes():
            for part in world.require_strategy(code).composition:
                index.setdefault(part["fund_code"], []).append((part["weight_bp"], code))
        _HOLDERS[world] = index
    return index


_HOLDERS: weakref.WeakKeyDictionary[World, dict[str, list[tuple[int, str]]]] = weakref.WeakKeyDictionary()


@qieman_builder("GetFundRelatedStrategies")
def fund_related_strategies(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """Strategies holding a fund (by code, else by best name match), heaviest holding first."""
    tool = "GetFundRelatedStrategies"
    code, name = args.get("fundCode"), args.get("fundName")
    if code is not None and (not isinstance(code, str) or not re.fullmatch(r"\d{6}", code)):
        raise ToolInputError(f"{tool}: fundCode must be 6 digits, got {code!r}")
    if code is None:
        if not isinstance(name, str) or not name.strip():
            raise ToolInputError(f"{tool}: give fundCode or fundName")
        matches = queries.guess_fund_code(ctx.world, name.strip(), limit=1)
        code = matches[0]["code"] if matches else None
    holders = sorted(_holders_index(ctx.world).get(code or "", []), key=lambda t: (-t[0], t[1]))
    rows = []
    for bp, st_code in holders:
        st = ctx.world.require_strategy(st_code)
        rows.append(
            {
                "策略代码": st.code,
                "策略名称": st.name,
                "策略风险等级": st.risk_name,
                "基金代码": code,
                "持仓占比": pct(bp / 10000),
                "url": strategy_url(st.code),
            }
        )
    return paged_answer(rows, 1, 20)


def _parse_day(args: dict[str, Any], field: str) -> date | None:
    value = args.get(field)
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not _DATE_RE.match(value):
        raise ToolInputError(f"GetPortfolioNavHistory: {field} must be YYYY-MM-DD or empty, got {value!r}")
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ToolInputError(f"GetPortfolioNavHistory: {field} {value!r} is not a calendar date") from None


@qieman_builder("GetPortfolioNavHistory")
def portfolio_nav_history(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """Daily NAV of a strategy between ``start`` and ``end`` (inclusive; empty = launch / today)."""
    code = require_text(args, "GetPortfolioNavHistory", "poCode")
    start, end = _parse_day(args, "start"), _parse_day(args, "end")
    if start and end and start > end:
        raise ToolInputError(f"GetPortfolioNavHistory: start {start} is after end {end}")
    if ctx.world.strategy(code) is None:
        return {"poCode": code, "poName": None, "navList": []}
    rows = [
        {"navDate": day, "nav": nav, "dailyReturn": ret}
        for day, nav, ret in ctx.world.strategy_nav_days(code, start, end)
    ]
    answer: dict[str, Any] = {"poCode": code, "poName": ctx.world.require_strategy(code).name}
    if rows:
        answer.update(startDate=rows[0]["navDate"], endDate=rows[-1]["navDate"])
    answer["navList"] = rows
    return tidy(answer)
