"""Concrete output schemas of the fintool760 inventory: family templates, entity columns, the simulator
contract in ``meta``, and the plan builder on hand-written facts."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator

from finmcp.tool_specs.entities import ENTITY_TYPES, INSTRUMENT_ENTITIES
from finmcp.tool_specs.importers.fintoolbench.columns import (
    AKSHARE_BY_NAME,
    AKSHARE_FAMILIES,
    RAPIDAPI_BY_NAME,
    RAPIDAPI_FAMILIES,
    VOCAB,
    akshare_family,
    plan_output,
    vocab_column,
)
from finmcp.tool_specs.importers.fintoolbench.facts import ToolFacts
from finmcp.tool_specs.importers.fintoolbench.outputs import (
    ROWS_BY,
    SHAPES,
    OutputPlan,
    PlanColumn,
    describe_output,
)
from finmcp.tool_specs.inventory import load_inventory

INVENTORY = load_inventory("fintool760")
TOOLS = list(INVENTORY)
ID_ENTITIES = INSTRUMENT_ENTITIES | {"article_id"}


def _result(tool) -> dict:
    return tool.output_schema["properties"]["result"]


def _record_schema(tool) -> dict | None:
    """The schema of one record, wherever the tool's shape puts it (None for text/values/tuple)."""
    result = _result(tool)
    shape = tool.meta["output_shape"]
    if shape == "rows":
        return result["items"]
    if shape == "rows_object":
        return result["properties"][tool.meta["output_rows_path"]]["items"]
    if shape == "record":
        return result
    if shape == "keyed_rows":
        return result["additionalProperties"]["items"]
    return None


def _closed_objects(schema) -> list:
    """Every ``additionalProperties: false`` in a schema (there must be none: real outputs may add keys)."""
    if isinstance(schema, dict):
        found = [schema] if schema.get("additionalProperties") is False else []
        return found + [x for v in schema.values() for x in _closed_objects(v)]
    if isinstance(schema, list):
        return [x for v in schema for x in _closed_objects(v)]
    return []


def _facts(name: str, tool_from: str = "akshare", description: str = "", **kw) -> ToolFacts:
    return ToolFacts(
        name,
        tool_from,
        description,
        kw.get("properties", {}),
        tuple(kw.get("required", ())),
        kw.get("timeliness", "daily"),
        "informational",
        tuple(kw.get("domains", ("equity",))),
    )


# ----------------------------------------------------------------------------- the shipped inventory


def test_no_dataframe_tool_is_left_with_generic_rows():
    rows_tools = [t for t in TOOLS if t.meta["output_kind"] == "rows"]
    assert len(rows_tools) == 482
    for tool in rows_tools:
        items = _result(tool)["items"]
        assert items["type"] == "object" and items.get("properties"), tool.name
        assert tool.meta["output_columns_source"] != "unknown", tool.name
    source_named = [t for t in rows_tools if t.meta["output_columns_source"].startswith("description-")]
    assert len(source_named) == 10  # the source's own column names are kept where it prints them


def test_every_rapidapi_tool_has_a_concrete_shape():
    rapid = [t for t in TOOLS if t.source == "rapidapi"]
    assert len(rapid) == 261
    for tool in rapid:
        result = _result(tool)
        assert result["type"] == "object", tool.name  # no more "object or array"
        record = _record_schema(tool)
        assert record is not None and record["properties"], tool.name
        assert "required" not in record, (
            tool.name
        )  # normalised shapes: nothing is demanded of upstream bodies


def test_every_output_schema_is_valid_wrapped_and_permissive():
    for tool in TOOLS:
        schema = tool.output_schema
        Draft202012Validator.check_schema(schema)
        assert schema["required"] == ["result"] and tool.meta["output_wrapped"] is True
        assert not _closed_objects(schema), tool.name
        assert tool.meta["output_shape"] in SHAPES and tool.meta["output_rows_by"] in ROWS_BY, tool.name


def test_output_columns_match_the_schema_and_carry_descriptions():
    for tool in TOOLS:
        columns = tool.meta.get("output_columns")
        shape = tool.meta["output_shape"]
        assert columns, tool.name
        assert len(set(columns)) == len(columns), tool.name
        record = _record_schema(tool)
        if record is not None:
            assert set(record["properties"]) == set(columns), tool.name
            for name, prop in record["properties"].items():
                assert prop.get("type") and prop.get("description"), (tool.name, name)
                assert prop.get("format") in {None, "date", "date-time"}, (tool.name, name)
            assert set(record.get("required", [])) <= set(columns), tool.name
        elif shape == "tuple":
            assert len(_result(tool)["prefixItems"]) == len(columns), tool.name
        elif shape == "values":
            assert len(columns) == 1 and _result(tool)["items"]["description"], tool.name
        else:
            assert shape == "text" and _result(tool)["type"] == "string", tool.name


def test_entity_columns_name_existing_columns_and_known_entity_types():
    for tool in TOOLS:
        entities = tool.meta["output_entity_columns"]
        assert set(entities) <= set(tool.meta["output_columns"]), tool.name
        assert set(entities.values()) <= set(ENTITY_TYPES), tool.name


def test_ids_a_tool_produces_are_carried_by_an_entity_column():
    """Search and list endpoints return the ids that detail endpoints take (the graph's edges)."""
    for tool in TOOLS:
        carried = set(tool.meta["output_entity_columns"].values())
        assert set(tool.produces) & ID_ENTITIES <= carried, tool.name


def test_search_results_feed_detail_endpoints_through_the_same_id_field():
    search = INVENTORY.get("market_v2_auto_complete")
    assert search.meta["output_rows_path"] == "results"
    assert search.meta["output_entity_columns"]["performanceId"] == "company_id"
    detail = INVENTORY.get("stock_v2_get_realtime_data")
    assert "company_id" in detail.consumes
    assert detail.meta["output_entity_columns"]["performanceId"] == "company_id"
    articles = INVENTORY.get("articles_v2_list")
    assert articles.meta["output_entity_columns"]["id"] == "article_id"
    details = INVENTORY.get("analysis_v2_get_details")
    assert (
        details.meta["output_shape"] == "record"
        and details.meta["output_entity_columns"]["id"] == "article_id"
    )


def test_well_known_tools_have_the_expected_columns():
    hist = INVENTORY.get("stock_zh_a_hist")
    assert hist.meta["output_columns_source"] == "family:quote_hist"
    assert {"日期", "收盘", "开盘", "成交量"} <= set(hist.meta["output_columns"])
    assert hist.meta["output_rows_by"] == "date_range" and hist.meta["output_time_step"] == "day"
    assert hist.meta["output_entity_columns"] == {"日期": "date", "代码": "stock_symbol"}
    row = _result(hist)["items"]
    assert row["properties"]["收盘"]["type"] == "number" and row["properties"]["日期"]["format"] == "date"
    assert set(row["required"]) == {"日期", "收盘"}

    spot = INVENTORY.get("stock_zh_index_spot_em")
    assert {"代码", "名称", "最新价", "涨跌幅"} <= set(spot.meta["output_columns"])
    assert spot.meta["output_rows_by"] == "list"

    nav = INVENTORY.get("fund_open_fund_info_em")
    assert {"净值日期", "单位净值"} <= set(nav.meta["output_columns"])
    assert nav.meta["output_entity_columns"]["净值日期"] == "date"

    calendar = INVENTORY.get("macro_info_ws")
    assert {"今值", "预测值", "前值"} <= set(calendar.meta["output_columns"])
    epu = INVENTORY.get("article_epu_index")
    numeric = [
        c for c in epu.meta["output_columns"] if _record_schema(epu)["properties"][c]["type"] == "number"
    ]
    assert numeric, "a macro series has a value column"

    cons = INVENTORY.get("index_stock_cons")
    assert cons.meta["output_entity_columns"]["品种代码"] == "stock_symbol"
    pe = INVENTORY.get("stock_get_pe_ratio")
    assert pe.meta["output_shape"] == "record" and "peRatio" in pe.meta["output_columns"]
    chart = INVENTORY.get("symbols_get_historical_prices")
    assert chart.meta["output_rows_path"] == "values" and chart.meta["output_rows_by"] == "date_range"
    assert {"datetime", "close"} <= set(chart.meta["output_columns"])


def test_shipped_schemas_accept_plausible_outputs_and_reject_wrong_types():
    hist = Draft202012Validator(INVENTORY.get("stock_zh_a_hist").output_schema)
    good = {"result": [{"日期": "2024-01-02", "代码": "600519", "收盘": 1700.5, "成交量": 1200, "extra": 1}]}
    assert hist.is_valid(good)
    assert not hist.is_valid({"result": [{"日期": "2024-01-02", "收盘": "high"}]})
    assert not hist.is_valid({"result": [{"日期": "2024-01-02"}]})  # the close is a key column
    search = Draft202012Validator(INVENTORY.get("market_v2_auto_complete").output_schema)
    assert search.is_valid({"result": {"results": [{"performanceId": "0P000000GY", "symbol": "AAPL"}]}})
    assert not search.is_valid({"result": {"results": [{"symbol": 5}]}})
    codes = Draft202012Validator(INVENTORY.get("option_sse_codes_sina").output_schema)
    assert codes.is_valid({"result": [["10006000"], ["10006001"]]})
    assert not codes.is_valid({"result": [[1], []]})
    receipts = Draft202012Validator(INVENTORY.get("futures_warehouse_receipt_dce").output_schema)
    assert receipts.is_valid({"result": {"豆一": [{"日期": "2024-01-02", "库存": 10, "增减": -1}]}})
    assert not receipts.is_valid({"result": {"豆一": [{"库存": "many"}]}})
    text = Draft202012Validator(INVENTORY.get("stock_a_code_to_symbol").output_schema)
    assert text.is_valid({"result": "sh600519"}) and not text.is_valid({"result": 1})


# ----------------------------------------------------------------------------- templates and plans


def test_every_template_column_is_in_the_vocabulary_and_placeholders_are_known():
    for family in (*AKSHARE_FAMILIES.values(), *RAPIDAPI_FAMILIES.values()):
        for column in family.columns:
            assert column == "@id" or column in VOCAB, (family.name, column)
        for entity in family.entities.values():
            assert entity in ENTITY_TYPES or entity in {"@code", "@contract"}, (family.name, entity)
        assert set(family.key) <= set(family.columns), family.name
    assert set(AKSHARE_BY_NAME.values()) <= set(AKSHARE_FAMILIES)
    assert set(RAPIDAPI_BY_NAME.values()) <= set(RAPIDAPI_FAMILIES)


def test_akshare_families_follow_the_name_pattern():
    assert akshare_family(_facts("stock_demo_hist")) == "quote_hist"
    assert akshare_family(_facts("stock_demo_daily")) == "ohlcv_daily_en"
    assert akshare_family(_facts("stock_demo_hist_min_em")) == "quote_minute"
    assert akshare_family(_facts("stock_demo_spot_em")) == "spot_table"
    assert akshare_family(_facts("index_demo_cons")) == "index_cons"
    assert akshare_family(_facts("stock_fhps_demo_em")) == "dividends"
    assert akshare_family(_facts("stock_demo_news_em")) == "news"
    assert akshare_family(_facts("unheard_of_thing", domains=("bond",))) == "generic_bond"
    assert akshare_family(_facts("unheard_of_thing", domains=("esg",))) == "generic_other"


def test_plan_resolves_the_code_column_to_the_instrument_the_tool_takes():
    description = ":param symbol: 基金代码\n:type symbol: str\n:return: 行情\n:rtype: pandas.DataFrame"
    facts = _facts(
        "fund_demo_hist_em",
        description=description,
        properties={"symbol": {"type": "string"}, "start_date": {"type": "string"}},
        domains=("fund",),
    )
    plan = plan_output(facts, describe_output(facts))
    assert plan.source == "family:quote_hist"
    assert dict(plan.entities)["代码"] == "fund_code"
    rapid = _facts(
        "market_demo_auto_complete",
        "rapidapi",
        "morning_star: suggestions",
        properties={"q": {"type": "string"}},
    )
    plan = plan_output(rapid, describe_output(rapid))
    assert plan.source == "family:search" and plan.rows_path == "results"
    assert dict(plan.entities) == {"performanceId": "company_id", "symbol": "stock_symbol"}
    other_api = _facts(
        "market_demo_auto_complete", "rapidapi", "demo_api: x", properties={"q": {"type": "string"}}
    )
    assert dict(plan_output(other_api, describe_output(other_api)).entities)["id"] == "company_id"


def test_plan_keeps_source_columns_and_types_them():
    description = (
        ":return: 表\n:rtype: pandas.DataFrame\n"
        "      trade_date   close   symbol\n"
        "0    2021-01-04   10.50   A1\n"
        "1    2021-01-05   10.80   A2\n"
    )
    facts = _facts("stock_demo_table", description=description, properties={"start_date": {"type": "string"}})
    plan = plan_output(facts, describe_output(facts))
    assert plan.source == "description-table" and plan.rows_by == "date_range"
    assert [c.name for c in plan.columns] == ["trade_date", "close", "symbol"]
    assert plan.columns[0].format == "date" and plan.columns[1].type == "number"
    assert dict(plan.entities) == {"trade_date": "date", "symbol": "stock_symbol"}


def test_bad_plans_and_columns_are_reported_by_name():
    with pytest.raises(KeyError, match="'no such column'"):
        vocab_column("no such column")
    column = PlanColumn("x", "string", "X")
    with pytest.raises(ValueError, match="duplicate column names"):
        OutputPlan("family:demo", "rows", (column, column), "list")
    with pytest.raises(ValueError, match="'y' is not one of its columns"):
        OutputPlan("family:demo", "rows", (column,), "list", key=("y",))
    with pytest.raises(ValueError, match="unknown rows_by 'weekly'"):
        OutputPlan("family:demo", "rows", (column,), "weekly")
    with pytest.raises(ValueError, match="rows_path goes with shape rows_object"):
        OutputPlan("family:demo", "rows_object", (column,), "list")
    with pytest.raises(ValueError, match="column 'x': unknown JSON type 'text'"):
        PlanColumn("x", "text", "X").schema()
