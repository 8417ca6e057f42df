"""Simulated Qieman fund-analysis and fund-screening tools (server/sim/qieman/fund_*.py)."""

from __future__ import annotations

import pytest

from finmcp.server.sim import Simulator
from finmcp.server.world.fund_profiles import BOND_TYPE_GROUPS, asset_ratios
from finmcp.tool_specs.inventory import load_inventory

INVENTORY = load_inventory("qieman79")
WINDOWS = [
    "LAST_3_MONTH",
    "LAST_YEAR",
    "LAST_3_YEAR",
    "fromSetupDate",
    "sinceTakingOffice",
    "LatestReportDate",
]


@pytest.fixture(scope="module")
def codes(sim: Simulator) -> dict[str, list[str]]:
    w = sim.world
    return {
        t: w.codes_by_type(t)[:3] for t in ("股票型", "混合型", "债券型", "指数型", "货币型", "QDII型", "FOF")
    }


SINGLE_FUND_TOOLS = [
    "getFundBenchmarkInfo",
    "getFundIndustryAllocation",
    "getFundIndustryConcentration",
    "getFundIndustryReturns",
    "getFundTurnoverRate",
    "fund-equity-position",
    "fund-recovery-ability",
    "fund-sector-preference",
    "getMarketTimingIndicator",
    "getBondIndicator",
]
LIST_TOOLS = [
    "getFundIndustryPreference",
    "getStockAllocationAndMetricsByFundCode",
    "getQdFundAreaAllocation",
    "getBondAllocationByFundCode",
    "getBondFundCreditRatingLevel",
    "getFundDiveCount",
]


@pytest.mark.parametrize("tool", SINGLE_FUND_TOOLS)
def test_single_fund_tools_validate_for_every_fund_type(sim, codes, tool, call):
    for fund_codes in codes.values():
        value = call(tool, {"fundCode": fund_codes[0]})
        assert value["fundCode"] == fund_codes[0]


@pytest.mark.parametrize("tool", LIST_TOOLS)
def test_list_tools_skip_unknown_codes(sim, codes, tool, call):
    wanted = [c for group in codes.values() for c in group[:1]]
    value = call(tool, {"fundCodeList": [*wanted, "999999"]})
    assert [f["fundCode"] for f in value["funds"]] == wanted
    assert call(tool, {"fundCodeList": ["999999"]})["funds"] == []


@pytest.mark.parametrize("tool", ["getFundIndustryAllocation", "getFundTurnoverRate", "getFundDiveCount"])
def test_every_time_range_is_accepted(sim, codes, tool, call):
    for window in WINDOWS:
        key = "fundCodeList" if tool == "getFundDiveCount" else "fundCode"
        arg = codes["混合型"][:2] if key == "fundCodeList" else codes["混合型"][0]
        assert call(tool, {key: arg, "timeRange": window})["timeRange"] == window


def test_attribution_tools(sim, codes, call, error_text):
    stock, bond = codes["股票型"][0], codes["债券型"][0]
    for period in ("LAST_YEAR", "LAST_3_YEAR"):
        b = call("getFundBrinsonIndicator", {"fundCode": stock, "timePeriod": period})
        parts = b["allocationEffect"] + b["selectionEffect"] + b["interactionEffect"]
        assert parts == pytest.approx(b["totalExcessReturn"], abs=2e-6)
        assert sum(d["allocationEffect"] for d in b["industryDetails"]) == pytest.approx(
            b["allocationEffect"], abs=2e-6
        )
        c = call("getFundCampisiIndicator", {"fundCode": bond, "timePeriod": period})
        effects = c["incomeEffect"] + c["treasuryEffect"] + c["spreadEffect"] + c["selectionEffect"]
        assert effects == pytest.approx(c["fundReturn"], abs=3e-6)
        series, _, _ = sim.world.fund_nav_series(bond)
        assert c["excessReturn"] == pytest.approx(c["fundReturn"] - c["benchmarkReturn"], abs=2e-6)
        assert series.adj[-1] > 0
    assert "bond" in error_text("getFundCampisiIndicator", {"fundCode": stock})
    assert "stocks" in error_text("getFundBrinsonIndicator", {"fundCode": codes["货币型"][0]})


def test_diagnosis_by_code_and_by_name(sim, codes, call, error_text):
    code = codes["股票型"][1]
    by_code = call("GetFundDiagnosis", {"fundNameOrCode": code})
    by_name = call("GetFundDiagnosis", {"fundNameOrCode": by_code["fundName"]})
    assert by_name == by_code
    fund = sim.world.fund(code)
    assert by_code["nav"] == fund.latest["nav"] and by_code["riskLevel"] == fund.risk_name
    assert [p["period"] for p in by_code["performanceMetrics"]] == ["近1年", "今年来", "成立以来"]
    assert by_code["performanceMetrics"][2]["returnRate"] == pytest.approx(
        fund.performance["成立来"], abs=1e-4
    )
    assert by_code["url"] == f"https://qieman.com/funds/{code}"
    assert "zzzz" in error_text("GetFundDiagnosis", {"fundNameOrCode": "zzzz不存在的基金qqq"})


def test_fund_risk_and_asset_class_analysis(sim, codes, call):
    wanted = [codes["债券型"][0], codes["股票型"][0], codes["货币型"][0]]
    rows = call("AnalyzeFundRisk", {"fundCodes": [*wanted, "999999"]})
    assert [r["fundCode"] for r in rows] == wanted
    bond, stock = rows[0], rows[1]
    assert bond["riskScore"] < stock["riskScore"]
    assert 0 <= bond["rSquared"] <= 1 and stock["standardError"] ** 2 == pytest.approx(
        stock["residualVariance"], rel=0.1
    )
    assert call("AnalyzeFundRisk", {"fundCodes": ["999999"]}) == []
    tree = call(
        "GetFundAssetClassAnalysis",
        {"holdingList": [{"fundCode": wanted[0], "amount": 3000}, {"fundCode": wanted[1], "amount": 1000}]},
    )
    assert tree["totalAmount"] == 4000
    tops = {n["categoryName"]: n for n in tree["assetClassCategoryInfo"]}
    assert tops["债券固收"]["ratio"] == 0.75 and tops["股票权益"]["amount"] == 1000


def test_asset_ratio_replay_matches_world_fund_records(sim):
    w = sim.world
    for fund_type in ("股票型", "混合型", "债券型", "指数型", "货币型", "QDII型", "FOF"):
        for code in w.codes_by_type(fund_type)[:6]:
            fund = w.fund(code)
            expected = tuple(a["ratio"] for a in fund.asset_allocation)
            assert asset_ratios(w, w.fund_stub(code)) == expected, code


def test_positions_match_the_fund_record(sim, codes, call):
    w = sim.world
    for code in (codes["股票型"][0], codes["债券型"][0], codes["混合型"][0]):
        fund = w.fund(code)
        stock = next(a["ratio"] for a in fund.asset_allocation if a["name"] == "股票")
        bond = next(a["ratio"] for a in fund.asset_allocation if a["name"] == "债券")
        assert call("fund-equity-position", {"fundCode": code})["equityPosition"] == stock
        alloc = call("getBondAllocationByFundCode", {"fundCodeList": [code]})["funds"][0]
        total = sum(r["weight"] for r in alloc["bondTypeAllocation"])
        assert total == pytest.approx(bond, abs=0.003)
        bond_only = call("getBondAllocationByFundCode", {"fundCodeList": [code], "assetType": "bond_asset"})
        expected = 1.0 if bond > 0 else 0.0
        assert sum(r["weight"] for r in bond_only["funds"][0]["bondTypeAllocation"]) == pytest.approx(
            expected, abs=0.003
        )
    bond_fund = call("getBondAllocationByFundCode", {"fundCodeList": [codes["债券型"][0]]})["funds"][0]
    assert sum(r["weight"] for r in bond_fund["bondTypeAllocation"]) > 0.9  # bonds dominate a bond fund


def test_latest_industries_come_from_the_holdings_and_windows_move_them(sim, codes, call):
    code = codes["股票型"][0]
    fund = sim.world.fund(code)
    latest = call("getFundIndustryAllocation", {"fundCode": code})
    names = [x["industry"] for x in fund.industry_allocation]
    assert [x["industryName"] for x in latest["industryList"]] == names
    total = sum(x["ratio"] for x in fund.industry_allocation)
    assert latest["industryList"][0]["weight"] == pytest.approx(
        fund.industry_allocation[0]["ratio"] / total, abs=1e-4
    )
    one = call("getFundIndustryAllocation", {"fundCode": code, "timeRange": "LAST_YEAR"})
    three = call("getFundIndustryAllocation", {"fundCode": code, "timeRange": "LAST_3_YEAR"})
    assert one["industryList"] != three["industryList"] != latest["industryList"]
    assert one == call("getFundIndustryAllocation", {"fundCode": code, "timeRange": "LAST_YEAR"})
    conc = call("getFundIndustryConcentration", {"fundCode": code, "timeRange": "LAST_YEAR"})
    assert conc["top1Concentration"] == one["industryList"][0]["weight"]
    assert conc["top1Concentration"] <= conc["top3Concentration"] <= conc["top5Concentration"] <= 1.0001


def test_recovery_and_dives_come_from_the_nav_series(sim, codes, call):
    code = codes["股票型"][0]
    rows = sim.world.nav_history(code)
    value = call("fund-recovery-ability", {"fundCode": code})
    assert value["maxDrawdown"] < 0
    dives = call("getFundDiveCount", {"fundCodeList": [code], "timeRange": "LAST_YEAR"})["funds"][0]
    year = [r["daily_return"] for r in rows if r["date"] > "2024-09-30" and r["daily_return"] is not None]
    assert dives["maxDailyDrop"] == pytest.approx(min(year), abs=1e-4)
    assert dives["diveCount"] == sum(1 for r in year if r < -0.03)
    short = call("getFundDiveCount", {"fundCodeList": [code], "timeRange": "LAST_3_MONTH"})["funds"][0]
    assert short["diveCount"] <= dives["diveCount"]


def test_bond_type_screen_honours_thresholds_and_matches_the_allocation_tool(sim, call):
    args = {"thresholdList": [0.3, 0.6], "operator": "between", "bondType": "credit", "maxResultSize": 15}
    value = call("filterBondFundByBondType", args)
    weights = [f["weight"] for f in value["funds"]]
    assert value["total"] == len(weights) == 15
    assert weights == sorted(weights, reverse=True) and all(0.3 <= x <= 0.6 for x in weights)
    for f in value["funds"][:3]:
        assert sim.world.fund_stub(f["fundCode"]).fund_type == "债券型"
        alloc = call("getBondAllocationByFundCode", {"fundCodeList": [f["fundCode"]]})["funds"][0]
        credit = sum(
            r["weight"] for r in alloc["bondTypeAllocation"] if r["bondType"] in BOND_TYPE_GROUPS["credit"]
        )
        assert credit == pytest.approx(f["weight"], abs=0.0005)
    lt = call(
        "filterBondFundByBondType",
        {"thresholdList": [0.05], "operator": "lt", "bondType": "convertible"},
    )
    assert all(f["weight"] < 0.05 for f in lt["funds"]) and len(lt["funds"]) == 20


def test_rating_and_turnover_screens_match_their_detail_tools(sim, call):
    value = call("filterBondFundByCreditRating", {"thresholdList": [0.5], "sumRatingType": "长期AAA"})
    assert value["funds"] and all(f["weight"] >= 0.5 and f["ratingType"] == "长期AAA" for f in value["funds"])
    top = value["funds"][0]
    detail = call(
        "getBondFundCreditRatingLevel", {"fundCodeList": [top["fundCode"]], "sumRatingType": "长期AAA"}
    )
    assert detail["funds"][0]["ratingDistribution"] == [{"ratingLevel": "长期AAA", "weight": top["weight"]}]
    turn = call(
        "filterStockFundByStockTurnover",
        {"thresholdList": [4.0], "operator": "gt", "timeRange": "LAST_YEAR"},
    )
    assert turn["funds"] and all(f["turnoverRate"] > 4.0 for f in turn["funds"])
    code = turn["funds"][0]["fundCode"]
    assert sim.world.fund_stub(code).fund_type in ("股票型", "混合型")
    one = call("getFundTurnoverRate", {"fundCode": code, "timeRange": "LAST_YEAR"})
    assert one["turnoverRate"] == turn["funds"][0]["turnoverRate"]
    older = call(
        "filterStockFundByStockTurnover",
        {"thresholdList": [4.0], "operator": "gt", "reportDate": "2024.12.31"},
    )
    assert older["funds"] != turn["funds"] and older["funds"][0]["reportDate"] == "2024-12-31"


def test_alert_screen(sim, call):
    for kind in ("dailyDive", "weekDive", "unusual"):
        value = call("getBondFundWithAlertRecord", {"bondAlterType": kind, "maxResultSize": 5})
        assert value["bondAlterType"] == kind and len(value["funds"]) <= 5
        rates = [f["returnRate"] for f in value["funds"]]
        assert rates == sorted(rates)
        for f in value["funds"]:
            assert sim.world.fund_stub(f["fundCode"]).fund_type == "债券型" and f["alertDate"] <= "2025-09-30"
    strict = call("getBondFundWithAlertRecord", {"divingThreshold": -0.05})
    assert strict["funds"] == []


@pytest.mark.parametrize(
    ("tool", "args", "needle"),
    [
        ("getFundIndustryAllocation", {"fundCode": "999999"}, "999999"),
        ("fund-equity-position", {}, "fundCode"),
        ("getFundIndustryAllocation", {"fundCode": "000003", "timeRange": "LAST_10_YEAR"}, "timeRange"),
        ("filterBondFundByBondType", {"thresholdList": [30]}, "fractions"),
        ("filterBondFundByBondType", {"thresholdList": [0.3], "operator": "between"}, "two thresholds"),
        ("filterStockFundByStockTurnover", {"thresholdList": [1], "reportDate": "2024-03-31"}, "yyyy.MM.dd"),
        ("filterStockFundByStockTurnover", {"thresholdList": [1], "reportDate": "1999.12.31"}, "before"),
    ],
)
def test_bad_requests_are_refused_with_a_clear_message(sim, tool, args, needle, error_text):
    assert needle in error_text(tool, args)


def test_same_seed_same_text_and_seed_matters(codes):
    calls = [
        ("GetFundDiagnosis", {"fundNameOrCode": codes["混合型"][0]}),
        ("getFundIndustryReturns", {"fundCode": codes["股票型"][0], "timeRange": "LAST_YEAR"}),
        ("filterBondFundByBondType", {"thresholdList": [0.5]}),
        ("getBondFundWithAlertRecord", {}),
        ("getMarketTimingIndicator", {"fundCode": codes["股票型"][0]}),
    ]
    a, b = Simulator(INVENTORY, seed=0), Simulator(INVENTORY, seed=0)
    for tool, args in calls:
        assert a.simulate(tool, args)["content"] == b.simulate(tool, args)["content"]
    other = Simulator(INVENTORY, seed=1)
    assert other.simulate(*calls[2])["content"] != a.simulate(*calls[2])["content"]


def test_free_text_filters_and_report_dates_are_lenient(sim, codes, call):
    qdii = codes["QDII型"][0]
    full = call("getQdFundAreaAllocation", {"fundCodeList": [qdii]})["funds"][0]["areas"]
    first = full[0]
    by_code = call("getQdFundAreaAllocation", {"fundCodeList": [qdii], "scope": first["areaCode"]})
    by_name = call("getQdFundAreaAllocation", {"fundCodeList": [qdii], "scope": first["areaName"]})
    assert by_code == by_name and by_code["funds"][0]["areas"] == [first]
    assert (
        call("getQdFundAreaAllocation", {"fundCodeList": [qdii], "scope": "MARS"})["funds"][0]["areas"] == []
    )
    bond = codes["债券型"][0]
    aaa = call("getBondFundCreditRatingLevel", {"fundCodeList": [bond], "sumRatingType": "AAA"})
    assert aaa["funds"][0]["ratingDistribution"][0]["ratingLevel"] == "长期AAA"
    assert (
        call("filterBondFundByCreditRating", {"thresholdList": [0.0], "sumRatingType": "BBB"})["funds"] == []
    )
    mid = call("filterStockFundByStockTurnover", {"thresholdList": [1.0], "reportDate": "2024.05.20"})
    q1 = call("filterStockFundByStockTurnover", {"thresholdList": [1.0], "reportDate": "2024.03.31"})
    assert mid == q1 and q1["funds"][0]["reportDate"] == "2024-03-31"
    future = call("filterStockFundByStockTurnover", {"thresholdList": [1.0], "reportDate": "2025.09.23"})
    assert future == call("filterStockFundByStockTurnover", {"thresholdList": [1.0]})


def test_diagnosis_by_unknown_code_says_not_found_instead_of_another_fund(sim):
    from finmcp.server.sim import Simulator
    from finmcp.tool_specs.inventory import load_inventory

    sim = Simulator(load_inventory("qieman79"), seed=0)
    unknown = next(f"{n:06d}" for n in range(1, 999999) if sim.world.fund(f"{n:06d}") is None)
    result = sim.simulate("GetFundDiagnosis", {"fundNameOrCode": unknown})
    assert result["isError"] is True
    assert unknown in result["content"][0]["text"]
    known = sim.world.fund_codes()[0]
    assert sim.simulate("GetFundDiagnosis", {"fundNameOrCode": known})["isError"] is False


def test_warmed_bond_screens_answer_like_cold_ones() -> None:
    """Start-up work for the bond screens (asset ratios, latest bond-type mixes) changes no byte."""
    from finmcp.server.sim.qieman.fund_screens import warm_bond_screens

    inventory = load_inventory("qieman79")
    cold, warmed = Simulator(inventory, seed=3), Simulator(inventory, seed=3)
    warm_bond_screens(warmed.world)
    sizes = warmed.world.cache_sizes()
    assert sizes["asset_ratios"] == len(warmed.world.codes_by_type("债券型")) and sizes["bond_mix"] > 100
    for tool, args in (
        ("filterBondFundByBondType", {"thresholdList": [0.3], "bondType": "credit"}),
        ("filterBondFundByCreditRating", {"thresholdList": [0.2], "timeRange": "LAST_2_YEAR"}),
    ):
        assert warmed.simulate(tool, args) == cold.simulate(tool, args)
