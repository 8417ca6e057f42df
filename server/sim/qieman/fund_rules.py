"""Builders for the Qieman fee and trade-rule tools, and the fee ladders other tools print."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, timedelta
from typing import Any

from finmcp.recordings.plumbing.seeding import rng_for
from finmcp.server.sim.qieman.common import add_txn_days, cn_date, now, parse_moment, pct_text, txn_date_of
from finmcp.server.sim.qieman.fund_batch import batch, batch_tool
from finmcp.server.sim.registry import BuildContext, ToolInputError, qieman_builder
from finmcp.server.world import vocab as v
from finmcp.server.world.funds import Fund


def _amount_text(yuan: float) -> str:
    if yuan and yuan % 10000 == 0:
        return f"{int(yuan // 10000)}万元"
    return f"{yuan:g}元"


def _rule(
    limit_text, fee_text, lower, lower_unit, upper, upper_unit, rate, fixed, rate_unit, discount, special
):
    return {
        "uiLimitText": limit_text,
        "uiFeeRateText": fee_text,
        "lowerLimit": lower,
        "lowerLimitUnit": lower_unit,
        "upperLimit": upper,
        "upperLimitUnit": upper_unit,
        "feeRate": rate,
        "fixedFee": fixed,
        "feeRateUnit": rate_unit,
        "discount": discount,
        "remark": "--",
        "isSpecialFee": False,
        "specialDescription": special,
    }


def amount_rules(tiers: list[dict]) -> list[dict[str, Any]]:
    """A subscription/purchase ladder in the real server's shape (a free ladder is one '>0元' band)."""
    if len(tiers) == 1 and not tiers[0]["rate"] and tiers[0]["fixed_fee"] is None:
        return [_rule(">0元", "0.00%", 0, "元", None, None, None, None, None, 1, None)]
    out = []
    for t in tiers:
        lo, hi = t["lower"], t["upper"]
        if hi is None:
            text = f"≥{_amount_text(lo)}"
        elif lo == 0:
            text = f"＜{_amount_text(hi)}"
        else:
            text = f"≥{_amount_text(lo)}，＜{_amount_text(hi)}"
        if t["fixed_fee"] is not None:
            fee = t["fixed_fee"]
            out.append(_rule(text, f"{fee:g}元", lo, "元", hi, "元", None, fee, "元", None, "--"))
        else:
            out.append(
                _rule(text, pct_text(t["rate"]), lo, "元", hi, "元", t["rate"], None, None, None, "--")
            )
    return out


def redeem_rules(bands: list[dict]) -> list[dict[str, Any]]:
    """The redemption ladder by holding days (``≤6天``, ``>6天，≤364天``, ``>729天``)."""
    out = []
    for b in bands:
        lo = b["min_days"] - 1 if b["min_days"] > 0 else 0
        hi = b["max_days"]
        if b["min_days"] == 0 and hi is None:
            text = ">0天"
        elif b["min_days"] == 0:
            text = f"≤{hi}天"
        elif hi is None:
            text = f">{lo}天"
        else:
            text = f">{lo}天，≤{hi}天"
        out.append(_rule(text, pct_text(b["rate"]), lo, "天", hi, "天", b["rate"], None, None, None, "--"))
    return out


def run_fee_rule(fund: Fund) -> dict[str, Any]:
    """Annual management, custody and sales-service fees."""
    fees = fund.fees
    return {
        "uiManagerFeeRateText": f"{fees['management'] * 100:.2f}%/年",
        "managerFeeRate": fees["management"],
        "managerFeeRateUnit": "年",
        "isFloatFee": False,
        "uiManagerFeeTipText": None,
        "uiTrusteeFeeRateText": f"{fees['custody'] * 100:.4f}%/年",
        "trusteeFeeRate": fees["custody"],
        "trusteeFeeRateUnit": "年",
        "uiSaleFeeRateText": f"{fees['sales'] * 100:.2f}%/年",
        "saleFeeRate": fees["sales"],
        "saleFeeRateUnit": "年",
        "hadPerformanceCompensation": False,
        "uiPerformanceCompensationText": "查看规则",
        "uiPerformanceCompensationTipText": None,
    }


def _rank_text(x: float, lo: float, hi: float) -> str:
    return f"{int(round(100 * min(1.0, max(0.0, (x - lo) / (hi - lo))))) if hi > lo else 0}%"


def _fee_summary(ctx: BuildContext, fund: Fund) -> dict[str, Any]:
    fees = fund.fees
    rng = rng_for(ctx.world.seed, "hidden_cost", fund.code)
    lo, hi = v.HIDDEN_COSTS[fund.fund_type]
    trading = round(lo + (hi - lo) * rng.random() ** 2, 4)
    other = round(0.0001 + 0.0004 * rng.random(), 4)
    explicit = round(fees["management"] + fees["custody"] + fees["sales"], 4)
    hidden = round(trading + other, 4)
    return {
        "totalCost": pct_text(explicit + hidden),
        "totalCostRank": _rank_text(explicit + hidden, 0.002, 0.03),
        "explicitCost": pct_text(explicit),
        "explicitCostRank": _rank_text(explicit, 0.002, 0.02),
        "hiddenCost": pct_text(hidden),
        "hiddenCostRank": _rank_text(hidden, lo, hi + 0.0005),
        "manageFee": pct_text(fees["management"]),
        "manageFeeRank": _rank_text(fees["management"], 0.0015, 0.015),
        "custodianFee": pct_text(fees["custody"]),
        "custodianFeeRank": _rank_text(fees["custody"], 0.0005, 0.0025),
        "saleFee": pct_text(fees["sales"]),
        "saleFeeRank": _rank_text(fees["sales"], 0.0, 0.008),
        "tradingCost": pct_text(trading),
        "tradingCostRank": _rank_text(trading, lo, hi),
        "otherCost": pct_text(other),
        "otherCostRank": _rank_text(other, 0.0001, 0.0005),
        "importantNotice": "隐性成本为模拟估算值，仅供参考",
    }


@batch_tool("BatchGetFundsFeeRule")
def fee_rule(ctx: BuildContext, fund: Fund) -> dict[str, Any]:
    """Subscription, purchase and redemption ladders, running fees and the total-cost summary."""
    return {
        "fundCode": fund.code,
        "fundName": fund.name,
        "subscribeFeeRateRules": amount_rules(fund.fees["subscribe"]),
        "allotFeeRateRules": amount_rules(fund.fees["allot"]),
        "redeemFeeRateRules": redeem_rules(fund.fees["redeem"]),
        "runFeeRateRule": run_fee_rule(fund),
        "feeRateSummary": _fee_summary(ctx, fund),
    }


_OPS = ("subscribe", "allot", "redeem", "convert")


def redemption_arrivals(trade: dict[str, Any], t: date, stamp: Callable[[date], Any]) -> dict[str, Any]:
    """When redeemed money reaches the wallet or the card (and earns there) for an order on trading day
    ``t``, dates written by ``stamp`` (epoch milliseconds in trade limits, Chinese dates in trade rules)."""
    wallet, card = trade["redeem_to_wallet_days"], trade["redeem_to_card_days"]
    return {
        "redeemToWalletTransferIntoTxnDays": wallet,
        "redeemToWalletTransferIntoTxnDayDate": stamp(add_txn_days(t, wallet)),
        "redeemToCardTransferIntoTxnDays": card,
        "redeemToCardTransferIntoTxnDayDate": stamp(add_txn_days(t, card)),
        "redeemToWalletHasIncomeTxnDays": wallet,
        "redeemToWalletHasIncomeTxnDayDate": stamp(add_txn_days(t, wallet)),
        "redeemToCardHasIncomeTxnDays": card + 1,
        "redeemToCardHasIncomeTxnDayDate": stamp(add_txn_days(t, card + 1)),
        "toWalletThanToCardMultiIncomeTxnDays": card + 1 - wallet,
    }


@qieman_builder("BatchGetFundTradeRules")
def build_trade_rules(ctx: BuildContext, args: dict[str, Any]) -> list[dict[str, Any]]:
    """Limits, fee ladders and arrival dates for one operation (subscribe, allot, redeem, convert).

    The transaction day is the one ``txnTime`` (default: now) belongs to; 15:00 or later is the next.
    """
    tool = "BatchGetFundTradeRules"
    op = args.get("op")
    if op not in _OPS:
        raise ToolInputError(f"{tool}: op must be one of {list(_OPS)}, got {op!r}")
    moment = now(ctx) if args.get("txnTime") is None else parse_moment(args["txnTime"], tool, "txnTime")
    if not ctx.world.as_of - timedelta(days=3650) <= moment.date() <= ctx.world.as_of + timedelta(days=366):
        raise ToolInputError(
            f"{tool}: txnTime {args.get('txnTime')!r} is too far from today ({ctx.world.as_of})"
        )
    t = txn_date_of(moment)

    def data(c: BuildContext, fund: Fund) -> dict[str, Any]:
        trade, fees = fund.trade, fund.fees
        run = run_fee_rule(fund)
        out: dict[str, Any] = {}
        if op in ("subscribe", "allot"):
            out["minBuyAmount"] = trade["min_buy"]
            out["maxBuyAmount"] = trade["max_buy"]
            key = "subscribeFeeRateRules" if op == "subscribe" else "allotFeeRateRules"
            out["tradeTimeFlows"] = {}
            out["feeRateRules"] = {key: amount_rules(fees[op]), "runFeeRateRule": run}
            out["redeemSpecialRules"] = redemption_arrivals(fund.trade, t, cn_date)
        elif op == "redeem":
            out["minRedeemShare"] = 0.01 if fund.fund_type == "货币型" else 1.0
            out["expectConfirmDate"] = add_txn_days(t, trade["confirm_days"]).isoformat()
            out["tradeTimeFlows"] = {}
            out["feeRateRules"] = {"redeemFeeRateRules": redeem_rules(fees["redeem"]), "runFeeRateRule": run}
            out["redeemSpecialRules"] = redemption_arrivals(fund.trade, t, cn_date)
        else:
            out["minRedeemShare"] = 1.0 if trade["can_convert"] else None
            out["expectConfirmDate"] = (
                add_txn_days(t, trade["confirm_days"]).isoformat() if trade["can_convert"] else None
            )
            out["tradeTimeFlows"] = {}
            out["feeRateRules"] = (
                {
                    "redeemFeeRateRules": redeem_rules(fees["redeem"]),
                    "allotFeeRateRules": amount_rules(fees["allot"]),
                    "runFeeRateRule": run,
                }
                if trade["can_convert"]
                else None
            )
            out["redeemSpecialRules"] = None
        return out

    return batch(ctx, args, tool, data)
