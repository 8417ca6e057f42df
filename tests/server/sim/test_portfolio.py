"""Simulated Qieman portfolio tools (server/sim/qieman/portfolio.py)."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from finmcp.server.sim import Simulator
from finmcp.tool_specs.inventory import load_inventory

INVENTORY = load_inventory("qieman79")


@pytest.fixture(scope="module")
def mix(sim: Simulator) -> list[str]:
    w = sim.world
    return [w.codes_by_type("债券型")[0], w.codes_by_type("股票型")[0], w.codes_by_type("QDII型")[0]]


def fund_list(codes: list[str], amounts: list[float]) -> list[dict]:
    return [{"fundCode": c, "amount": a} for c, a in zip(codes, amounts, strict=True)]


def test_correlation_matrix_from_world_returns(sim, mix, call):
    w = sim.world
    a_share, c_share = w.codes_by_type("债券型")[:2]
    assert mix[0] == a_share and w.fund_stub(c_share).product_key == w.fund_stub(a_share).product_key
    value = call("GetFundsCorrelation", {"fundList": [{"fundCode": c} for c in [*mix, c_share]]})
    pairs = {(p["fundCodeA"], p["fundCodeB"]): p["correlation"] for p in value["correlationMatrix"]}
    assert len(pairs) == 6
    assert pairs[(a_share, c_share)] > 0.99  # two share classes of one product
    ra = [r for _, r in w.recent_returns(mix[1], 250)]
    rb = [r for _, r in w.recent_returns(mix[2], 250)]
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb, strict=True))
    expected = cov / math.sqrt(sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb))
    assert pairs[(mix[1], mix[2])] == pytest.approx(expected, abs=1e-4)
    assert value["averageCorrelation"] == pytest.approx(sum(pairs.values()) / 6, abs=1e-4)
    single = call("GetFundsCorrelation", {"fundList": [{"fundCode": mix[0]}]})
    assert single["correlationMatrix"] == [] and single["averageCorrelation"] is None


def test_backtest_of_one_fund_is_its_own_return(sim, mix, call):
    code = mix[1]
    value = call("GetFundsBackTest", {"fundList": fund_list([code], [5000])})
    series, _, _ = sim.world.fund_nav_series(code)
    start = series.dates.index(value["startDate"])
    assert value["endDate"] == series.dates[-1] == "2025-09-30"
    assert value["totalReturn"] == pytest.approx(series.adj[-1] / series.adj[start - 1] - 1, abs=1e-4)
    assert value["navSeries"][-1]["nav"] == pytest.approx(1 + value["totalReturn"], abs=1e-4)
    assert value["maxDrawdown"] <= 0 and value["volatility"] > 0


def test_backtest_depends_on_weights_not_scale(sim, mix, call):
    base = call("GetFundsBackTest", {"fundList": fund_list(mix, [1000, 2000, 3000])})
    scaled = call("GetFundsBackTest", {"fundList": fund_list(mix, [10, 20, 30])})
    assert base == scaled
    tilted = call("GetFundsBackTest", {"fundList": fund_list(mix, [5000, 500, 500])})
    assert tilted["volatility"] < base["volatility"]  # more bond fund, less volatility
    merged = call("GetFundsBackTest", {"fundList": fund_list([mix[0], mix[1], mix[0]], [500, 1000, 500])})
    assert merged == call("GetFundsBackTest", {"fundList": fund_list(mix[:2], [1000, 1000])})


def test_diagnosis_and_asset_allocation_agree(sim, mix, call):
    args = {"fundList": fund_list(mix, [4000, 3000, 3000])}
    diag = call("DiagnoseFundPortfolio", args)
    alloc = call("GetAssetAllocation", args)
    assert {a["assetClass"]: a["ratio"] for a in diag["assetAllocation"]} == {
        a["assetClass"]: a["ratio"] for a in alloc["assetClassDetails"]
    }
    assert alloc["totalAmount"] == 10000
    assert sum(a["amount"] for a in alloc["assetClassDetails"]) == pytest.approx(10000, abs=0.05)
    stock_share = sum(
        w
        * next(a["ratio"] for a in sim.world.fund(c).asset_allocation if a["name"] == "股票")
        / sum(a["ratio"] for a in sim.world.fund(c).asset_allocation)
        for c, w in zip(mix, (0.4, 0.3, 0.3), strict=True)
    )
    assert {a["assetClass"]: a["ratio"] for a in alloc["assetClassDetails"]}["股票"] == pytest.approx(
        stock_share, abs=1e-4
    )
    bt = call("GetFundsBackTest", args)
    assert diag["backTest"]["annualReturn"] == bt["annualReturn"] and diag["suggestions"]
    assert 1 <= diag["overallScore"] <= 5


def test_portfolio_risk(sim, mix, call, error_text):
    holdings = [{"fundCode": c, "weight": w} for c, w in zip(mix, (0.5, 0.3, 0.2), strict=True)]
    value = call("AnalyzePortfolioRisk", {"holdings": holdings})
    assert value["status"] == "SUCCESS" and value["effectiveDate"] == "2025-08-31"
    assert re.fullmatch(r"ai_user_[a-z]{8}_20250930\d{6}", value["portfolioId"])
    assert 0 <= value["rSquared"] <= 1 and 0 < value["riskScore"] < 100
    bond_only = call("AnalyzePortfolioRisk", {"holdings": [{"fundCode": mix[0], "weight": 1.0}]})
    assert bond_only["riskScore"] < value["riskScore"]
    assert "add up to" in error_text(
        "AnalyzePortfolioRisk", {"holdings": [{"fundCode": mix[0], "weight": 0.8}] * 2}
    )


def test_monte_carlo_percentiles(sim, call):
    args = {
        "weights": {"equity": 0.6, "fixedIncome": 0.3, "cash": 0.1},
        "frequency": "YEAR",
        "periodCount": 5,
    }
    value = call("MonteCarloSimulate", args)
    assert [r["period"] for r in value["results"]] == [1, 2, 3, 4, 5]
    for row in value["results"]:
        assert row["p5"] <= row["p25"] <= row["p50"] <= row["p75"] <= row["p95"]
    first = value["results"][0]
    mean, vol = value["expectedAnnualReturn"], value["expectedAnnualVolatility"]
    assert first["p50"] == pytest.approx(mean - vol**2 / 2, abs=0.02)
    spread = [r["p95"] - r["p5"] for r in value["results"]]
    assert spread == sorted(spread)  # uncertainty grows with the horizon
    safe = call("MonteCarloSimulate", {**args, "weights": {"fixedIncome": 0.7, "cash": 0.3}})
    assert safe["results"][0]["p95"] - safe["results"][0]["p5"] < first["p95"] - first["p5"]
    more_paths = call("MonteCarloSimulate", {**args, "simulationCount": 100000})
    assert more_paths["results"] != value["results"] and more_paths["simulationCount"] == 100000
    assert call("MonteCarloSimulate", args) == value
    assert Simulator(INVENTORY, seed=3).value("MonteCarloSimulate", args) != value


def test_monte_carlo_at_the_limits(call):
    """The largest request is answered (its cost is measured in bench/bench_sim.py, not asserted here)."""
    args = {"weights": {"equity": 1.0}, "frequency": "DAY", "periodCount": 600, "simulationCount": 10_000_000}
    assert len(call("MonteCarloSimulate", args)["results"]) == 600


@pytest.mark.parametrize(
    ("tool", "args", "needle"),
    [
        (
            "GetFundsBackTest",
            {"fundList": [{"fundCode": "999999", "amount": 1}]},
            "fundList[0].fundCode '999999'",
        ),
        ("GetFundsCorrelation", {"fundList": []}, "fundList"),
        ("GetAssetAllocation", {"fundList": [{"fundCode": "000003", "amount": -5}]}, "amount"),
        ("MonteCarloSimulate", {"weights": {"equity": 0.5}}, "add up to 1"),
        ("MonteCarloSimulate", {"weights": {"bitcoin": 1.0}}, "bitcoin"),
        ("MonteCarloSimulate", {"weights": {"equity": 1.0}, "periodCount": 5000}, "periodCount"),
        ("MonteCarloSimulate", {"weights": {"equity": 1.0}, "frequency": "HOUR"}, "frequency"),
    ],
)
def test_bad_requests_are_refused(sim, tool, args, needle, error_text):
    assert needle in error_text(tool, args)


def test_fresh_simulators_give_identical_text(mix):
    calls: list[tuple[str, dict[str, Any]]] = [
        ("GetFundsCorrelation", {"fundList": [{"fundCode": c} for c in mix]}),
        ("GetFundsBackTest", {"fundList": fund_list(mix, [1, 2, 3])}),
        ("DiagnoseFundPortfolio", {"fundList": fund_list(mix, [1, 2, 3])}),
        ("AnalyzePortfolioRisk", {"holdings": [{"fundCode": c, "weight": 0.3} for c in mix]}),
        ("MonteCarloSimulate", {"weights": {"equity": 0.5, "overseasEquity": 0.5}}),
    ]
    a, b = Simulator(INVENTORY, seed=0), Simulator(INVENTORY, seed=0)
    for tool, args in calls:
        assert a.simulate(tool, args)["content"] == b.simulate(tool, args)["content"]
