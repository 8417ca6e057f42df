"""ToolSpec model, validation errors, taxonomy."""

from __future__ import annotations

import json

import mcp_types
import pytest

from finmcp.tool_specs.errors import InventoryError
from finmcp.tool_specs.inventory import load_inventory_file
from finmcp.tool_specs.model import META_KEY, ToolSpec, is_valid_tool_name
from finmcp.tool_specs.tags import INTENT_TYPES, REGULATORY_DOMAINS, TIMELINESS
from finmcp.tool_specs.taxonomy import load_taxonomy


def make_record(**overrides):
    record = {
        "name": "SearchThings",
        "title": "Search things",
        "description": "Finds things by keyword.",
        "inputSchema": {
            "type": "object",
            "properties": {"keyword": {"type": "string"}, "size": {"type": "integer", "default": 10}},
            "required": ["keyword"],
        },
        "outputSchema": {"type": "object", "properties": {"total": {"type": "integer"}}},
        "tags": {"timeliness": "daily", "intent_type": "informational", "regulatory_domains": ["fund"]},
        "scenario": "FundResearchAndDiagnosis",
        "sub_scenario": "FundSearch",
        "source": "test",
        "consumes": ["keyword"],
        "produces": ["fund_code"],
    }
    record.update(overrides)
    return record


def write_inventory(tmp_path, records, name="tiny"):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"inventory": name, "tools": records}), "utf-8")
    return path


def test_wire_form_is_an_mcp_tool_and_round_trips():
    spec = ToolSpec.model_validate(make_record())
    wire = spec.to_mcp_tool()
    tool = mcp_types.Tool.model_validate(wire)
    assert tool.name == "SearchThings"
    assert tool.input_schema == spec.input_schema
    assert tool.output_schema == spec.output_schema
    assert tool.annotations.read_only_hint is True
    assert tool.meta[META_KEY]["timeliness"] == "daily"
    # through JSON, as a client would receive it
    assert ToolSpec.from_mcp_tool(json.loads(json.dumps(wire))) == spec
    assert ToolSpec.model_validate(spec.to_record()) == spec


def test_annotations_follow_tags():
    trade = ToolSpec.model_validate(
        make_record(
            tags={"timeliness": "realtime", "intent_type": "transactional", "regulatory_domains": ["equity"]}
        )
    )
    assert trade.annotations()["readOnlyHint"] is False
    assert trade.annotations()["idempotentHint"] is False
    calc = ToolSpec.model_validate(
        make_record(tags={"timeliness": "static", "intent_type": "advisory", "regulatory_domains": ["fund"]})
    )
    assert calc.annotations()["readOnlyHint"] is True
    assert calc.annotations()["openWorldHint"] is False


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        (
            {
                "tags": {
                    "timeliness": "hourly",
                    "intent_type": "informational",
                    "regulatory_domains": ["fund"],
                }
            },
            "tool 'SearchThings': field tags.timeliness",
        ),
        ({"name": "bad name!"}, "field name"),
        (
            {"inputSchema": {"type": "object", "properties": {"keyword": {"type": "strng"}}}},
            "tool 'SearchThings': field inputSchema.properties.keyword.type",
        ),
        (
            {"inputSchema": {"type": "object", "properties": {}, "required": ["keyword"]}},
            "field inputSchema.required: 'keyword' is required but not in properties",
        ),
        ({"inputSchema": {"type": "array"}}, "field inputSchema"),
        ({"sub_scenario": "NoSuchThing"}, "field sub_scenario: 'NoSuchThing'"),
        ({"consumes": ["galaxy"]}, "field consumes.0"),
        ({"description": ""}, "field description"),
    ],
)
def test_invalid_spec_fails_loading_naming_tool_and_field(tmp_path, override, expected):
    path = write_inventory(tmp_path, [make_record(**override)])
    with pytest.raises(InventoryError) as err:
        load_inventory_file(path)
    assert expected in str(err.value)


def test_duplicate_names_are_rejected(tmp_path):
    path = write_inventory(tmp_path, [make_record(), make_record()])
    with pytest.raises(InventoryError, match="duplicate tool name"):
        load_inventory_file(path)


def test_unreadable_files_give_clear_errors(tmp_path):
    with pytest.raises(InventoryError, match="not found"):
        load_inventory_file(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{nope", "utf-8")
    with pytest.raises(InventoryError, match="not valid JSON"):
        load_inventory_file(bad)


def test_tool_name_rule():
    assert is_valid_tool_name("fund-equity-position")
    assert is_valid_tool_name("a.b_c-D9")
    assert not is_valid_tool_name("has space")
    assert not is_valid_tool_name("x" * 129)


def test_taxonomy_has_ten_scenarios_and_33_sub_scenarios():
    taxonomy = load_taxonomy()
    assert len(taxonomy.scenarios) == 10
    assert taxonomy.sub_scenario_count == 33
    for scenario in taxonomy.scenarios.values():
        assert scenario.zh and scenario.en
        for sub in scenario.sub_scenarios.values():
            assert sub.zh and sub.en


@pytest.mark.parametrize(
    ("scenery", "expected"),
    [
        ("市场分析与研究-宏观经济-市场环境研判", ("MarketAnalysisAndResearch", "MacroEconomy")),
        ("账户与服务管理-报告生成-投资报告", ("AccountAndServiceManagement", "ReportGeneration")),
        (
            "产品与策略咨询-策略产品详情-产品基本信息",
            ("ProductAndStrategyConsulting", "StrategyProductDetails"),
        ),
        ("投资规划与配置-个性化投资方案", ("InvestmentPlanningAndAllocation", "PersonalizedInvestmentPlans")),
        (
            "PlatformTechnicalSupport-PlatformFeatureUsage",
            ("PlatformTechnicalSupport", "PlatformFeatureUsage"),
        ),
        (
            "InvestmentPlanningAndAllocation-RegularInvestmentPlans",
            ("InvestmentPlanningAndAllocation", "RegularInvestmentPlans"),
        ),
        ("Nowhere-Nothing", (None, None)),
    ],
)
def test_real_scenery_labels_resolve(scenery, expected):
    assert load_taxonomy().resolve(scenery) == expected


def test_tag_vocabulary_is_exactly_fintoolbench(shared_dir):
    seen: dict[str, set[str]] = {"timeliness": set(), "intent_type": set(), "regulatory_domains": set()}
    for line in (shared_dir / "fintoolbench" / "tools.jsonl").read_text("utf-8").splitlines():
        tags = json.loads(line)["financial_tags"]
        seen["timeliness"].add(tags["timeliness"])
        seen["intent_type"].add(tags["intent_type"])
        seen["regulatory_domains"].update(tags["regulatory_domains"])
    assert seen["timeliness"] == set(TIMELINESS)
    assert seen["intent_type"] == set(INTENT_TYPES)
    assert seen["regulatory_domains"] == set(REGULATORY_DOMAINS)
