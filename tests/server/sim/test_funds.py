"""Simulated Qieman fund data tools (server/sim/qieman/fund_{search,detail,history,reports,rules}.py) and
common tools (common.py)."""

from __future__ import annotations

import json
import re
from datetime import date

import pytest

from finmcp.server.sim import Simulator
from finmcp.server.world.dates import shift_months
from finmcp.tool_specs.inventory import load_inventory

INVENTORY = load_inventory("qieman79")
CN_DATE = re.compile(r"^\d{4}年\d{2}月\d{2}日$")
PCT = re.compile(r"^-?\d+\.\d{2}%$")


@pytest.fixture(scope="module")
def codes(sim: Simulator) -> dict[str, list[str]]:
    w = sim.world
    return {
        "any": w.fund_codes()[:3],
        "money": w.codes_by_type("货币型")[:2],
        "bond": w.codes_by_type("债券型")[:2],
        "index": w.codes_by_type("指数型")[:2],
        "qdii": w.codes_by_type("QDII型")[:1],
    }


BATCH_TOOLS = (
    "BatchGetFundsDetail",
    "BatchGetFundNavHistory",
    "GetBatchFundPerformance",
    "BatchGetFundsHolding",
    "BatchGetFundsHolderInfo",
    "BatchGetFundsFeeRule",
    "BatchGetFundTradeLimit",
    "BatchGetFundsSplitHistory",
    "BatchGetFundsDividendRecord",
)


@pytest.mark.parametrize("tool", BATCH_TOOLS)
@pytest.mark.parametrize("kind", ["any", "money", "bond", "index", "qdii"])
def test_batch_tools_answer_each_known_code_in_order(sim, codes, tool, kind, call):
    wanted = codes[kind]
    value = call(tool, {"fundCodes": [*wanted, "999999", wanted[0]]})
    assert [e["fundCode"] for e in value] == wanted  # unknown skipped, duplicate dropped
    for entry in value:
        assert entry["url"] == f"https://qieman.com/funds/{entry['fundCode']}"


@pytest.mark.parametrize("tool", BATCH_TOOLS)
def test_batch_tools_refuse_malformed_and_oversized_requests(sim, tool, call, error_text):
    assert "fundCodes[0]" in error_text(tool, {"fundCodes": ["12345"]})
    assert "at most 20" in error_text(tool, {"fundCodes": [f"{i:06d}" for i in range(21)]})
    assert call(tool, {"fundCodes": ["999999"]}) == []


@pytest.mark.parametrize("op", ["subscribe", "allot", "redeem", "convert"])
def test_trade_rules_per_operation(sim, codes, op, call):
    wanted = list(dict.fromkeys(codes["any"] + codes["money"]))
    value = call("BatchGetFundTradeRules", {"fundCodes": wanted, "op": op})
    assert [e["fundCode"] for e in value] == wanted
    for entry in value:
        data = entry["data"]
        rules = data["feeRateRules"]
        if op in ("subscribe", "allot"):
            assert f"{op}FeeRateRules" in rules and "minBuyAmount" in data
            assert CN_DATE.match(data["redeemSpecialRules"]["redeemToWalletTransferIntoTxnDayDate"])
        elif op == "redeem":
            assert "redeemFeeRateRules" in rules and data["minRedeemShare"] > 0
        else:
            assert rules is None or "redeemFeeRateRules" in rules


def test_trade_rules_after_cut_off_move_to_next_trading_day(sim, codes, call, error_text):
    before = call(
        "BatchGetFundTradeRules",
        {"fundCodes": codes["any"][:1], "op": "redeem", "txnTime": "2025-09-29 14:59:59"},
    )
    after = call(
        "BatchGetFundTradeRules",
        {"fundCodes": codes["any"][:1], "op": "redeem", "txnTime": "2025-09-29 15:00:00"},
    )
    assert before[0]["data"]["expectConfirmDate"] < after[0]["data"]["expectConfirmDate"]
    assert "txnTime" in error_text(
        "BatchGetFundTradeRules", {"fundCodes": codes["any"][:1], "op": "allot", "txnTime": "yesterday"}
    )


def test_search_funds_pages_from_zero_and_respects_size(sim, call):
    first = call("SearchFunds", {"keyword": "债", "size": 5})
    second = call("SearchFunds", {"keyword": "债", "size": 5, "page": 1})
    assert first["total"] == second["total"] > 10
    assert len(first["funds"]) == len(second["funds"]) == 5
    assert not {f["fundCode"] for f in first["funds"]} & {f["fundCode"] for f in second["funds"]}
    assert all("债" in f["fundName"] for f in first["funds"] + second["funds"])
    assert all("yearlyRoe" not in f for f in first["funds"])  # printed only when sorting
    beyond = call("SearchFunds", {"keyword": "债", "page": 10**4})
    assert beyond == {"funds": [], "total": first["total"]}


def test_search_funds_sorting_category_and_status(sim, call, error_text):
    ranked = call("SearchFunds", {"category": "货币型", "sortColumn": "七日年化收益率", "size": 10})
    yields = [f["yearlyRoe"] for f in ranked["funds"]]
    assert yields == sorted(yields, reverse=True) and all(
        f["fundInvestType"] == "04" for f in ranked["funds"]
    )
    up = call(
        "SearchFunds", {"category": "债券型", "sortColumn": "近一年收益", "sortOrder": "升序", "size": 8}
    )
    returns = [f["returnYear"] for f in up["funds"]]
    assert returns == sorted(returns)
    open_only = call("SearchFunds", {"keyword": "混合", "tradeStatus": "暂停申购", "size": 50})
    assert open_only["funds"] and all(f["status"] == "5" for f in open_only["funds"])
    assert call("SearchFunds", {"keyword": "盈米宝不存在"}) == {"funds": [], "total": 0}
    assert "tradeStatus" in error_text("SearchFunds", {"tradeStatus": "随便"})


def test_search_codes_resolve_in_every_fund_tool(sim, call):
    found = call("SearchFunds", {"keyword": "红利", "size": 4})["funds"]
    wanted = [f["fundCode"] for f in found]
    detail = call("BatchGetFundsDetail", {"fundCodes": wanted})
    assert [d["data"]["summary"]["fundName"] for d in detail] == [f["fundName"] for f in found]
    assert [d["data"]["summary"]["uiSetupDate"] for d in detail] == [f["setupDate"] for f in found]
    for tool, extra in (
        ("BatchGetFundNavHistory", {}),
        ("BatchGetFundsFeeRule", {}),
        ("BatchGetFundTradeRules", {"op": "allot"}),
    ):
        assert [e["fundCode"] for e in call(tool, {"fundCodes": wanted, **extra})] == wanted


def test_detail_agrees_with_nav_history(sim, codes, call):
    code = codes["any"][0]
    summary = call("BatchGetFundsDetail", {"fundCodes": [code]})[0]["data"]["summary"]
    latest = call("BatchGetFundNavHistory", {"fundCodes": [code]})[0]["data"]["data"][0]
    assert summary["nav"] == latest["nav"] and summary["navDate"] == latest["navDate"]
    assert summary["dailyReturn"] == latest["dailyReturn"] and PCT.match(summary["oneYearReturn"])
    assert summary["setupDate"] % 1000 == 0 and CN_DATE.match(summary["netAssetUpdateDate"])


@pytest.mark.parametrize(
    "dimension,months",
    [("oneMonth", 1), ("quarter", 3), ("halfYear", 6), ("oneYear", 12), ("threeYear", 36)],
)
def test_nav_history_windows(sim, codes, dimension, months, call):
    code = codes["any"][0]
    data = call("BatchGetFundNavHistory", {"fundCodes": [code], "dimensionType": dimension})[0]["data"]
    assert data["curDimensionType"] == dimension and len(data["allDimension"]) == 9
    rows = data["data"]
    dates = [date(int(r["navDate"][:4]), int(r["navDate"][5:7]), int(r["navDate"][8:10])) for r in rows]
    assert dates == sorted(dates, reverse=True)
    assert dates[-1] >= shift_months(dates[0], -months) > dates[-1] - (dates[-2] - dates[-1]) * 5
    assert all(CN_DATE.match(r["navDate"]) and PCT.match(r["dailyReturn"]) for r in rows)
    asc = call("BatchGetFundNavHistory", {"fundCodes": [code], "dimensionType": dimension, "isDesc": False})
    assert asc[0]["data"]["data"] == list(reversed(rows))


def test_nav_history_falls_back_to_setup_for_young_funds(sim, call):
    young = next(
        c for c, s in sim.world.fund_universe().items() if date(2024, 1, 1) < s.setup_date < date(2025, 6, 1)
    )
    data = call("BatchGetFundNavHistory", {"fundCodes": [young], "dimensionType": "fiveYear"})[0]["data"]
    valid = {d["type"]: d["isValid"] for d in data["allDimension"]}
    assert valid["fiveYear"] is False and valid["setupDay"] is True and valid["oneMonth"] is True
    assert data["curDimensionType"] == "setupDay" and data["data"][-1]["dailyReturn"] is None


def test_fee_rules_shapes(sim, codes, call):
    value = call("BatchGetFundsFeeRule", {"fundCodes": codes["any"] + codes["money"]})
    for entry in value:
        data = entry["data"]
        first = data["allotFeeRateRules"][0]
        stub = sim.world.fund_stub(entry["fundCode"])
        if stub.fund_type == "货币型" or stub.share_class in ("B", "C"):
            assert first["uiLimitText"] == ">0元" and first["feeRate"] is None and first["discount"] == 1
        else:
            assert first["uiLimitText"].startswith("＜") and first["feeRate"] > 0
        assert data["redeemFeeRateRules"][0]["lowerLimitUnit"] == "天"
        run = data["runFeeRateRule"]
        assert run["uiManagerFeeRateText"] == f"{run['managerFeeRate'] * 100:.2f}%/年"


def test_holdings_report_dates(sim, codes, call, error_text):
    latest = call("BatchGetFundsHolding", {"fundCodes": codes["any"][:1]})[0]["data"]
    older = call("BatchGetFundsHolding", {"fundCodes": codes["any"][:1], "reportDate": "2024-12-31"})[0][
        "data"
    ]
    assert latest["reportDate"] == "2025-06-30" and older["reportDate"] == "2024-12-31"
    assert {s["changeType"] for s in latest["stockHoldings"]} <= {"新增", "增持", "减持", "不变"}
    snapped = call("BatchGetFundsHolding", {"fundCodes": ["000003"], "reportDate": "2024-12-30"})
    assert snapped[0]["data"]["reportDate"] == "2024-09-30"
    unpublished = call("BatchGetFundsHolding", {"fundCodes": ["000003"], "reportDate": "2025-09-30"})
    assert unpublished[0]["data"] == latest
    assert "reportDate" in error_text(
        "BatchGetFundsHolding", {"fundCodes": ["000003"], "reportDate": "2025-13-01"}
    )


def test_announcements_page_and_resolve(sim, codes, call, error_text):
    code = codes["any"][0]
    everything = call("GetFundAnnouncements", {"fundCodes": [code], "pageSize": 100})
    total = len(everything["rows"])
    assert total >= 3 and everything["hasMoreRows"] is False and everything["status"] == "查询成功"
    first = call("GetFundAnnouncements", {"fundCodes": [code], "pageNum": 1, "pageSize": 2})
    second = call("GetFundAnnouncements", {"fundCodes": [code], "pageNum": 2, "pageSize": 2})
    assert first["rows"] + second["rows"] == everything["rows"][:4] and first["hasMoreRows"] is True
    row = first["rows"][0]
    content = call("GetAnnouncementContent", {"announcementId": row["公告ID"]})
    assert content["公告标题"] == row["公告标题"] and content["基金代码"] == code and content["公告内容"]
    assert "no announcement" in error_text("GetAnnouncementContent", {"announcementId": "800000000000"})
    assert "12-digit" in error_text("GetAnnouncementContent", {"announcementId": "abc"})
    assert call("GetFundAnnouncements", {"fundCodes": ["999999"]})["rows"] == []


def test_guess_and_popular(sim, codes, call):
    stub = sim.world.fund_stub(codes["any"][1])
    guess = call("GuessFundCode", {"fundNameOrCode": stub.name})
    assert guess["fundCode"] in {c for c, s in sim.world.fund_universe().items() if s.name == stub.name}
    assert call("GuessFundCode", {"fundNameOrCode": "zzqqxx"}) == {
        "fundCode": "",
        "fundName": "",
        "candidates": [],
    }
    popular = call("GetPopularFund", {"size": 4})["funds"]
    assert [f["rank"] for f in popular] == [1, 2, 3, 4]
    assert len(call("GetPopularFund", {})["funds"]) == 6


def test_performance_and_holder_info(sim, codes, call):
    perf = call("GetBatchFundPerformance", {"fundCodes": codes["any"][:1]})[0]["data"]
    periods = {p["period"]: p for p in perf["periodReturns"]}
    assert len(periods) == 10 and (perf["maxDrawdown"] is None or perf["maxDrawdown"] <= 0)
    assert periods["oneYear"]["rank"] is None or re.match(r"^\d+/\d+$", periods["oneYear"]["rank"])
    holders = call("BatchGetFundsHolderInfo", {"fundCodes": codes["any"][:1]})[0]["data"]
    assert holders["institutionalRatio"] + holders["individualRatio"] == pytest.approx(1.0)
    assert holders["totalShares"] == pytest.approx(sum(c["shares"] for c in holders["shareClasses"]))


# ---------------------------------------------------------------- common tools


def test_current_time_and_txn_days(sim, call, error_text):
    now = call("GetCurrentTime", {})
    assert now["currentTime"] == "2025-09-30 10:00:00" and now["weekday"] == "星期二"
    window = call("GetTxnDayRange", {"beforeDays": "3", "afterDays": "2"})
    assert window["currentTxnDate"] == "2025-09-30" and window["afterTxnDays"] == ["2025-10-09", "2025-10-10"]
    weekend = call(
        "GetTxnDayRange", {"centerTime": "2025-09-27 10:00:00", "beforeDays": "1", "afterDays": "0"}
    )
    assert weekend["isTxnDay"] is False and weekend["currentTxnDate"] == "2025-09-29"
    assert weekend["beforeTxnDays"] == ["2025-09-26"] and weekend["afterTxnDays"] == []
    late = call("GetTxnDayRange", {"centerTime": "2025-09-29 15:00:00", "beforeDays": "0", "afterDays": "0"})
    assert late["currentTxnDate"] == "2025-09-30"
    assert "beforeDays" in error_text("GetTxnDayRange", {"beforeDays": "-1", "afterDays": "0"})
    assert "centerTime" in error_text(
        "GetTxnDayRange", {"centerTime": "2025-02-30 10:00:00", "beforeDays": "1", "afterDays": "1"}
    )


def test_render_tools(sim, call, error_text):
    option = json.dumps({"xAxis": {"type": "category"}, "series": [{"type": "bar", "data": [1, 2]}]})
    url = call("RenderEchart", {"option": option})["url"]
    assert url.endswith(".png") and call("RenderEchart", {"option": option})["url"] == url
    assert call("RenderEchart", {"option": option, "width": "400"})["url"] != url
    assert "not valid JSON" in error_text("RenderEchart", {"option": "{series: [}"})
    assert "JSON object" in error_text("RenderEchart", {"option": "[1, 2]"})
    assert "width" in error_text("RenderEchart", {"option": option, "width": "0"})
    pdf = call("RenderHtmlToPdf", {"html": "<h1>报告</h1>", "options": {"format": "A4"}})["url"]
    assert pdf.endswith(".pdf") and pdf != call("RenderHtmlToPdf", {"html": "<h1>报告2</h1>"})["url"]
    assert "html" in error_text("RenderHtmlToPdf", {"html": "   "})


def test_same_seed_same_bytes(codes):
    script = [
        ("SearchFunds", {"keyword": "指数", "sortColumn": "近一年收益", "size": 5}),
        ("SearchFunds", {"category": "偏股型", "sortColumn": "综合费率", "page": 1, "size": 3}),
        ("BatchGetFundsDetail", {"fundCodes": codes["any"]}),
        ("GetBatchFundPerformance", {"fundCodes": codes["bond"]}),
        ("BatchGetFundsHolding", {"fundCodes": codes["any"], "reportDate": "2025-03-31"}),
        ("BatchGetFundsHolderInfo", {"fundCodes": codes["index"]}),
        ("GetFundAnnouncements", {"fundCodes": codes["any"]}),
        ("GetTxnDayRange", {"beforeDays": "5", "afterDays": "5"}),
    ]
    one, two = Simulator(INVENTORY, seed=0), Simulator(INVENTORY, seed=0)
    for tool, args in script:
        assert (
            one.simulate(tool, args)["content"][0]["text"] == two.simulate(tool, args)["content"][0]["text"]
        )
    other = Simulator(INVENTORY, seed=1)
    assert other.simulate(*script[0])["content"][0]["text"] != one.simulate(*script[0])["content"][0]["text"]


# ---------------------------------------------------------------- shapes of the recorded outputs


def test_key_sets_match_recorded_outputs(recorded, sim, codes, call):
    real = recorded("BatchGetFundsDetail")[0][0]
    ours = call("BatchGetFundsDetail", {"fundCodes": codes["qdii"]})[0]
    assert ours.keys() == real.keys() and ours["data"].keys() == real["data"].keys()
    assert ours["data"]["summary"].keys() == real["data"]["summary"].keys()
    assert ours["data"]["tradeLimit"].keys() == real["data"]["tradeLimit"].keys()
    assert ours["data"]["managers"][0].keys() == real["data"]["managers"][0].keys()

    real_nav = recorded("BatchGetFundNavHistory")[0][0]["data"]
    ours_nav = call("BatchGetFundNavHistory", {"fundCodes": codes["qdii"], "dimensionType": "oneYear"})[0][
        "data"
    ]
    assert ours_nav.keys() == real_nav.keys() and ours_nav["allDimension"] == real_nav["allDimension"]
    assert ours_nav["data"][0].keys() == real_nav["data"][0].keys()

    real_rules = recorded("BatchGetFundTradeRules")[0][0]["data"]
    ours_rules = call("BatchGetFundTradeRules", {"fundCodes": codes["money"], "op": "allot"})[0]["data"]
    assert ours_rules.keys() == real_rules.keys()
    assert ours_rules["feeRateRules"]["allotFeeRateRules"] == real_rules["feeRateRules"]["allotFeeRateRules"]
    assert ours_rules["redeemSpecialRules"].keys() == real_rules["redeemSpecialRules"].keys()

    real_fee = recorded("BatchGetFundsFeeRule")[0][1]["data"]
    ours_fee = call("BatchGetFundsFeeRule", {"fundCodes": codes["bond"]})[0]["data"]
    assert (
        ours_fee.keys() == real_fee.keys()
        and ours_fee["feeRateSummary"].keys() == real_fee["feeRateSummary"].keys()
    )
    assert ours_fee["allotFeeRateRules"][0].keys() == real_fee["allotFeeRateRules"][0].keys()

    real_ann = recorded("GetFundAnnouncements")[0]
    ours_ann = call("GetFundAnnouncements", {"fundCodes": codes["any"], "pageNum": 1, "pageSize": 5})
    assert ours_ann.keys() == real_ann.keys() and ours_ann["rows"][0].keys() == real_ann["rows"][0].keys()

    for real_search in recorded("SearchFunds"):
        for row in real_search["funds"]:
            sort = "yearlyRoe" in row
            ours_row = call(
                "SearchFunds",
                {"keyword": "债", "sortColumn": "近一年收益"} if sort else {"keyword": "债"},
            )
            assert ours_row["funds"][0].keys() == row.keys()


def test_filtered_search_agrees_with_plain_search(sim, call):
    plain = call("SearchFunds", {"category": "债券型", "sortColumn": "近一年收益", "size": 100})["funds"]
    filtered = call(
        "SearchFunds",
        {"category": "债券型", "sortColumn": "近一年收益", "tradeStatus": "正常开放", "size": 20},
    )["funds"]
    assert filtered == [f for f in plain if f["status"] == "0"][:20]
