"""Builders for the Qieman fund detail tools: the full profile and the trade limits of a fund."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from finmcp.recordings.plumbing.seeding import derive_seed
from finmcp.server.sim.qieman.common import (
    SHORT_WEEKDAYS,
    add_txn_days,
    cn_date,
    epoch_ms,
    now,
    pct_text,
    txn_date_of,
)
from finmcp.server.sim.qieman.fund_batch import batch_tool, display_type
from finmcp.server.sim.qieman.fund_rules import redemption_arrivals
from finmcp.server.sim.registry import BuildContext
from finmcp.server.world.funds import Fund

_DETAIL_INVEST_TYPE = {"指数型": "股票型", "QDII型": "股票型"}


def _sub_tag(fund: Fund) -> str:
    t, theme = fund.fund_type, fund.sub_tag
    if t == "指数型" or (t == "QDII型" and ("指数" in theme or "ETF" in theme)):
        return "股票指数"
    if t in ("债券型",) or (t == "QDII型" and "债" in theme):
        for key in ("短债", "可转债", "定开"):
            if key in theme:
                return key
        return "纯债" if "纯债" in theme or t == "QDII型" else "混合债"
    if t == "混合型":
        return "偏债" if "偏债" in fund.name else "偏股"
    return {"股票型": "普通股票", "货币型": "货币", "FOF": "FOF", "QDII型": "股票"}.get(t, t)


def _fund_tags(fund: Fund) -> list[dict[str, str]]:
    tags = [
        {"type": f"RISK_5_LEVEL_{fund.risk_level}", "text": fund.risk_name},
        {"type": "INVEST_TYPE", "text": display_type(fund.fund_type)},
        {"type": "INVEST_SUBTAG", "text": _sub_tag(fund)},
    ]
    for concept in ("LOF", "ETF联接", "FOF"):
        if concept in fund.name or concept in fund.full_name:
            tags.append({"type": "CONCEPT_TYPE", "text": concept})
            break
    return tags


def _invest_type_text(fund: Fund) -> str:
    if fund.fund_type == "QDII型" and "债" in fund.sub_tag:
        return "债券型"
    return _DETAIL_INVEST_TYPE.get(fund.fund_type, fund.fund_type)


def _summary(ctx: BuildContext, fund: Fund) -> dict[str, Any]:
    latest, perf = fund.latest, fund.performance
    money = fund.fund_type == "货币型"
    setup = date.fromisoformat(fund.setup_date)
    issue_start = setup - timedelta(days=14 + derive_seed(ctx.world.seed, "issue", fund.code) % 20)
    benchmarks: list[dict[str, str | None]] = [{"code": "fit1", "name": "同类平均", "shortName": "同类平均"}]
    if fund.index_code:
        benchmarks.append({"code": fund.index_code, "name": fund.index_name, "shortName": fund.index_name})
    return {
        "fundCode": fund.code,
        "fundName": fund.name,
        "fundTags": _fund_tags(fund),
        "fundInvestType": _invest_type_text(fund),
        "taxDeferredType": "N",
        "risk5Level": fund.risk_level,
        "valDisBy": "yield" if money else "nav",
        "oneYearReturn": pct_text(perf.get("近1年")),
        "setupDayReturn": pct_text(perf.get("成立来")),
        "displayEstimateNav": False,
        "dailyReturn": pct_text(latest["daily_return"]),
        "nav": latest["nav"],
        "navDate": cn_date(latest["nav_date"]),
        "yearlyRoe": latest["yield_7d"],
        "unitYield": latest["unit_yield"],
        "unitYieldDate": cn_date(latest["nav_date"]),
        "setupDate": epoch_ms(setup),
        "uiSetupDate": fund.setup_date,
        "netAsset": f"{fund.net_asset / 1e8:.2f}亿",
        "netAssetUnit": "RMB",
        "netAssetUnitText": "元",
        "netAssetUpdateDate": cn_date(fund.net_asset_date),
        "benchmarks": benchmarks,
        "issueInfo": {
            "issueStartDate": epoch_ms(issue_start),
            "issueEndDate": epoch_ms(setup - timedelta(days=7)),
            "issuePeriodStatus": "SETUP",
            "issuePreviouslyCountdownEndTime": epoch_ms(issue_start),
            "canSubPresellNotice": False,
        },
        "lockedType": "1" if "持有期" in fund.name else "0",
        "mutualRecognitionRegion": "NONE",
        "fundraisingMethod": "MUTUAL",
        "indexCode": fund.index_code,
        "indexName": fund.index_name,
    }


def _managers(fund: Fund) -> list[dict[str, Any]]:
    out = []
    for m in fund.managers:
        years, ret = m["tenure_years"], m["tenure_return"]
        annual = None
        if ret is not None and years >= 0.1:
            annual = pct_text((1.0 + ret) ** (1.0 / years) - 1.0)
        out.append(
            {
                "fundManagerId": m["manager_id"],
                "fundManagerName": m["name"],
                "avatarUrl": None,
                "curtDesc": f"{m['education']}，从业{m['experience_years']}年，目前管理{m['fund_count']}只基金，"
                f"资产规模{m['aum_yi']:.2f}亿元。",
                "periodYears": years,
                "periodReturn": pct_text(ret),
                "periodAnnualCompoundedReturn": annual,
            }
        )
    return out


def _asset_portfolios(fund: Fund) -> list[dict[str, Any]]:
    return [
        {"name": a["name"], "ratio": a["ratio"], "value": a["value"] if a["ratio"] else None}
        for a in fund.asset_allocation
    ]


def _industry_portfolios(fund: Fund) -> list[dict[str, Any]]:
    if fund.fund_type == "QDII型":
        return []
    return [
        {"name": x["industry"], "ratio": x["ratio"], "value": round(x["ratio"] * fund.net_asset, 2)}
        for x in fund.industry_allocation
    ]


def _reason(ok: bool, code: str, msg: str) -> tuple[dict | None, str | None]:
    return (None, None) if ok else ({"code": code, "msg": msg}, msg)


def trade_limit(ctx: BuildContext, fund: Fund) -> dict[str, Any]:
    """Trading availability of a fund as of the simulated clock (dates as epoch milliseconds)."""
    trade, fees = fund.trade, fund.fees
    t = txn_date_of(now(ctx))
    allot_reason, allot_text = _reason(
        trade["can_allot"], "STOP_ALLOT", f"基金{trade['status_text']}，暂不可买入"
    )
    sub_reason, sub_text = _reason(False, "STOP_SUBSCRIBE", "基金已成立，不在认购期")
    redeem_reason, redeem_text = _reason(
        trade["can_redeem"], "STOP_REDEEM", f"基金{trade['status_text']}，暂不可卖出"
    )
    conv_reason, conv_text = _reason(trade["can_convert"], "STOP_CONVERT", "该基金暂不支持转换")
    first_rate = fees["allot"][0]["rate"]
    return {
        "canAllot": trade["can_allot"],
        "cannotAllotReason": allot_reason,
        "uiCannotAllotReasonText": allot_text,
        "canSubscribe": False,
        "cannotSubscribeReason": sub_reason,
        "uiCannotSubscribeReasonText": sub_text,
        "canRedeem": trade["can_redeem"],
        "cannotRedeemReason": redeem_reason,
        "uiCannotRedeemReasonText": redeem_text,
        "canConvert": trade["can_convert"],
        "cannotConvertReason": conv_reason,
        "uiCannotConvertReasonText": conv_text,
        **redemption_arrivals(trade, t, epoch_ms),
        "minDiscount": fees["discount"],
        "feeRatio": round((first_rate or 0.0) * 100, 4),
        "personalLowestAllotAmount": trade["min_buy"],
        "minBuyAmount": trade["min_buy"],
        "currentTxnDate": epoch_ms(t),
        "buyExpectConfirmDate": epoch_ms(add_txn_days(t, trade["confirm_days"])),
        "incomeVisibleDate": epoch_ms(add_txn_days(t, trade["confirm_days"] + 1)),
        "uiTradeLimitTips": None,
        "fundStatus": trade["status"],
        "largeLimitAmount": trade["max_buy"],
    }


def _flow_label(d: date) -> str:
    return f"{d.month:02d}-{d.day:02d}（{SHORT_WEEKDAYS[d.weekday()]}）"


def _trade_time_flows(ctx: BuildContext, fund: Fund) -> dict[str, Any]:
    t = txn_date_of(now(ctx))
    confirm = add_txn_days(t, fund.trade["confirm_days"])
    visible = add_txn_days(confirm, 1)
    return {
        "walletBuy": {
            "flows": [
                {"timeLabel": f"{t.month:02d}-{t.day:02d} 15:00前", "tradeLabel": "买入"},
                {"timeLabel": _flow_label(confirm), "tradeLabel": "确认份额"},
                {"timeLabel": _flow_label(visible), "tradeLabel": "查看盈亏"},
            ],
            "tips": [
                "交易日15:00前提交的买入按当日净值确认，15:00及之后提交的顺延至下一个交易日；"
                "周末和法定节假日不是交易日，所属交易日以付款成功的时间为准。"
            ],
        }
    }


@batch_tool("BatchGetFundsDetail")
def fund_detail(ctx: BuildContext, fund: Fund) -> dict[str, Any]:
    """Full profile: summary, managers, allocations, trade limits and timelines."""
    return {
        "fundOperationInfo": None,
        "summary": _summary(ctx, fund),
        "managers": _managers(fund),
        "assetPortfolios": _asset_portfolios(fund),
        "industryPortfolios": _industry_portfolios(fund),
        "tradeLimit": trade_limit(ctx, fund),
        "tradeTimeFlows": _trade_time_flows(ctx, fund),
        "configuration": {"fundCode": fund.code, "performanceReferenceConfig": None, "tipsInfo": None},
    }


@batch_tool("BatchGetFundTradeLimit")
def trade_limit_entry(ctx: BuildContext, fund: Fund) -> dict[str, Any]:
    """Trading availability, minimums and redemption arrival dates."""
    out = trade_limit(ctx, fund)
    out["canInvestPlan"] = fund.trade["can_allot"]
    out["minInvestPlanAmount"] = max(fund.trade["min_buy"], 10.0) if fund.trade["can_allot"] else None
    return out
