"""Argument binding: the scripted planner's choice of arguments for one step.

An argument that names an entity (fund codes, strategy codes, account ids, plan ids, NAV data) is taken
from the output of the step the chain says it depends on; with no upstream step it comes from the
sample context (the entities the query names). Every other argument is chosen here (small pages, the
context's keyword) or, for tools not listed, by ``server.sim.example_args``. Each binding records the
values it consumed from upstream so the verifier can check that the dependency carried data.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from finmcp.evaluator.synth.context import SampleContext
from finmcp.evaluator.synth.extract import Entities
from finmcp.server.sim.example_args import example_arguments
from finmcp.server.world import World
from finmcp.tool_specs.model import ToolSpec

FUND_MANY = {
    "BatchGetFundsDetail": "fundCodes",
    "BatchGetFundNavHistory": "fundCodes",
    "GetBatchFundPerformance": "fundCodes",
    "BatchGetFundsHolding": "fundCodes",
    "BatchGetFundsHolderInfo": "fundCodes",
    "BatchGetFundsFeeRule": "fundCodes",
    "BatchGetFundTradeRules": "fundCodes",
    "BatchGetFundTradeLimit": "fundCodes",
    "BatchGetFundsSplitHistory": "fundCodes",
    "BatchGetFundsDividendRecord": "fundCodes",
    "GetFundAnnouncements": "fundCodes",
    "AnalyzeFundRisk": "fundCodes",
    "getStockAllocationAndMetricsByFundCode": "fundCodeList",
    "getQdFundAreaAllocation": "fundCodeList",
}
FUND_ONE = {
    "getFundBenchmarkInfo": "fundCode",
    "getFundBrinsonIndicator": "fundCode",
    "getFundCampisiIndicator": "fundCode",
    "getFundTurnoverRate": "fundCode",
    "fund-equity-position": "fundCode",
    "fund-recovery-ability": "fundCode",
    "getMarketTimingIndicator": "fundCode",
    "GetFundRelatedStrategies": "fundCode",
    "GetTxnDayRange": "fundCode",
    "GetFundDiagnosis": "fundNameOrCode",
}
PORTFOLIO = {
    "GetFundsBackTest": ("fundList", "amount"),
    "DiagnoseFundPortfolio": ("fundList", "amount"),
    "GetAssetAllocation": ("fundList", "amount"),
    "GetFundAssetClassAnalysis": ("holdingList", "amount"),
    "GetFundsCorrelation": ("fundList", None),
    "AnalyzePortfolioRisk": ("holdings", "weight"),
}
STRATEGY_MANY = {
    "GetStrategyDetails": "strategyCodes",
    "BatchGetStrategyRiskInfo": "strategyCodes",
    "BatchGetStrategiesComposition": "strategyCodes",
    "BatchGetPoTradeComposition": "strategyCodes",
}
STRATEGY_ONE = {
    "GetStrategyRiskInfo": "strategyCode",
    "GetStrategyAssetClassAnalysis": "strategyCode",
    "GetStrategyBenchmark": "strategyCode",
    "GetPortfolioNavHistory": "poCode",
}
SINGLE_ENTITY_TOOLS = (
    set(FUND_ONE) | set(STRATEGY_ONE) | {"GetAnnouncementContent", "GetCompositeModel"}
) - {"GetTxnDayRange"}
"""Tools that take one entity per call: repeated per entity (parallel or sequential groups)."""

ACCEPTS: dict[str, set[str]] = {
    **{t: {"fund_code"} for t in FUND_MANY},
    **{t: {"fund_code"} for t in FUND_ONE},
    **{t: {"fund_code", "portfolio_weights"} for t in PORTFOLIO},
    **{t: {"strategy_code"} for t in STRATEGY_MANY},
    **{t: {"strategy_code"} for t in STRATEGY_ONE},
    "GetAnnouncementContent": {"announcement_id"},
    "GetCompositeModel": {"asset_plan_id"},
    "GetFundLatestProfit": {"service_account_id", "fund_code"},
    "RenderEchart": {"nav_series", "asset_allocation"},
    "MonteCarloSimulate": {"asset_allocation"},
}
"""Entity types each tool's binder can take from an upstream step."""

_ALLOCATION_KEYS = {
    "中国股票": "equity",
    "股票": "equity",
    "中国债券": "fixedIncome",
    "债券": "fixedIncome",
    "现金": "cash",
    "货币": "cash",
    "另类商品": "commodity",
    "商品": "commodity",
    "海外股票": "overseasEquity",
    "海外债券": "overseasFixedIncome",
}


@dataclass
class Binding:
    """Arguments of one call and the upstream values it consumed: ``(source step, entity, value)``."""

    arguments: dict[str, Any]
    consumed: list[tuple[int, str, Any]] = field(default_factory=list)


class BindError(ValueError):
    """The upstream step gave nothing this step could consume (the trajectory is discarded)."""


@dataclass
class StepInputs:
    """What a step may read: per entity type, the upstream step and its extracted entities."""

    sources: dict[str, tuple[int, Entities]] = field(default_factory=dict)

    def get(self, entity: str) -> tuple[int, Entities] | None:
        return self.sources.get(entity)


def _codes(entities: Entities, entity: str, limit: int) -> list[str]:
    values = entities.values(entity)
    return [v for v in values if isinstance(v, str)][:limit]


def _upstream(inputs: StepInputs, entity: str, limit: int, tool: str) -> tuple[list[str], list] | None:
    """Up to ``limit`` values of ``entity`` from the step that supplies it, with the (step, entity, value)
    triples used; None when no step supplies it, a BindError when that step returned none."""
    src = inputs.get(entity)
    if src is None:
        return None
    codes = _codes(src[1], entity, limit)
    if not codes:
        raise BindError(f"{tool}: step {src[0]} returned no {entity}")
    return codes, [(src[0], entity, c) for c in codes]


def _fund_codes(inputs: StepInputs, ctx: SampleContext, limit: int, tool: str) -> tuple[list[str], list]:
    for entity in ("portfolio_weights", "fund_code"):
        found = _upstream(inputs, entity, limit, tool)
        if found is not None:
            return found
    pool = ctx.qdii_funds if tool == "getQdFundAreaAllocation" else ctx.funds
    return [c for c, _ in pool[:limit]], []


def _strategy_codes(inputs: StepInputs, ctx: SampleContext, limit: int, tool: str) -> tuple[list[str], list]:
    found = _upstream(inputs, "strategy_code", limit, tool)
    return found if found is not None else ([c for c, _ in ctx.strategies[:limit]], [])


def _one_of(values: list[str], per_entity: int) -> list[str]:
    return values[: max(1, per_entity)]


def bind(
    spec: ToolSpec,
    ctx: SampleContext,
    inputs: StepInputs,
    rng: random.Random,
    world: World,
    per_entity: int = 1,
) -> list[Binding]:
    """The calls of one step (several when a single-entity tool repeats over ``per_entity`` values)."""
    tool = spec.name
    if tool in FUND_MANY:
        limit = 5 if tool == "AnalyzeFundRisk" else 3
        codes, used = _fund_codes(inputs, ctx, limit if inputs.sources else rng.randint(1, 2), tool)
        args = {FUND_MANY[tool]: codes, **_base_args(spec, ctx, rng, world)}
        return [Binding(args, used)]
    if tool in FUND_ONE:
        codes, used = _fund_codes(inputs, ctx, max(1, per_entity), tool)
        out = []
        for code in _one_of(codes, per_entity):
            value: str = code
            if tool == "GetFundDiagnosis" and not used and rng.random() < 0.5:
                value = dict(ctx.funds).get(code, code)  # the query names the fund, not its code
            args = {FUND_ONE[tool]: value, **_base_args(spec, ctx, rng, world)}
            out.append(Binding(args, [u for u in used if u[2] == code]))
        return out
    if tool in PORTFOLIO:
        param, weight_key = PORTFOLIO[tool]
        codes, used = _fund_codes(inputs, ctx, 4, tool)
        src = inputs.get("portfolio_weights")
        weights = src[1].fund_weights if src is not None else {}
        total = sum(weights.get(c, 0) for c in codes) or 1.0
        items = []
        for i, code in enumerate(codes):
            share = weights.get(code, 0) / total if weights else 1 / len(codes)
            item: dict[str, Any] = {"fundCode": code}
            if weight_key == "amount":
                item["amount"] = float(max(100, round(ctx.amount * share, -2)))
            elif weight_key == "weight":
                item["weight"] = round(share, 4) if i < len(codes) - 1 else 0.0
            items.append(item)
        if weight_key == "weight":
            items[-1]["weight"] = round(1 - sum(x["weight"] for x in items[:-1]), 4)
        return [Binding({param: items}, used)]
    if tool in STRATEGY_MANY:
        codes, used = _strategy_codes(inputs, ctx, 3 if inputs.sources else rng.randint(1, 2), tool)
        return [Binding({STRATEGY_MANY[tool]: codes}, used)]
    if tool in STRATEGY_ONE:
        codes, used = _strategy_codes(inputs, ctx, max(1, per_entity), tool)
        out = []
        for code in _one_of(codes, per_entity):
            args = {STRATEGY_ONE[tool]: code, **_base_args(spec, ctx, rng, world)}
            out.append(Binding(args, [u for u in used if u[2] == code]))
        return out
    if tool == "GetAnnouncementContent":
        found = _upstream(inputs, "announcement_id", max(1, per_entity), tool)
        if found is None:
            ann = world.fund_announcements(ctx.fund[0])
            return [Binding({"announcementId": ann[0]["id"] if ann else "800000000001"})]
        return [Binding({"announcementId": i}, [u]) for i, u in zip(*found, strict=True)]
    if tool == "GetCompositeModel":
        found = _upstream(inputs, "asset_plan_id", 1, tool)
        if found is None:
            from finmcp.server.sim.qieman.planning import HORIZONS

            plan = world.asset_allocation_plan(ctx.target_return, ctx.drawdown, HORIZONS[ctx.horizon])
            return [Binding({"assetPlanId": plan["plan_id"]})]
        return [Binding({"assetPlanId": found[0][0]}, found[1])]
    if tool == "GetFundLatestProfit":
        return [_latest_profit(ctx, inputs, world)]
    if tool == "RenderEchart":
        return [_echart(inputs, ctx)]
    if tool == "MonteCarloSimulate":
        return [_monte_carlo(inputs, ctx)]
    return [Binding(_base_args(spec, ctx, rng, world))]


def _latest_profit(ctx: SampleContext, inputs: StepInputs, world: World) -> Binding:
    user = world.user(ctx.user_id)
    tool = "GetFundLatestProfit"
    own_accounts = [s["account_id"] for s in user.sub_accounts]
    accounts, used_accounts = _upstream(inputs, "service_account_id", 5, tool) or (own_accounts, [])
    held = sorted({p["fund_code"] for p in user.positions})[:20] or [ctx.fund[0]]
    funds, used_funds = _upstream(inputs, "fund_code", 20, tool) or (held, [])
    args = {"userId": ctx.user_id, "serviceAccountIdList": accounts, "fundCodeList": funds}
    return Binding(args, used_accounts + used_funds)


def _echart(inputs: StepInputs, ctx: SampleContext) -> Binding:
    src = inputs.get("nav_series")
    if src is not None and src[1].nav_series:
        points = sorted(src[1].nav_series)[-20:]
        option = {
            "title": {"text": "净值走势"},
            "xAxis": {"type": "category", "data": [d for d, _ in points]},
            "yAxis": {"type": "value"},
            "series": [{"type": "line", "data": [v for _, v in points]}],
        }
        used = [(src[0], "nav_series", points[0][0])]
    else:
        src = inputs.get("asset_allocation")
        if src is None:  # the query itself gives the allocation to draw
            data = [{"name": n, "value": v} for n, v in context_allocation(ctx)]
            option = {"title": {"text": "资产配置"}, "series": [{"type": "pie", "data": data}]}
            text = json.dumps(option, ensure_ascii=False, separators=(",", ":"))
            return Binding({"option": text, "width": "800", "height": "600"})
        if not src[1].asset_allocation:
            raise BindError(f"RenderEchart: step {src[0]} returned no asset_allocation to draw")
        option = {
            "title": {"text": "资产配置"},
            "series": [
                {"type": "pie", "data": [{"name": n, "value": r} for n, r in src[1].asset_allocation]}
            ],
        }
        used = [(src[0], "asset_allocation", src[1].asset_allocation[0][0])]
    text = json.dumps(option, ensure_ascii=False, separators=(",", ":"))
    return Binding({"option": text, "width": "800", "height": "600"}, used)


def _monte_carlo(inputs: StepInputs, ctx: SampleContext) -> Binding:
    src = inputs.get("asset_allocation")
    weights: dict[str, float] = {}
    used: list[tuple[int, str, Any]] = []
    if src is not None:
        for name, ratio in src[1].asset_allocation:
            key = _ALLOCATION_KEYS.get(name)
            if key is not None:
                weights[key] = round(weights.get(key, 0) + ratio, 4)
                used.append((src[0], "asset_allocation", name))
        if not weights:
            raise BindError(f"MonteCarloSimulate: step {src[0]} returned no usable asset_allocation")
        total = sum(weights.values())
        weights = {k: round(v / total, 4) for k, v in weights.items()}
        largest = max(weights, key=lambda k: weights[k])
        weights[largest] = round(1 - sum(v for k, v in weights.items() if k != largest), 4)
    else:
        keys = {"股票": "equity", "债券": "fixedIncome", "现金": "cash"}
        weights = {keys[name]: value for name, value in context_allocation(ctx)}
    return Binding({"weights": weights, "frequency": "YEAR", "periodCount": 5, "simulationCount": 1000}, used)


def context_allocation(ctx: SampleContext) -> list[tuple[str, float]]:
    """The allocation a query states when no tool supplies one (stock / bond / cash shares)."""
    equity = round(min(0.8, ctx.target_return * 8), 2)
    return [("股票", equity), ("债券", round(0.9 - equity, 2)), ("现金", 0.1)]


def _dates(world: World, days: int) -> tuple[str, str]:
    from datetime import timedelta

    end = world.as_of
    return (end - timedelta(days=days)).isoformat(), end.isoformat()


def _base_args(spec: ToolSpec, ctx: SampleContext, rng: random.Random, world: World) -> dict[str, Any]:
    """Arguments with no upstream source (the entity parameters are added by the caller)."""
    tool = spec.name
    if tool in FUND_MANY or tool in FUND_ONE:
        extra: dict[str, Any] = {}
        if tool == "BatchGetFundNavHistory":
            extra["dimensionType"] = rng.choice(("oneMonth", "oneMonth", "quarter"))
        elif tool == "BatchGetFundTradeRules":
            extra["op"] = rng.choice(("allot", "redeem"))
        elif tool == "GetFundAnnouncements":
            extra.update(pageNum=1, pageSize=3)
        elif tool == "GetTxnDayRange":
            extra.update(beforeDays=str(rng.randint(1, 5)), afterDays=str(rng.randint(1, 5)))
        elif tool in ("getFundBrinsonIndicator", "getFundCampisiIndicator"):
            extra["timePeriod"] = rng.choice(("LAST_YEAR", "LAST_3_YEAR"))
        return extra
    if tool == "GetPortfolioNavHistory":
        start, end = _dates(world, 30)
        return {"start": start, "end": end}
    if tool in STRATEGY_ONE or tool in STRATEGY_MANY:
        return {}
    if tool == "SearchFunds":
        args: dict[str, Any] = {"keyword": ctx.fund_keyword, "size": 5}
        if rng.random() < 0.4:
            args.update(sortColumn="近一年收益", sortOrder="降序")
        return args
    if tool == "GuessFundCode":
        return {"fundNameOrCode": ctx.fund[1]}
    if tool == "GetPopularFund":
        return {"size": 5}
    if tool == "StrategySearchByKeyword":
        return {"keyword": ctx.strategy_keyword, "pageNum": 1, "pageSize": 3}
    if tool in ("SearchFinancialNews", "searchRealtimeAiAnalysis", "searchInvestAdvisorContent"):
        start, end = _dates(world, 14)
        return {"keyword": ctx.news_keyword, "startDate": start, "endDate": end, "page": 1, "pageSize": 3}
    if tool == "SearchManagerViewpoint":
        start, end = _dates(world, 60)
        return {"keyword": ctx.news_keyword, "startDate": start, "endDate": end, "page": 1, "pageSize": 3}
    if tool == "SearchHotTopic":
        return {"keyword": ctx.news_keyword}
    if tool in (
        "GetUserAssetView",
        "GetUserAssetBrief",
        "GetProfitCalendar",
        "GetUserAssetHoldingDistribution",
    ):
        return {"userId": ctx.user_id}
    if tool == "GetAssetAllocationPlan":
        return {
            "expectedAnnualizedReturnRate": ctx.target_return,
            "expectedDrawdown": ctx.drawdown,
            "expectedInvestTime": ctx.horizon,
        }
    if tool == "GetCurrentTime":
        return {}
    if tool == "RenderHtmlToPdf":
        html = (
            '<!DOCTYPE html><html><head><meta charset="utf-8"><title>投资报告</title></head>'
            f"<body><h1>投资报告</h1><p>用户 {ctx.user_id}</p></body></html>"
        )
        return {"html": html, "options": {"format": "A4"}}
    if tool == "AnalyzeInvestmentPerformance":
        short = round(ctx.amount * 0.4, -2)
        return {
            "totalInvestableAssets": float(ctx.amount),
            "expectedReturnRate": ctx.target_return,
            "shortMediumTermScheme": {
                "type": "中短期配置方案",
                "investmentAmount": short,
                "annualReturn": 0.025,
            },
            "mediumLongTermScheme": {
                "type": "中长期配置方案",
                "investmentAmount": float(ctx.amount) - short,
                "annualReturn": round(ctx.target_return + 0.01, 4),
            },
        }
    if tool in _FAMILY:
        return _FAMILY[tool](ctx)
    return example_arguments(spec, world, rng.randrange(1 << 30), 0)


def _members(ctx: SampleContext) -> list[dict[str, Any]]:
    persona = ctx.persona
    age = persona.age if persona else 35
    size = persona.family_size if persona else 3
    roles = [("本人", age), ("配偶", age - 2), ("子女", max(1, age - 30)), ("父母", age + 28)]
    members = []
    for role, member_age in roles[: max(1, size)]:
        members.append({"role": role, "birthDate": f"{2025 - member_age}-06-01"})
    return members


def _income(ctx: SampleContext) -> float:
    return float(ctx.persona.annual_income if ctx.persona else 300000)


_FAMILY: dict[str, Callable[[SampleContext], dict[str, Any]]] = {
    "AnalyzeFamilyMembers": lambda ctx: {"familyMembers": _members(ctx)},
    "AnalyzeIncomeExpense": lambda ctx: {
        "annualIncome": {"salary": _income(ctx) * 0.8, "bonus": _income(ctx) * 0.2},
        "annualExpense": {
            "dailyExpenses": round(_income(ctx) * 0.3, -2),
            "mortgagePayment": round(_income(ctx) * 0.2, -2),
            "educationExpenses": round(_income(ctx) * 0.05, -2),
        },
    },
    "AnalyzeAssetLiability": lambda ctx: {
        "totalAssets": {"liquidAssets": round(_income(ctx) * 0.5, -2), "investmentAssets": float(ctx.amount)},
        "totalLiabilities": {"personalUseLiabilities": round(_income(ctx) * 2, -2)},
    },
}
