"""Planning tools: allocation plan -> composite model coherence and the CFP calculators' arithmetic."""

from __future__ import annotations

import json
from typing import Any

import pytest

from finmcp.server.sim import Simulator
from finmcp.tool_specs.inventory import load_inventory


# ------------------------------------------------------------------ plans
@pytest.mark.parametrize(
    "args",
    [
        {"expectedAnnualizedReturnRate": 0.06, "expectedDrawdown": 0.05},
        {"expectedAnnualizedReturnRate": 0.12, "expectedInvestTime": "overFive"},
        {"expectedDrawdown": 0.02, "expectedInvestTime": "spare"},
        {"expectedInvestTime": "oneYear"},
        {},
    ],
)
def test_plan_then_composite_model(args, sim, call):
    plan = call("GetAssetAllocationPlan", args)
    assert plan["assetPlanId"] in plan["description"]
    assert abs(sum(a["ratio"] for a in plan["assetAllocation"]) - 1) < 1e-6
    assert plan["correctedParams"]["expectedInvestTime"] == args.get("expectedInvestTime")
    model = call("GetCompositeModel", {"assetPlanId": plan["assetPlanId"]})
    assert model["assetPlanId"] == plan["assetPlanId"]
    assert {c["assetClass"]: c["ratio"] for c in model["assetClasses"]} == {
        a["assetClass"]: a["ratio"] for a in plan["assetAllocation"]
    }
    for cls in model["assetClasses"]:
        assert abs(sum(f["ratio"] for f in cls["funds"]) - cls["ratio"]) < 1e-6
        for fund in cls["funds"]:
            assert sim.world.fund_stub(fund["fundCode"]).name == fund["fundName"]


def test_return_target_drives_and_riskier_targets_hold_more_equity(call):
    low = call("GetAssetAllocationPlan", {"expectedAnnualizedReturnRate": 0.03})
    high = call("GetAssetAllocationPlan", {"expectedAnnualizedReturnRate": 0.10})
    assert low["correctedParams"]["correctionBasis"] == "收益率"
    equity = lambda p: sum(a["ratio"] for a in p["assetAllocation"] if "股票" in a["assetClass"])  # noqa: E731
    assert equity(high) > equity(low)
    by_drawdown = call("GetAssetAllocationPlan", {"expectedDrawdown": 0.08})
    assert by_drawdown["correctedParams"]["correctionBasis"] == "回撤"


def test_plan_and_model_bad_or_unknown_input(call, error_text):
    assert "expectedDrawdown" in error_text("GetAssetAllocationPlan", {"expectedDrawdown": 0})
    assert "expectedInvestTime" in error_text("GetAssetAllocationPlan", {"expectedInvestTime": "forever"})
    assert "assetPlanId" in error_text("GetCompositeModel", {"assetPlanId": "PLAN-1"})
    assert call("GetCompositeModel", {"assetPlanId": "AAP999999"}) == {
        "assetPlanId": "AAP999999",
        "assetClasses": [],
    }
    # the id seen in the FinMCP sample is a valid plan of the world
    assert call("GetCompositeModel", {"assetPlanId": "AAP000117"})["assetClasses"]


# ------------------------------------------------------------------ investment performance
def test_investment_performance_weights_and_verdict(call, error_text):
    args = {
        "totalInvestableAssets": 200000,
        "expectedReturnRate": 0.05,
        "shortMediumTermScheme": {"investmentAmount": 150000, "annualReturn": 0.03},
        "mediumLongTermScheme": {"investmentAmount": 50000, "annualReturn": 0.08},
    }
    out = call("AnalyzeInvestmentPerformance", args)
    assert out["weightedReturnRate"] == round((150000 * 0.03 + 50000 * 0.08) / 200000, 4)
    assert [s["weight"] for s in out["schemeAnalysis"]] == [0.75, 0.25]
    assert [s["type"] for s in out["schemeAnalysis"]] == ["中短期配置方案", "中长期配置方案"]
    assert out["feasibilityStatus"] == "不符合预期" and "低于预期" in out["feasibilityConclusion"]
    args["expectedReturnRate"] = 0.04
    assert call("AnalyzeInvestmentPerformance", args)["feasibilityStatus"] == "符合预期"
    only_short = call(
        "AnalyzeInvestmentPerformance",
        {
            "totalInvestableAssets": 1000,
            "shortMediumTermScheme": {"investmentAmount": 1000, "annualReturn": 0.05},
        },
    )
    assert only_short["hasMediumLongTermScheme"] is False and only_short["expectedReturnRate"] == 0.04
    over = call(
        "AnalyzeInvestmentPerformance",
        {
            "totalInvestableAssets": 1000,
            "shortMediumTermScheme": {"investmentAmount": 2000, "annualReturn": 0.05},
        },
    )
    assert over["feasibilityStatus"] == "不符合预期" and "超过可投资资产" in over["feasibilityConclusion"]
    assert "investmentAmount" in error_text(
        "AnalyzeInvestmentPerformance",
        {
            "totalInvestableAssets": 1000,
            "shortMediumTermScheme": {"investmentAmount": 0, "annualReturn": 0.05},
        },
    )


def test_investment_performance_reproduces_real_sample(shared_dir, call):
    sample = json.loads((shared_dir / "finmcp" / "train_data_demo.json").read_text(encoding="utf-8"))[4]
    messages = sample["messages"]
    for i, m in enumerate(messages):
        for tc in m.get("tool_calls") or []:
            if tc["function"]["name"] == "AnalyzeInvestmentPerformance":
                args = json.loads(tc["function"]["arguments"])
                real = next(x for x in messages[i + 1 :] if x.get("role") == "tool")
                assert call("AnalyzeInvestmentPerformance", args) == json.loads(real["content"])
                return
    pytest.fail("no AnalyzeInvestmentPerformance call in train sample 4")


# ------------------------------------------------------------------ CFP calculators
def test_family_members_ages_and_stage(sim, call, error_text):
    year = sim.world.as_of.year
    members = [
        {"role": "本人", "name": "甲", "birthDate": f"{year - 40}-01-01"},
        {"role": "配偶", "ageDescription": "38岁"},
        {"role": "子女", "birthDate": f"{year - 10}-01-01"},
        {"role": "父母", "birthDate": f"{year - 70}-01-01"},
    ]
    out = call("AnalyzeFamilyMembers", {"familyMembers": members})
    assert [m["age"] for m in out["members"]] == [40, 38, 10, 70]
    assert (out["totalMembers"], out["adultCount"], out["minorCount"], out["seniorCount"]) == (4, 3, 1, 1)
    assert out["lifeCycleStage"] == "家庭成长期"
    couple = call("AnalyzeFamilyMembers", {"familyMembers": members[:2]})
    assert couple["lifeCycleStage"] == "家庭形成期"
    single = call("AnalyzeFamilyMembers", {"familyMembers": [{"role": "本人", "ageDescription": "28"}]})
    assert single["lifeCycleStage"] == "单身期"
    retired = call("AnalyzeFamilyMembers", {"familyMembers": [{"role": "本人", "ageDescription": "65岁"}]})
    assert retired["lifeCycleStage"] == "家庭衰老期"
    grown = call(
        "AnalyzeFamilyMembers", {"familyMembers": [members[0], {"role": "子女", "ageDescription": "25岁"}]}
    )
    assert grown["lifeCycleStage"] == "家庭成熟期"
    assert "birthDate" in error_text(
        "AnalyzeFamilyMembers", {"familyMembers": [{"role": "本人", "birthDate": "2999-01-01"}]}
    )


def test_income_expense_arithmetic(call, error_text):
    out = call(
        "AnalyzeIncomeExpense",
        {
            "annualIncome": {"salary": 240000, "bonus": 60000},
            "annualExpense": {"dailyExpenses": 72000, "mortgagePayment": 48000, "travelExpenses": 30000},
        },
    )
    assert (out["totalIncome"], out["totalExpense"], out["annualSurplus"]) == (300000, 150000, 150000)
    assert out["savingsRate"] == 0.5
    assert out["monthlyEssentialExpense"] == (72000 + 48000) / 12  # travel is not essential
    assert [b["ratio"] for b in out["incomeBreakdown"]] == [0.8, 0.2]
    assert "salaryy" in error_text(
        "AnalyzeIncomeExpense", {"annualIncome": {"salaryy": 1}, "annualExpense": {}}
    )
    assert "bonus" in error_text("AnalyzeIncomeExpense", {"annualIncome": {"bonus": -5}, "annualExpense": {}})


def test_asset_liability_arithmetic(call):
    out = call(
        "AnalyzeAssetLiability",
        {
            "totalAssets": {"liquidAssets": 100000, "investmentAssets": 300000, "personalUseAssets": 1600000},
            "totalLiabilities": {"currentLiabilities": 20000, "personalUseLiabilities": 1180000},
        },
    )
    assert (out["totalAssets"], out["totalLiabilities"], out["netWorth"]) == (2000000, 1200000, 800000)
    assert out["debtRatio"] == 0.6 and "偏高" in out["summary"]
    assert "2000000元" in out["summary"]


def test_financial_indicators_values_and_verdicts(call, error_text):
    args = dict(
        totalAssets=1000000,
        totalLiabilities=300000,
        liquidAssets=60000,
        currentLiabilities=20000,
        investmentAssets=400000,
        investmentLiabilities=50000,
        annualIncome=200000,
        annualExpense=150000,
        annualInvestmentIncome=15000,
        monthlyEssentialExpense=10000,
    )
    out = {i["name"]: i for i in call("AnalyzeFinancialIndicators", args)["indicators"]}
    assert len(out) == 7
    assert out["资产负债率"]["value"] == 0.3 and out["资产负债率"]["status"] == "健康"
    assert out["清偿比率"]["value"] == 0.7
    assert out["结余比率"]["value"] == 0.25 and out["结余比率"]["status"] == "偏低"
    assert out["紧急备用金月数"]["value"] == 6 and out["紧急备用金月数"]["status"] == "健康"
    assert out["流动比率"]["value"] == 3
    assert out["投资与净资产比率"]["value"] == round(400000 / 700000, 4)
    assert out["财务自由度"]["value"] == 0.1 and out["财务自由度"]["status"] == "偏低"
    args["annualIncome"] = 0
    no_income = {i["name"]: i for i in call("AnalyzeFinancialIndicators", args)["indicators"]}
    assert no_income["结余比率"]["value"] is None
    args["liquidAssets"] = 700000  # with investments 400000 > total assets: computed, but flagged
    flagged = call("AnalyzeFinancialIndicators", args)
    assert "超过总资产" in flagged["summary"]
    assert {i["name"]: i for i in flagged["indicators"]}["流动比率"]["value"] == 35
    args["monthlyEssentialExpense"] = -1
    assert "monthlyEssentialExpense" in error_text("AnalyzeFinancialIndicators", args)


def _cash_flow_args(**over: Any) -> dict[str, Any]:
    args = dict(
        currentInvestableAssets=100000,
        returnRateConfig=[{"startAge": 30, "endAge": 64, "rate": 0.05}],
        familyMembers=[{"role": "配偶", "initialAge": 28}, {"role": "本人", "initialAge": 30}],
        continuousIncome=[{"startAge": 30, "endAge": 59, "amount": 100000, "growthRate": 0.02}],
        continuousExpenses=[{"startAge": 30, "endAge": 64, "amount": 80000, "inflationRate": 0.03}],
        oneTimeIncome=[{"startAge": 60, "amount": 50000}],
        oneTimeExpenses=[{"startAge": 40, "amount": 200000}],
    )
    args.update(over)
    return args


def test_cash_flow_projection_recurrence(sim, call):
    out = call("AnalyzeCashFlow", _cash_flow_args())
    rows = out["projection"]
    assert [r["age"] for r in rows] == list(range(30, 65))  # the user (本人), not the first member
    assert rows[0]["year"] == sim.world.as_of.year
    assert rows[1]["income"] == round(100000 * 1.02, 2) and rows[1]["expense"] == round(80000 * 1.03, 2)
    assert rows[10]["expense"] == round(80000 * 1.03**10 + 200000, 2)
    assert rows[30]["income"] == 50000  # salary ended at 59, one-off at 60
    assets = 100000.0
    for r in rows:
        assert abs(r["investmentReturn"] - max(assets, 0) * 0.05) < 0.02
        assert abs(r["netCashFlow"] - (r["income"] + r["investmentReturn"] - r["expense"])) < 0.02
        assets += r["netCashFlow"]
        assert abs(r["investableAssets"] - assets) < 0.05
    assert out["finalAssets"] == rows[-1]["investableAssets"]
    assert (out["depletionAge"] is None) == all(r["investableAssets"] >= 0 for r in rows)


def test_cash_flow_depletion_and_bad_bands(call, error_text):
    out = call("AnalyzeCashFlow", _cash_flow_args(continuousIncome=[], oneTimeIncome=[]))
    first_negative = next(r["age"] for r in out["projection"] if r["investableAssets"] < 0)
    assert out["depletionAge"] == first_negative and str(first_negative) in out["summary"]
    bad = _cash_flow_args(continuousExpenses=[{"startAge": 50, "endAge": 40, "amount": 1}])
    assert "continuousExpenses[0]" in error_text("AnalyzeCashFlow", bad)
    assert "familyMembers" in error_text("AnalyzeCashFlow", _cash_flow_args(familyMembers=[]))


def test_calculators_are_deterministic():
    a, b = Simulator(load_inventory("qieman79"), seed=0), Simulator(load_inventory("qieman79"), seed=3)
    args = _cash_flow_args()
    assert a.simulate("AnalyzeCashFlow", args) == b.simulate("AnalyzeCashFlow", args)  # pure: no world data
    plan = {"expectedAnnualizedReturnRate": 0.07}
    pid = json.loads(a.simulate("GetAssetAllocationPlan", plan)["content"][0]["text"])["assetPlanId"]
    fresh = Simulator(load_inventory("qieman79"), seed=0)
    assert a.simulate("GetCompositeModel", {"assetPlanId": pid}) == fresh.simulate(
        "GetCompositeModel", {"assetPlanId": pid}
    )
