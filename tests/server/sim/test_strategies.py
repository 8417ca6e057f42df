"""Strategy tools: schema-valid, real-looking, coherent across tools, deterministic."""

from __future__ import annotations

from typing import Any

import pytest

from finmcp.server.sim import Simulator
from finmcp.tool_specs.inventory import load_inventory

STRATEGY_TOOLS_ONE = ("GetStrategyRiskInfo", "GetStrategyAssetClassAnalysis", "GetStrategyBenchmark")


def pct_value(text: str) -> float:
    assert text.endswith("%"), text
    return float(text[:-1]) / 100


@pytest.fixture(scope="module")
def codes(sim) -> list[str]:
    return sim.world.strategy_codes()


def test_search_rows_page_and_resolve(codes, call):
    first = call("StrategySearchByKeyword", {"keyword": "稳", "pageNum": 1, "pageSize": 2})
    second = call("StrategySearchByKeyword", {"keyword": "稳", "pageNum": 2, "pageSize": 2})
    everything = call("StrategySearchByKeyword", {"keyword": "稳", "pageSize": 300})
    assert first["pageSize"] == 2 and first["status"] == "查询成功"
    total = len(everything["rows"])
    assert total > 4 and first["hasMoreRows"] is True and everything["hasMoreRows"] is False
    assert [r["策略代码"] for r in first["rows"] + second["rows"]] == [
        r["策略代码"] for r in everything["rows"][:4]
    ]
    for row in everything["rows"]:
        assert row["策略代码"] in codes
        assert "稳" in row["策略名称"] + row["策略简介"]


def test_search_by_code_and_no_match(sim, call, error_text):
    code = sim.world.strategy_codes()[5]
    hit = call("StrategySearchByKeyword", {"keyword": code})
    assert [r["策略代码"] for r in hit["rows"]] == [code]
    empty = call("StrategySearchByKeyword", {"keyword": "没有这种组合"})
    assert empty == {"pageSize": 20, "rows": [], "status": "查询成功", "hasMoreRows": False}
    assert "keyword" in error_text("StrategySearchByKeyword", {"keyword": "  "})


def test_chain_search_details_composition_classes_risk(sim, call):
    row = call("StrategySearchByKeyword", {"keyword": "幸福", "pageSize": 1})["rows"][0]
    code = row["策略代码"]
    detail = call("GetStrategyDetails", {"strategyCodes": [code]})["rows"][0]
    assert detail["策略名称"] == row["策略名称"] and detail["策略风险等级"] == row["策略风险等级"]
    assert detail["url"].endswith("/" + code)

    comp = call("BatchGetStrategiesComposition", {"strategyCodes": [code]})[code]
    weights = [pct_value(f["持仓占比"]) for cat in comp.values() for f in cat["持有成分"]]
    assert abs(sum(weights) - 1) < 0.0005
    for cat in comp.values():
        assert (
            abs(pct_value(cat["分类占比"]) - sum(pct_value(f["持仓占比"]) for f in cat["持有成分"])) < 0.0005
        )
        for fund in cat["持有成分"]:
            assert fund["策略代码"] == code
            assert sim.world.fund(fund["基金代码"]).name == fund["基金名称"]
            assert fund["最新更新时间"] == fund["最新净值日期"] + " 00:00:00"

    tree = call("GetStrategyAssetClassAnalysis", {"strategyCode": code})["strategyAssetClassCategoryInfo"]
    assert abs(sum(node["ratio"] for node in tree) - 1) < 1e-6
    for node in tree:
        assert node["levelType"] == "TOP_LEVEL"
        assert abs(sum(c["ratio"] for c in node["children"]) - node["ratio"]) < 1e-6

    risk = call("GetStrategyRiskInfo", {"strategyCode": code})
    assert risk["strategyName"] == row["策略名称"] and risk["risk5LevelName"] == row["策略风险等级"]
    assert risk["scoreEffectiveDate"].endswith(" 00:00:00")
    batch = call("BatchGetStrategyRiskInfo", {"strategyCodes": [code, "ZH000000"]})
    assert batch == [{k: v for k, v in risk.items() if k != "url"}]


def test_composition_funds_resolve_in_fund_tools(codes, sim, call):
    comp = call("BatchGetStrategiesComposition", {"strategyCodes": codes[:3]})
    assert list(comp) == codes[:3]
    fund_codes = sorted({f["基金代码"] for c in comp.values() for cat in c.values() for f in cat["持有成分"]})
    details = sim.simulate("BatchGetFundsDetail", {"fundCodes": fund_codes[:20]})
    assert details["isError"] is False
    assert fund_codes[0] in details["content"][0]["text"]


def test_details_agree_with_nav_history(codes, call):
    code = codes[10]
    detail = call("GetStrategyDetails", {"strategyCodes": [code]})["rows"][0]
    navs = call("GetPortfolioNavHistory", {"poCode": code, "start": "2025-09-01"})
    assert navs["endDate"] == detail["最新净值日期"] == navs["navList"][-1]["navDate"]
    assert abs(navs["navList"][-1]["nav"] - detail["策略净值"]) < 1e-4
    assert detail["日收益率"] == f"{navs['navList'][-1]['dailyReturn'] * 100:.2f}%".replace("-0.00%", "0.00%")


def test_details_paging_and_unknown_codes(codes, call):
    page1 = call("GetStrategyDetails", {"strategyCodes": codes[:3] + ["NOPE"], "pageSize": 2})
    page2 = call("GetStrategyDetails", {"strategyCodes": codes[:3] + ["NOPE"], "pageSize": 2, "pageNum": 2})
    assert [r["策略代码"] for r in page1["rows"] + page2["rows"]] == codes[:3]
    assert page1["hasMoreRows"] is True and page2["hasMoreRows"] is False
    assert call("GetStrategyDetails", {"strategyCodes": ["NOPE"]})["rows"] == []


def test_unknown_and_blank_codes(call, error_text):
    for tool in ("GetStrategyRiskInfo", "GetStrategyBenchmark"):
        assert "ZH000000" in error_text(tool, {"strategyCode": "ZH000000"})
    for tool in STRATEGY_TOOLS_ONE:
        assert "strategyCode" in error_text(tool, {"strategyCode": ""})
    assert call("GetStrategyAssetClassAnalysis", {"strategyCode": "ZH000000"}) == {
        "strategyAssetClassCategoryInfo": []
    }
    assert call("BatchGetStrategiesComposition", {"strategyCodes": ["ZH000000"]}) == {}
    assert call("BatchGetStrategiesComposition", {}) == {}
    assert call("BatchGetPoTradeComposition", {"strategyCodes": ["ZH000000"]}) == {}
    assert call("BatchGetStrategyRiskInfo", {"strategyCodes": ["ZH000000"]}) == []
    assert call("GetPortfolioNavHistory", {"poCode": "ZH000000"})["navList"] == []


def test_benchmark_weights_and_trade_composition(codes, sim, call):
    for code in codes[:8]:
        bench = call("GetStrategyBenchmark", {"strategyCode": code})
        assert abs(sum(c["weight"] for c in bench["benchmarkComponents"]) - 1) < 0.0005
        for comp in bench["benchmarkComponents"]:
            assert comp["indexName"] in bench["benchmarkName"]
    trade = call("BatchGetPoTradeComposition", {"strategyCodes": codes[:8]})
    for code, po in trade.items():
        assert po["策略名称"] == sim.world.strategy(code).name
        minimum = po["最小申购金额"]
        for fund in po["交易成分"]:
            if fund["是否可交易"] and minimum is not None:
                assert minimum * pct_value(fund["持仓占比"]) >= fund["起购金额"] - 0.01


def test_fund_related_strategies(codes, sim, call, error_text):
    st = sim.world.strategy(codes[7])
    part = st.composition[0]
    answer = call("GetFundRelatedStrategies", {"fundCode": part["fund_code"]})
    rows = {r["策略代码"]: r for r in answer["rows"]}
    assert rows[st.code]["持仓占比"] == f"{part['weight_bp'] / 100:.2f}%"
    shares = [pct_value(r["持仓占比"]) for r in answer["rows"]]
    assert shares == sorted(shares, reverse=True)
    by_name = call("GetFundRelatedStrategies", {"fundName": part["fund_name"]})
    assert st.code in {r["策略代码"] for r in by_name["rows"]}
    held = {c["fund_code"] for s in codes for c in sim.world.strategy(s).composition}
    free = next(c for c in sim.world.fund_codes() if c not in held)
    assert call("GetFundRelatedStrategies", {"fundCode": free})["rows"] == []
    assert "fundName" in error_text("GetFundRelatedStrategies", {})


def test_nav_history_window(codes, sim, call, error_text):
    code = codes[20]
    navs = call("GetPortfolioNavHistory", {"poCode": code, "start": "2025-06-01", "end": "2025-06-30"})
    dates = [r["navDate"] for r in navs["navList"]]
    assert dates == sorted(dates) and dates[0] >= "2025-06-01" and dates[-1] <= "2025-06-30"
    assert (navs["startDate"], navs["endDate"]) == (dates[0], dates[-1])
    for prev, row in zip(navs["navList"], navs["navList"][1:], strict=False):
        assert abs(row["nav"] / prev["nav"] - 1 - row["dailyReturn"]) < 0.0002
    everything = call("GetPortfolioNavHistory", {"poCode": code})
    assert (
        everything["startDate"] == sim.world.strategy(code).setup_date
        or everything["navList"][0]["dailyReturn"] is None
    )
    assert "end" in error_text(
        "GetPortfolioNavHistory", {"poCode": code, "start": "2025-06-30", "end": "2025-06-01"}
    )
    assert "start" in error_text("GetPortfolioNavHistory", {"poCode": code, "start": "2025/06/01"})


def test_every_tool_schema_valid_over_many_codes(codes, call):
    for code in codes[::30]:
        for tool in STRATEGY_TOOLS_ONE:
            call(tool, {"strategyCode": code})
        call("GetStrategyDetails", {"strategyCodes": [code]})
        call("GetPortfolioNavHistory", {"poCode": code, "start": "2025-09-01", "end": "2025-09-30"})
    call("BatchGetStrategiesComposition", {"strategyCodes": codes[::30]})
    call("BatchGetPoTradeComposition", {"strategyCodes": codes[::30]})


def test_integral_numbers_print_without_decimal_point(sim):
    money_strategy = next(
        c for c in sim.world.strategy_codes() if sim.world.strategy(c).risk_level == 1
    )  # 100% cash: the real server prints "amount": 100, "ratio": 1
    text = sim.simulate("GetStrategyAssetClassAnalysis", {"strategyCode": money_strategy})["content"][0][
        "text"
    ]
    assert '"ratio": 1,' in text and '"amount": 100,' in text and ".0," not in text


def test_deterministic_across_fresh_simulators(codes):
    calls = [
        ("StrategySearchByKeyword", {"keyword": "长投"}),
        ("GetStrategyDetails", {"strategyCodes": codes[:2]}),
        ("BatchGetStrategiesComposition", {"strategyCodes": codes[:2]}),
        ("GetStrategyBenchmark", {"strategyCode": codes[3]}),
    ]
    a, b = Simulator(load_inventory("qieman79"), seed=0), Simulator(load_inventory("qieman79"), seed=0)
    for tool, args in calls:
        assert a.simulate(tool, args)["content"][0]["text"] == b.simulate(tool, args)["content"][0]["text"]
    other = Simulator(load_inventory("qieman79"), seed=1)
    assert other.world.strategy_codes() != codes


# ------------------------------------------------------------------ against the real samples
def _first_record(value: Any) -> dict[str, Any] | None:
    """The first record of an answer: its first row (paged answers), first item (lists) or itself."""
    if isinstance(value, list):
        return value[0] if value else None
    if "rows" in value:
        return value["rows"][0] if value["rows"] else None
    return value


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("StrategySearchByKeyword", {"keyword": "稳"}),
        ("GetStrategyDetails", {"strategyCodes": ["ZH001422"]}),
        ("GetStrategyRiskInfo", {"strategyCode": "ZH001422"}),
        ("BatchGetStrategyRiskInfo", {"strategyCodes": ["ZH001422"]}),
    ],
)
def test_key_order_matches_real_outputs(recorded, tool, args, call):
    real = [o for o in recorded(tool) if _first_record(o) is not None]
    assert real, f"no non-empty JSON {tool} output in the samples"
    ours = call(tool, args)
    assert list(_first_record(ours)) == list(_first_record(real[0]))
    if isinstance(ours, dict):
        assert list(ours) == list(real[0])


def test_composition_and_classes_match_real_shape(recorded, codes, call):
    real_comp = recorded("BatchGetStrategiesComposition")[0]
    real_fund = next(iter(next(iter(real_comp.values())).values()))["持有成分"][0]
    ours = call("BatchGetStrategiesComposition", {"strategyCodes": [codes[0]]})[codes[0]]
    cat = next(iter(ours.values()))
    assert list(cat) == ["持有成分", "分类占比"]
    assert list(cat["持有成分"][0]) == list(real_fund)
    real_tree = recorded("GetStrategyAssetClassAnalysis")[0]["strategyAssetClassCategoryInfo"]
    tree = call("GetStrategyAssetClassAnalysis", {"strategyCode": codes[0]})["strategyAssetClassCategoryInfo"]
    assert list(tree[0]) == list(real_tree[0])


def test_empty_search_is_byte_identical_to_real(recorded, call):
    real = [o for o in recorded("StrategySearchByKeyword") if o["rows"] == []]
    assert real
    assert call("StrategySearchByKeyword", {"keyword": "稳钱组合"}) == real[0]


def test_warmed_strategy_answers_equal_cold_ones() -> None:
    """Start-up work (figures, constituents' latest NAVs) changes no byte of the answers."""
    from finmcp.server.sim.qieman.strategies import warm_strategies

    inventory = load_inventory("qieman79")
    cold, warmed = Simulator(inventory, seed=3), Simulator(inventory, seed=3)
    codes = cold.world.strategy_codes()[::150]
    warm_strategies(warmed.world, figures=True, compositions=True, codes=codes)
    sizes = warmed.world.cache_sizes()
    assert sizes["strategy_figures"] == len(codes) and sizes["latest"] > len(codes)
    for tool in ("GetStrategyDetails", "BatchGetStrategiesComposition"):
        args = {"strategyCodes": codes}
        assert warmed.simulate(tool, args) == cold.simulate(tool, args)
    assert "strategy_figures" in cold.world.cache_sizes()  # the cold call built them on demand
