"""Fund search and fund data tools, formatted the way the real Qieman server prints them.

Formats follow the recorded outputs: dates in summaries as ``2025年08月15日``, returns as percent text
(``"-0.68%"``) in detail and NAV rows, fractions (``0.1511683106``) in search rows, epoch milliseconds
for trade-limit dates, fund pages at ``https://qieman.com/funds/<code>``.

Unknown codes: every ``Batch*`` tool answers one entry per *known* requested code, in request order,
duplicates dropped, and silently skips codes the world does not have (an all-unknown request gives
``[]``). ``SearchFunds`` answers ``{"funds": [], "total": 0}``; ``GetFundAnnouncements`` an empty page.
Malformed codes (not six digits) and more than 20 codes are refused with a ToolInputError.
"""

from __future__ import annotations

import re
import weakref
from datetime import date, timedelta
from typing import Any

from recordings.plumbing.seeding import derive_seed, rng_for
from server.sim.qieman.common import (
    SHORT_WEEKDAYS,
    add_txn_days,
    cn_date,
    epoch_ms,
    fund_url,
    int_arg,
    now,
    parse_day,
    parse_moment,
    pct_text,
    txn_date_of,
)
from server.sim.registry import BuildContext, ToolInputError, qieman_builder
from server.world import vocab as v
from server.world.dates import last_quarter_end, shift_months
from server.world.funds import Fund
from server.world.world import CATEGORY_ALIASES, SORT_COLUMNS

MAX_BATCH = 20
_CODE_RE = re.compile(r"^\d{6}$")
_ANNOUNCEMENT_ID_RE = re.compile(r"^\d{12}$")

# ---------------------------------------------------------------- shared argument handling


def fund_codes_arg(args: dict[str, Any], tool: str, key: str = "fundCodes", limit: int | None = MAX_BATCH):
    """The requested fund codes, deduplicated in order; ToolInputError for a malformed list."""
    codes = args.get(key)
    if not isinstance(codes, list) or not codes:
        raise ToolInputError(f"{tool}: {key} must be a non-empty array of six-digit fund codes")
    if limit is not None and len(codes) > limit:
        raise ToolInputError(f"{tool}: {key} holds {len(codes)} codes; at most {limit} per call")
    out: list[str] = []
    for i, code in enumerate(codes):
        if not isinstance(code, str) or not _CODE_RE.match(code):
            raise ToolInputError(f"{tool}: {key}[{i}] must be a six-digit fund code, got {code!r}")
        if code not in out:
            out.append(code)
    return out


def _batch(ctx: BuildContext, args: dict[str, Any], tool: str, build_data, limit: int | None = MAX_BATCH):
    """``[{fundCode, data, url}]`` for the known codes of the request (unknown codes skipped)."""
    entries = []
    for code in fund_codes_arg(args, tool, limit=limit):
        fund = ctx.world.fund(code)
        if fund is not None:
            entries.append({"fundCode": code, "data": build_data(ctx, fund), "url": fund_url(code)})
    return entries


# ---------------------------------------------------------------- search

_TRADE_STATUS = {
    "正常开放": {"0"},
    "认购期": {"1"},
    "暂停申购": {"5"},
    "暂停赎回": {"6"},
    "暂停交易": {"4", "9"},
}
# sort columns the world ranks directly, plus close synonyms
_SORT_SYNONYMS = {"收益率": "近一年收益", "万份收益": "七日年化收益率"}
_CATEGORY_GROUPS = {"偏股型": ("股票型", "混合型"), "权益型": ("股票型", "混合型", "指数型")}


def _category_filter(category: str | None):
    """(world category or None, extra stub predicate or None, known?) for a SearchFunds category."""
    if not category:
        return None, None, True
    name = CATEGORY_ALIASES.get(category, category)
    if name in v.FUND_TYPES:
        return name, None, True
    if name in _CATEGORY_GROUPS:
        types = _CATEGORY_GROUPS[name]
        return None, lambda s: s.fund_type in types and "偏债" not in s.name, True
    if name in ("偏债型", "偏债混合"):
        return None, lambda s: "偏债" in s.name, True
    return None, lambda s: name in s.theme or name in s.name, True


def _search_row(ctx: BuildContext, row: dict, with_yield: bool) -> dict:
    out = {
        "fundCode": row["code"],
        "fundName": row["name"],
        "fundInvestType": v.FUND_TYPE_CODES[row["fund_type"]],
        "status": row["status"],
        "setupDate": row["setup_date"],
        "returnYear": row["returnYear"],
    }
    if with_yield:
        out["yearlyRoe"] = row["yearlyRoe"]
    out["url"] = fund_url(row["code"])
    return out


def _seeded_rank(ctx: BuildContext, column: str, code: str) -> int:
    return derive_seed(ctx.world.seed, "search_sort", column, code)


_SORT_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_MONTHS = {"近1月": 1, "近3月": 3, "近6月": 6, "近1年": 12, "近3年": 36}


def _sort_value(ctx: BuildContext, stub, column: str):
    """The world's value of a sort column for one fund (cached per world)."""
    cache = _SORT_CACHE.setdefault(ctx.world, {})
    key = (column, stub.code)
    if key not in cache:
        world_column = SORT_COLUMNS[column]
        if world_column == "setup_date":
            value = stub.setup_date.isoformat()
        elif world_column == "size":
            value = stub.size_yi
        elif world_column == "yield_7d":
            value = ctx.world.fund(stub.code).latest["yield_7d"] if stub.fund_type == "货币型" else None
        else:
            value = ctx.world.quick_return(stub.code, _MONTHS[world_column])
        cache[key] = value
    return cache[key]


def _filtered_search(ctx, keyword, category, predicate, status, column, order, page, size):
    """SearchFunds over stubs when a filter or sort the world's search lacks is asked for."""
    if category is not None:
        ctx.world.codes_by_type(category)  # validates the type name
    stubs = [
        s
        for s in ctx.world.fund_universe().values()
        if (not keyword or keyword in s.name or keyword == s.code)
        and (category is None or s.fund_type == category)
        and (predicate is None or predicate(s))
        and (status == "不限" or s.status in _TRADE_STATUS[status])
    ]
    desc = order in ("降序", "")
    if column in SORT_COLUMNS:
        keyed = [(_sort_value(ctx, s, column), s) for s in stubs]
        present = sorted(
            (k for k in keyed if k[0] is not None), key=lambda kv: (kv[0], kv[1].code), reverse=desc
        )
        stubs = [s for _, s in present] + sorted((s for val, s in keyed if val is None), key=lambda s: s.code)
    elif column:
        stubs.sort(key=lambda s: _seeded_rank(ctx, column, s.code), reverse=desc)
    rows = []
    for s in stubs[page * size : (page + 1) * size]:
        rows.append(
            {
                "code": s.code,
                "name": s.name,
                "fund_type": s.fund_type,
                "status": s.status,
                "setup_date": s.setup_date.isoformat(),
                "returnYear": _sort_value(ctx, s, "近一年收益"),
                "yearlyRoe": _sort_value(ctx, s, "七日年化收益率"),
            }
        )
    return rows, len(stubs)


@qieman_builder("SearchFunds")
def build_search_funds(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """Funds by keyword / category / trading status, sorted, paged from page 0.

    Sort columns the world cannot rank (起购金额, 选股能力, 综合费率, …) order by a seeded per-fund key:
    stable, but not derived from fund data. ``yearlyRoe`` is printed only when a sort column is given,
    as in the recorded outputs.
    """
    tool = "SearchFunds"
    page = int_arg(args, "page", tool, 0, 0)
    size = int_arg(args, "size", tool, 10, 1)
    if size > 100:
        raise ToolInputError(f"{tool}: size must be at most 100, got {size}")
    keyword = (args.get("keyword") or "").strip() or None
    status = args.get("tradeStatus") or "不限"
    if status != "不限" and status not in _TRADE_STATUS:
        raise ToolInputError(
            f"{tool}: tradeStatus {status!r} unknown; expected one of {['不限', *_TRADE_STATUS]}"
        )
    order = args.get("sortOrder") or "降序"
    column = args.get("sortColumn") or None
    column = _SORT_SYNONYMS.get(column, column)
    world_column = column if column in SORT_COLUMNS else None
    category, predicate, _ = _category_filter(args.get("category"))
    needs_all = predicate is not None or status != "不限" or (column and world_column is None)
    try:
        if not needs_all:
            found = ctx.world.search_funds(keyword, category, world_column, order, page, size)
            rows, total = found["funds"], found["total"]
        else:
            rows, total = _filtered_search(
                ctx, keyword, category, predicate, status, column, order, page, size
            )
    except ValueError as exc:
        raise ToolInputError(str(exc)) from exc
    return {"funds": [_search_row(ctx, r, column is not None) for r in rows], "total": total}


def _match_score(query: str, name: str, code: str) -> float:
    if query in (name, code):
        return 1.0
    if query in name:
        return round(0.6 + 0.4 * len(query) / len(name), 4)
    common = len(set(query) & set(name))
    return round(common / max(len(set(query) | set(name)), 1), 4)


def _display_type(fund_type: str) -> str:
    return "QDII" if fund_type == "QDII型" else fund_type


@qieman_builder("GuessFundCode")
def build_guess_fund_code(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """The best-matching fund for a name or code, with close candidates.

    No match answers ``fundCode``/``fundName`` as empty strings and no candidates.
    """
    query = args.get("fundNameOrCode")
    if not isinstance(query, str) or not query.strip():
        raise ToolInputError("GuessFundCode: fundNameOrCode must be a non-empty fund name or code")
    query = query.strip()
    matches = ctx.world.guess_fund_code(query)
    if not matches:
        return {"fundCode": "", "fundName": "", "candidates": []}
    best = matches[0]
    stub = ctx.world.fund_stub(best["code"])
    return {
        "fundCode": best["code"],
        "fundName": best["name"],
        "fundInvestType": _display_type(stub.fund_type),
        "candidates": [
            {"fundCode": m["code"], "fundName": m["name"], "score": _match_score(query, m["name"], m["code"])}
            for m in matches[1:]
        ],
        "url": fund_url(best["code"]),
    }


@qieman_builder("GetPopularFund")
def build_popular_fund(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """The world's stable 'most visited' list."""
    size = int_arg(args, "size", "GetPopularFund", 6, 1)
    if size > 50:
        raise ToolInputError(f"GetPopularFund: size must be at most 50, got {size}")
    funds = []
    for rank, stub in enumerate(ctx.world.popular_funds(size), start=1):
        funds.append(
            {
                "rank": rank,
                "fundCode": stub["code"],
                "fundName": stub["name"],
                "fundInvestType": _display_type(stub["fund_type"]),
                "returnYear": ctx.world.quick_return(stub["code"], 12),
                "url": fund_url(stub["code"]),
            }
        )
    return {"funds": funds}


# ---------------------------------------------------------------- detail

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
        {"type": "INVEST_TYPE", "text": _display_type(fund.fund_type)},
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
    benchmarks = [{"code": "fit1", "name": "同类平均", "shortName": "同类平均"}]
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
    wallet, card = trade["redeem_to_wallet_days"], trade["redeem_to_card_days"]
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
        "redeemToWalletTransferIntoTxnDays": wallet,
        "redeemToWalletTransferIntoTxnDayDate": epoch_ms(add_txn_days(t, wallet)),
        "redeemToCardTransferIntoTxnDays": card,
        "redeemToCardTransferIntoTxnDayDate": epoch_ms(add_txn_days(t, card)),
        "redeemToWalletHasIncomeTxnDays": wallet,
        "redeemToWalletHasIncomeTxnDayDate": epoch_ms(add_txn_days(t, wallet)),
        "redeemToCardHasIncomeTxnDays": card + 1,
        "redeemToCardHasIncomeTxnDayDate": epoch_ms(add_txn_days(t, card + 1)),
        "toWalletThanToCardMultiIncomeTxnDays": card + 1 - wallet,
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


def _detail(ctx: BuildContext, fund: Fund) -> dict[str, Any]:
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


@qieman_builder("BatchGetFundsDetail")
def build_funds_detail(ctx: BuildContext, args: dict[str, Any]) -> list[dict[str, Any]]:
    """Full profiles: summary, managers, allocations, trade limits and timelines."""
    return _batch(ctx, args, "BatchGetFundsDetail", _detail)


@qieman_builder("BatchGetFundTradeLimit")
def build_trade_limit(ctx: BuildContext, args: dict[str, Any]) -> list[dict[str, Any]]:
    """Trading availability, minimums and redemption arrival dates."""

    def data(c: BuildContext, fund: Fund) -> dict[str, Any]:
        out = trade_limit(c, fund)
        out["canInvestPlan"] = fund.trade["can_allot"]
        out["minInvestPlanAmount"] = max(fund.trade["min_buy"], 10.0) if fund.trade["can_allot"] else None
        return out

    return _batch(ctx, args, "BatchGetFundTradeLimit", data)


# ---------------------------------------------------------------- NAV history

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
}
_DIMENSION_MONTHS["fiveYear"] = 60


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
    dimension = args.get("dimensionType") or "oneMonth"
    if dimension not in DIMENSIONS:
        raise ToolInputError(
            f"{tool}: dimensionType {dimension!r} unknown; expected one of {list(DIMENSIONS)}"
        )
    desc = args.get("isDesc", True)
    if not isinstance(desc, bool):
        raise ToolInputError(f"{tool}: isDesc must be true or false, got {desc!r}")

    def data(c: BuildContext, fund: Fund) -> dict[str, Any]:
        rows = c.world.nav_history(fund.code) or []
        valid = {d: False for d in DIMENSIONS}
        current = dimension
        if rows:
            first, last = date.fromisoformat(rows[0]["date"]), date.fromisoformat(rows[-1]["date"])
            for d in DIMENSIONS:
                start = _window_start(d, last)
                valid[d] = start is None or first <= start
            if not valid[dimension]:
                current = "setupDay"
            start = _window_start(current, last)
            if start is not None:
                rows = [r for r in rows if r["date"] >= start.isoformat()]
        points = [
            {"navDate": cn_date(r["date"]), "nav": r["nav"], "dailyReturn": pct_text(r["daily_return"])}
            for r in rows
        ]
        if desc:
            points.reverse()
        return {
            "code": fund.code,
            "curDimensionType": current,
            "allDimension": [{"type": d, "isValid": valid[d]} for d in DIMENSIONS],
            "data": points,
        }

    return _batch(ctx, args, tool, data)


# ---------------------------------------------------------------- performance

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


def _peer_codes(ctx: BuildContext, fund_type: str) -> list[str]:
    codes = ctx.world.codes_by_type(fund_type)
    rng = rng_for(ctx.world.seed, "peer_sample", fund_type)
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


def _performance(ctx: BuildContext, fund: Fund) -> dict[str, Any]:
    perf = fund.performance
    peers = [c for c in _peer_codes(ctx, fund.fund_type) if c != fund.code]
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


@qieman_builder("GetBatchFundPerformance")
def build_fund_performance(ctx: BuildContext, args: dict[str, Any]) -> list[dict[str, Any]]:
    """Window returns with peer averages and ranks (peers: a seeded sample of the same fund type)."""
    return _batch(ctx, args, "GetBatchFundPerformance", _performance)


# ---------------------------------------------------------------- holdings and holders

_QUARTER_ENDS = ("03-31", "06-30", "09-30", "12-31")


def _previous_quarter_end(d: date) -> date:
    return last_quarter_end(d)


def _holdings_at(ctx: BuildContext, fund: Fund, report: date, latest: date) -> tuple[list[dict], list[dict]]:
    """Top stock and bond positions at a quarter end; earlier quarters are seeded variations of the latest."""
    stocks = [dict(s) for s in fund.holdings["stocks"]]
    bonds = [dict(b) for b in fund.holdings["bonds"]]
    if report >= latest:
        return stocks, bonds
    rng = rng_for(ctx.world.seed, "holdings_at", fund.code, report.isoformat())
    for row in stocks + bonds:
        row["ratio"] = round(row["ratio"] * (0.75 + 0.5 * rng.random()), 4)
    if stocks and rng.random() < 0.4:
        stocks.pop()
    stocks.sort(key=lambda s: -s["ratio"])
    bonds.sort(key=lambda b: -b["ratio"])
    return stocks, bonds


def _change_type(prev: dict[str, float], code: str, ratio: float) -> str:
    if code not in prev:
        return "新增"
    if ratio > prev[code]:
        return "增持"
    if ratio < prev[code]:
        return "减持"
    return "不变"


@qieman_builder("BatchGetFundsHolding")
def build_funds_holding(ctx: BuildContext, args: dict[str, Any]) -> list[dict[str, Any]]:
    """Top-10 stock and bond positions of the latest quarterly report, or of the last published report on
    or before ``reportDate`` (a date that is not a quarter end snaps back to the previous quarter end)."""
    tool = "BatchGetFundsHolding"
    latest = last_quarter_end(ctx.world.as_of)
    report = latest
    if args.get("reportDate") is not None:
        asked = parse_day(args["reportDate"], tool, "reportDate")
        if asked.year < 2005:
            raise ToolInputError(f"{tool}: reportDate {asked} is before 2005, the first report kept")
        quarter_end = asked if asked.strftime("%m-%d") in _QUARTER_ENDS else last_quarter_end(asked)
        report = min(latest, quarter_end)

    def data(c: BuildContext, fund: Fund) -> dict[str, Any]:
        ratios = {a["name"]: a["ratio"] for a in fund.asset_allocation}
        if date.fromisoformat(fund.setup_date) > report:
            stocks, bonds, prev = [], [], {}
        else:
            stocks, bonds = _holdings_at(c, fund, report, latest)
            prev_stocks, _ = _holdings_at(c, fund, _previous_quarter_end(report), latest)
            prev = {s["code"]: s["ratio"] for s in prev_stocks}
        value = fund.net_asset
        return {
            "fundCode": fund.code,
            "fundName": fund.name,
            "reportDate": report.isoformat(),
            "stockRatio": ratios.get("股票"),
            "bondRatio": ratios.get("债券"),
            "stockHoldings": [
                {
                    "stockCode": s["code"],
                    "stockName": s["name"],
                    "ratio": s["ratio"],
                    "marketValue": round(s["ratio"] * value, 2),
                    "changeType": _change_type(prev, s["code"], s["ratio"]),
                }
                for s in stocks
            ],
            "bondHoldings": [
                {
                    "bondCode": b["code"],
                    "bondName": b["name"],
                    "ratio": b["ratio"],
                    "marketValue": round(b["ratio"] * value, 2),
                }
                for b in bonds
            ],
        }

    return _batch(ctx, args, tool, data, limit=MAX_BATCH)


def _half_year_end(d: date) -> date:
    q = last_quarter_end(d)
    return q if q.month in (6, 12) else last_quarter_end(q)


def _share_classes(ctx: BuildContext, fund: Fund) -> list[Fund]:
    stub = ctx.world.fund_stub(fund.code)
    key = stub.product_key
    siblings = []
    for code in (key, f"{int(key) + 1:06d}"):
        other = ctx.world.fund_stub(code)
        if other is not None and other.product_key == key:
            siblings.append(ctx.world.fund(code))
    return siblings or [fund]


@qieman_builder("BatchGetFundsHolderInfo")
def build_holder_info(ctx: BuildContext, args: dict[str, Any]) -> list[dict[str, Any]]:
    """Shares per class, total size and the institutional/individual split at the last half-year report."""

    def data(c: BuildContext, fund: Fund) -> dict[str, Any]:
        classes = []
        for f in _share_classes(c, fund):
            nav = f.latest["nav"] or 1.0
            classes.append(
                {
                    "fundCode": f.code,
                    "shareClassName": f.share_class,
                    "shares": round(f.net_asset / nav, 2),
                    "netAsset": f.net_asset,
                }
            )
        rng = rng_for(c.world.seed, "holders", fund.code)
        base = {"债券型": 0.55, "货币型": 0.35, "FOF": 0.1}.get(fund.fund_type, 0.15)
        institutional = round(min(0.98, base * (0.4 + 1.2 * rng.random())), 4)
        total_asset = round(sum(x["netAsset"] for x in classes), 2)
        return {
            "fundCode": fund.code,
            "fundName": fund.name,
            "reportDate": _half_year_end(c.world.as_of).isoformat(),
            "totalShares": round(sum(x["shares"] for x in classes), 2),
            "totalNetAsset": total_asset,
            "shareClasses": classes,
            "institutionalRatio": institutional,
            "individualRatio": round(1.0 - institutional, 4),
            "holderCount": max(200, int(total_asset / (20000 + 80000 * rng.random()))),
        }

    return _batch(ctx, args, "BatchGetFundsHolderInfo", data)


# ---------------------------------------------------------------- fees and trade rules


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


# (trading-cost range, other-cost range) per type, as fractions per year
_HIDDEN_COSTS = {
    "股票型": (0.003, 0.012),
    "混合型": (0.003, 0.010),
    "指数型": (0.0005, 0.004),
    "债券型": (0.0008, 0.005),
    "货币型": (0.0001, 0.0006),
    "QDII型": (0.0005, 0.004),
    "FOF": (0.0005, 0.003),
}


def _rank_text(x: float, lo: float, hi: float) -> str:
    return f"{int(round(100 * min(1.0, max(0.0, (x - lo) / (hi - lo))))) if hi > lo else 0}%"


def _fee_summary(ctx: BuildContext, fund: Fund) -> dict[str, Any]:
    fees = fund.fees
    rng = rng_for(ctx.world.seed, "hidden_cost", fund.code)
    lo, hi = _HIDDEN_COSTS[fund.fund_type]
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


@qieman_builder("BatchGetFundsFeeRule")
def build_fee_rule(ctx: BuildContext, args: dict[str, Any]) -> list[dict[str, Any]]:
    """Subscription, purchase and redemption ladders, running fees and the total-cost summary."""

    def data(c: BuildContext, fund: Fund) -> dict[str, Any]:
        return {
            "fundCode": fund.code,
            "fundName": fund.name,
            "subscribeFeeRateRules": amount_rules(fund.fees["subscribe"]),
            "allotFeeRateRules": amount_rules(fund.fees["allot"]),
            "redeemFeeRateRules": redeem_rules(fund.fees["redeem"]),
            "runFeeRateRule": run_fee_rule(fund),
            "feeRateSummary": _fee_summary(c, fund),
        }

    return _batch(ctx, args, "BatchGetFundsFeeRule", data)


_OPS = ("subscribe", "allot", "redeem", "convert")


def _redeem_special(fund: Fund, t: date) -> dict[str, Any]:
    wallet, card = fund.trade["redeem_to_wallet_days"], fund.trade["redeem_to_card_days"]
    return {
        "redeemToWalletTransferIntoTxnDays": wallet,
        "redeemToWalletTransferIntoTxnDayDate": cn_date(add_txn_days(t, wallet)),
        "redeemToCardTransferIntoTxnDays": card,
        "redeemToCardTransferIntoTxnDayDate": cn_date(add_txn_days(t, card)),
        "redeemToWalletHasIncomeTxnDays": wallet,
        "redeemToWalletHasIncomeTxnDayDate": cn_date(add_txn_days(t, wallet)),
        "redeemToCardHasIncomeTxnDays": card + 1,
        "redeemToCardHasIncomeTxnDayDate": cn_date(add_txn_days(t, card + 1)),
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
            out["redeemSpecialRules"] = _redeem_special(fund, t)
        elif op == "redeem":
            out["minRedeemShare"] = 0.01 if fund.fund_type == "货币型" else 1.0
            out["expectConfirmDate"] = add_txn_days(t, trade["confirm_days"]).isoformat()
            out["tradeTimeFlows"] = {}
            out["feeRateRules"] = {"redeemFeeRateRules": redeem_rules(fees["redeem"]), "runFeeRateRule": run}
            out["redeemSpecialRules"] = _redeem_special(fund, t)
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

    return _batch(ctx, args, tool, data)


# ---------------------------------------------------------------- splits, dividends


@qieman_builder("BatchGetFundsSplitHistory")
def build_split_history(ctx: BuildContext, args: dict[str, Any]) -> list[dict[str, Any]]:
    """Share splits, newest first (most funds have none)."""

    def data(c: BuildContext, fund: Fund) -> dict[str, Any]:
        records = [
            {"splitDate": s["date"], "splitType": s["type"], "splitRatio": s["ratio"]}
            for s in reversed(fund.splits)
        ]
        return {"fundCode": fund.code, "fundName": fund.name, "splitRecords": records}

    return _batch(ctx, args, "BatchGetFundsSplitHistory", data)


@qieman_builder("BatchGetFundsDividendRecord")
def build_dividend_record(ctx: BuildContext, args: dict[str, Any]) -> list[dict[str, Any]]:
    """Cash dividends, newest first."""

    def data(c: BuildContext, fund: Fund) -> dict[str, Any]:
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

    return _batch(ctx, args, "BatchGetFundsDividendRecord", data)


# ---------------------------------------------------------------- announcements


def _announcement_link(item: dict) -> str:
    d = date.fromisoformat(item["date"])
    return f"https://cdn-fi.yingmi.cn/{d.year}/{d.month:02d}/{d.day:02d}/{item['id']}.PDF"


def _announcement_row(item: dict) -> dict[str, Any]:
    return {
        "基金代码": item["fund_code"],
        "基金全称": item["fund_full_name"],
        "基金简称": item["fund_name"],
        "公告ID": item["id"],
        "公告日期": item["date"],
        "公告来源": item["source"],
        "公告标题": item["title"],
        "公告链接": _announcement_link(item),
        "公告类型代码": item["type_code"],
        "公告类型": item["type_name"],
    }


@qieman_builder("GetFundAnnouncements")
def build_announcements(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """Announcements of the requested funds merged newest first, paged from 1 (default page size 10)."""
    tool = "GetFundAnnouncements"
    codes = fund_codes_arg(args, tool)
    page = int_arg(args, "pageNum", tool, 1, 1)
    size = int_arg(args, "pageSize", tool, 10, 1)
    if size > 100:
        raise ToolInputError(f"{tool}: pageSize must be at most 100, got {size}")
    items = [item for code in codes for item in ctx.world.fund_announcements(code)]
    items.sort(key=lambda it: (it["date"], it["id"]), reverse=True)
    rows = items[(page - 1) * size : page * size]
    return {
        "pageSize": size,
        "rows": [_announcement_row(it) for it in rows],
        "status": "查询成功",
        "hasMoreRows": page * size < len(items),
    }


@qieman_builder("GetAnnouncementContent")
def build_announcement_content(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """The full text of one announcement; an id the world never issued is refused as not found."""
    ann_id = args.get("announcementId")
    if not isinstance(ann_id, str) or not _ANNOUNCEMENT_ID_RE.match(ann_id):
        raise ToolInputError(
            f"GetAnnouncementContent: announcementId must be a 12-digit 公告ID from GetFundAnnouncements, got {ann_id!r}"
        )
    item = ctx.world.announcement_content(ann_id)
    if item is None:
        raise ToolInputError(f"GetAnnouncementContent: no announcement with announcementId {ann_id!r}")
    return {
        "公告ID": item["id"],
        "公告标题": item["title"],
        "公告日期": item["date"],
        "公告类型": item["type_name"],
        "基金代码": item["fund_code"],
        "公告链接": _announcement_link(item),
        "公告内容": item["content"],
    }


__all__ = ["amount_rules", "fund_codes_arg", "redeem_rules", "run_fee_rule", "trade_limit"]
