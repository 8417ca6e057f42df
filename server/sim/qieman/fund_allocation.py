"""Builders for the Qieman fund allocation tools: industries, sector, equity position, turnover,
the stocks held and regions."""

from __future__ import annotations

from finmcp.server.sim.qieman.common import choice_arg, code_list_arg, r4, r6
from finmcp.server.sim.qieman.fund_windows import (
    fund_and_window,
    fund_or_error,
    index_return,
    known_funds,
    known_stubs,
    latest_report_date,
    latest_report_entry,
    latest_semiannual_date,
    nav_window,
    report_date_for,
    split_total,
    window_dates,
    window_key,
)
from finmcp.server.sim.registry import BuildContext, ToolInputError, qieman_builder
from finmcp.server.world.fund_profiles import (
    AREA_NAMES,
    INDUSTRY_CODES,
    LATEST,
    area_weights,
    bond_ratio,
    industry_weights,
    peer_turnover,
    stock_fundamentals,
    stock_ratio,
    turnover_rate,
    window_stock_ratio,
)


@qieman_builder("getFundIndustryAllocation")
def build_industry_allocation(ctx: BuildContext, args: dict) -> dict:
    """Industry weights of the stock portfolio (latest report or window average)."""
    tool = "getFundIndustryAllocation"
    world, fund, window = fund_and_window(ctx, args, tool)
    return {
        "fundCode": fund.code,
        "fundName": fund.name,
        "timeRange": window,
        "reportDate": report_date_for(world, fund, window),
        "industryList": [
            {"industryCode": INDUSTRY_CODES.get(n), "industryName": n, "weight": r4(w)}
            for n, w in industry_weights(world, fund, window)
        ],
    }


@qieman_builder("getFundIndustryConcentration")
def build_industry_concentration(ctx: BuildContext, args: dict) -> dict:
    """Top-5 industries and cumulative concentration."""
    tool = "getFundIndustryConcentration"
    world, fund, window = fund_and_window(ctx, args, tool)
    weights = industry_weights(world, fund, window)
    top = weights[:5]

    def cum(k: int) -> float:
        return r4(sum(w for _, w in weights[:k]))

    return {
        "fundCode": fund.code,
        "timeRange": window,
        "reportDate": report_date_for(world, fund, window),
        "topIndustries": [
            {"rank": i + 1, "industryName": n, "weight": r4(w)} for i, (n, w) in enumerate(top)
        ],
        "top1Concentration": cum(1),
        "top2Concentration": cum(2),
        "top3Concentration": cum(3),
        "top5Concentration": cum(5),
    }


def preference_level(weight: float) -> str:
    """Label of an industry weight against an even spread over the 20 industries."""
    return "重点配置" if weight >= 0.25 else "超配" if weight >= 0.08 else "低配"


@qieman_builder("getFundIndustryPreference")
def build_industry_preference(ctx: BuildContext, args: dict) -> dict:
    """Preferred industries per fund over a window (unknown codes skipped)."""
    world = ctx.world
    tool = "getFundIndustryPreference"
    window = window_key(args, "timeRange", tool, "LAST_YEAR")
    funds = []
    for fund in known_funds(world, code_list_arg(args, "fundCodeList", tool)):
        prefs = [
            {"industryName": n, "averageWeight": r4(w), "preferenceLevel": preference_level(w)}
            for n, w in industry_weights(world, fund, window)[:5]
        ]
        funds.append({"fundCode": fund.code, "fundName": fund.name, "preferredIndustries": prefs})
    return {"timeRange": window, "funds": funds}


@qieman_builder("getFundIndustryReturns")
def build_industry_returns(ctx: BuildContext, args: dict) -> dict:
    """Return and contribution of each industry held; contributions add up to the stock part of the return."""
    tool = "getFundIndustryReturns"
    world, fund, window = fund_and_window(ctx, args, tool)
    weights = industry_weights(world, fund, window)
    rows: list[dict] = []
    if weights:
        series, lo, hi = nav_window(world, fund, window)
        start, end = window_dates(series, lo, hi)
        s_ratio = window_stock_ratio(world, fund, window) or stock_ratio(fund)
        stock_part = (series.adj[hi] / series.adj[lo] - 1.0) * min(
            1.0, s_ratio / max(s_ratio + bond_ratio(fund) * 0.2, 1e-9)
        )
        market = index_return(world, "000300", start, end)
        contributions = split_total(
            stock_part, [w for _, w in weights], world, fund.code, window, "industry_ret"
        )
        total_abs = sum(abs(c) for c in contributions) or 1.0
        for (name, w), c in zip(weights, contributions, strict=True):
            absolute = c / (w * s_ratio) if w * s_ratio > 0 else 0.0
            rows.append(
                {
                    "industryName": name,
                    "absoluteReturn": r6(absolute),
                    "relativeReturn": r6(absolute - market),
                    "returnContribution": c,
                    "scoreContribution": round(100 * c / total_abs, 2),
                }
            )
        rows.sort(key=lambda r: (-r["returnContribution"], r["industryName"]))
    return {"fundCode": fund.code, "timeRange": window, "industryReturns": rows}


@qieman_builder("getFundTurnoverRate")
def build_turnover(ctx: BuildContext, args: dict) -> dict:
    """Stock turnover of the fund against its type average."""
    tool = "getFundTurnoverRate"
    world, fund, window = fund_and_window(ctx, args, tool)
    stub = world.require_stub(fund.code)
    return {
        "fundCode": fund.code,
        "timeRange": window,
        "reportDate": latest_semiannual_date(world).isoformat(),
        "turnoverRate": turnover_rate(world, stub, window) if stock_ratio(fund) > 0 else 0.0,
        "peerAverageTurnoverRate": peer_turnover(fund.fund_type),
    }


@qieman_builder("fund-equity-position")
def build_equity_position(ctx: BuildContext, args: dict) -> dict:
    """Stock position of the fund from its latest asset allocation."""
    fund = fund_or_error(ctx.world, args.get("fundCode"), "fund-equity-position")
    pos = stock_ratio(fund)
    return {
        "fundCode": fund.code,
        "fundName": fund.name,
        "equityPosition": pos,
        "positionLevel": "高仓位" if pos >= 0.8 else "中仓位" if pos >= 0.5 else "低仓位",
        "reportDate": fund.holdings["report_date"],
    }


@qieman_builder("fund-sector-preference")
def build_sector_preference(ctx: BuildContext, args: dict) -> dict:
    """The industry the fund's stock portfolio leans to most."""
    world = ctx.world
    fund = fund_or_error(world, args.get("fundCode"), "fund-sector-preference")
    weights = industry_weights(world, fund, LATEST)
    if not weights:
        return {
            "fundCode": fund.code,
            "fundName": fund.name,
            "sectorName": "无股票持仓",
            "sectorCode": "NONE",
            "sectorWeight": None,
        }
    name, weight = weights[0]
    return {
        "fundCode": fund.code,
        "fundName": fund.name,
        "sectorName": name,
        "sectorCode": INDUSTRY_CODES.get(name, "OTHER"),
        "sectorWeight": r4(weight),
    }


_CALC_METHODS = ("avg", "wavg", "float_wavg", "integral")


def _aggregate(values: list[float], weights: list[float], method: str, caps: list[float]) -> float | None:
    pairs = [(x, w, c) for x, w, c in zip(values, weights, caps, strict=True) if x is not None]
    if not pairs:
        return None
    if method == "avg":
        return sum(x for x, _, _ in pairs) / len(pairs)
    if method == "integral":
        pos = [(x, w) for x, w, _ in pairs if x > 0]
        return sum(w for _, w in pos) / sum(w / x for x, w in pos) if pos else None
    ws = [w * (c if method == "float_wavg" else 1.0) for _, w, c in pairs]
    return sum(x * w for (x, _, _), w in zip(pairs, ws, strict=True)) / (sum(ws) or 1.0)


@qieman_builder("getStockAllocationAndMetricsByFundCode")
def build_stock_allocation_metrics(ctx: BuildContext, args: dict) -> dict:
    """Stock share, top holdings and their valuation, profitability, growth and crowding per fund."""
    world = ctx.world
    tool = "getStockAllocationAndMetricsByFundCode"
    window = window_key(args, "timeRange", tool, LATEST)
    method = choice_arg(args, "calculationMethod", tool, _CALC_METHODS, "wavg")
    holding_type = args.get("holdingType") or "quarter"
    if holding_type not in ("semiannual", "quarter"):
        raise ToolInputError(f"{tool}: holdingType {holding_type!r} must be semiannual or quarter")
    threshold = args.get("threshold", 20)
    if threshold not in (10, 15, 20, 25, 30):
        raise ToolInputError(f"{tool}: threshold {threshold!r} must be one of 10, 15, 20, 25, 30 (percent)")
    report = latest_semiannual_date(world) if holding_type == "semiannual" else latest_report_date(world)
    funds = []
    for fund in known_funds(world, code_list_arg(args, "fundCodeList", tool, 50)):
        stocks = fund.holdings["stocks"]
        infos = [world.stock(s["code"]) or {} for s in stocks]
        weights = [s["ratio"] for s in stocks]
        caps = [i.get("market_value_yi", 1.0) for i in infos]
        pes = [i.get("pe_ttm") for i in infos]
        pbs = [i.get("pb") for i in infos]
        extras = [stock_fundamentals(world, s["code"]) for s in stocks]
        roes = [pb / pe if pe and pb else None for pe, pb in zip(pes, pbs, strict=True)]

        def agg(values: list, digits: int = 4) -> float | None:
            x = _aggregate(values, weights, method, caps)  # noqa: B023 - evaluated within this iteration
            return None if x is None else round(x, digits)

        funds.append(
            {
                "fundCode": fund.code,
                "fundName": fund.name,
                "reportDate": report.isoformat(),
                "stockRatio": r4(window_stock_ratio(world, fund, window)),
                "topStocks": [
                    {"stockCode": s["code"], "stockName": s["name"], "weight": s["ratio"]} for s in stocks
                ],
                "valuation": {"pe": agg(pes, 2), "pb": agg(pbs, 2)},
                "profitability": {"roe": agg(roes), "grossMargin": agg([e[0] for e in extras])},
                "growth": {
                    "revenueGrowth": agg([e[1] for e in extras]),
                    "netProfitGrowth": agg([e[2] for e in extras]),
                },
                "crowdedStocks": [
                    {"stockCode": s["code"], "stockName": s["name"], "crowdingRatio": r4(e[3])}
                    for s, e in zip(stocks, extras, strict=True)
                    if e[3] * 100 >= threshold
                ],
            }
        )
    return {"timeRange": window, "funds": funds}


@qieman_builder("getQdFundAreaAllocation")
def build_area_allocation(ctx: BuildContext, args: dict) -> dict:
    """Regional allocation of (QDII) funds; domestic funds are 100% 中国内地."""
    world = ctx.world
    tool = "getQdFundAreaAllocation"
    window = window_key(args, "timeRange", tool, LATEST)
    scope = args.get("scope") or None
    by_name = {name: code for code, name in AREA_NAMES.items()}
    # a region name works as well as its code; unknown regions match nothing
    scope = by_name.get(scope, scope) if scope is not None else None
    funds = [
        latest_report_entry(
            world,
            stub,
            areas=[
                {"areaCode": k, "areaName": AREA_NAMES[k], "weight": r4(w)}
                for k, w in area_weights(world, stub, window)
                if scope is None or k == scope
            ],
        )
        for stub in known_stubs(world, args, "fundCodeList", tool, 50)
    ]
    return {"timeRange": window, "funds": funds}
