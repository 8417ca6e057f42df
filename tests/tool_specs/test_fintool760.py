"""The fintool760 inventory: the FinToolBench manifest importer, finmcp's own text, output schemas,
entity types, and the reproducible shipped data file."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from finmcp.tool_specs.graph import DependencyGraph
from finmcp.tool_specs.importers.fintoolbench import manifest
from finmcp.tool_specs.importers.fintoolbench.build import (
    DEFAULT_OUTPUT,
    build,
    build_document,
    document_bytes,
)
from finmcp.tool_specs.importers.fintoolbench.facts import ToolFacts, parse_choices, parse_example
from finmcp.tool_specs.importers.fintoolbench.manifest import ManifestError, load_manifest, load_manifest_text
from finmcp.tool_specs.importers.fintoolbench.outputs import describe_output, parse_description_columns
from finmcp.tool_specs.importers.fintoolbench.text import humanize_name
from finmcp.tool_specs.inventory import load_inventory, load_inventory_file
from finmcp.tool_specs.model import is_valid_tool_name

# ----------------------------------------------------------------------------- helpers


def _manifest_records(shared_dir: Path) -> list[dict]:
    path = shared_dir / "fintoolbench" / "tools.jsonl"
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def _line(**overrides) -> dict:
    """A well-formed manifest record (hand-written for the tests), with fields overridden."""
    record = {
        "name": "stock_demo_hist_em",
        "tool_from": "akshare",
        "description": (
            "演示-个股-历史行情\n:param symbol: 股票代码\n:type symbol: str\n"
            ':param period: choice of {"daily", "weekly",\n"monthly"}\n:type period: str\n'
            ":return: 行情\n:rtype: pandas.DataFrame"
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "symbol": {"type": "string", "description": "股票代码"},
                "period": {"type": "string", "description": 'choice of {"daily", "weekly",'},
            },
            "required": [],
        },
        "financial_tags": {
            "timeliness": "daily",
            "intent_type": "informational",
            "regulatory_domains": ["equity"],
        },
    }
    record.update(overrides)
    return record


RAPID = {
    "name": "market_demo_auto_complete",
    "tool_from": "rapidapi",
    "description": "demo_finance: Suggest securities for a typed word",
    "parameters": {
        "type": "object",
        "properties": {"q": {"type": "string", "description": "Word to look up"}},
        "required": ["q"],
    },
    "financial_tags": {
        "timeliness": "realtime",
        "intent_type": "informational",
        "regulatory_domains": ["equity"],
    },
}
RAPID_DETAIL = {
    "name": "stock_demo_profile",
    "tool_from": "rapidapi",
    "description": "demo_finance: Profile of one security",
    "parameters": {
        "type": "object",
        "properties": {
            "ticker_slug": {"type": "string", "description": "Slug of the ticker"},
            "lang": {"type": "string", "description": "One of the following : en|de|fr"},
        },
        "required": ["ticker_slug"],
    },
    "financial_tags": {
        "timeliness": "static",
        "intent_type": "informational",
        "regulatory_domains": ["equity"],
    },
}


def _write_manifest(path: Path, records: list) -> Path:
    path.write_text(
        "\n".join(r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in records)
    )
    return path


# ----------------------------------------------------------------------------- against the published manifest


def test_shipped_names_parameters_required_types_and_tags_equal_the_manifest(shared_dir):
    records = _manifest_records(shared_dir)
    inventory = load_inventory("fintool760")
    assert [t.name for t in inventory] == [r["name"] for r in records]
    for tool, record in zip(inventory, records, strict=True):
        published = record["parameters"]
        ours = tool.input_schema
        assert sorted(ours["properties"]) == sorted(published["properties"]), tool.name
        assert ours["required"] == published["required"], tool.name
        for pname, pschema in published["properties"].items():
            assert ours["properties"][pname]["type"] == pschema["type"], (tool.name, pname)
            assert set(ours["properties"][pname]) == set(pschema), (tool.name, pname)  # no enums added
        tags = record["financial_tags"]
        assert tool.tags.timeliness == tags["timeliness"]
        assert tool.tags.intent_type == tags["intent_type"]
        assert list(tool.tags.regulatory_domains) == tags["regulatory_domains"]
        assert tool.source == record["tool_from"] == tool.meta["tool_from"]


def test_rebuilding_from_the_manifest_reproduces_the_shipped_file_byte_for_byte(shared_dir, tmp_path):
    rebuilt = build(shared_dir / "fintoolbench" / "tools.jsonl", tmp_path / "fintool760.json.gz")
    assert rebuilt.read_bytes() == DEFAULT_OUTPUT.read_bytes()


def test_keep_text_import_serves_the_published_text(shared_dir):
    path = shared_dir / "fintoolbench" / "tools.jsonl"
    records = _manifest_records(shared_dir)
    specs = load_manifest(path, keep_text=True)
    for spec, record in zip(specs, records, strict=True):
        assert spec.description == record["description"]
        assert spec.input_schema == record["parameters"]
        assert spec.meta["text"] == "published"
    # the inventory loader reads a .jsonl file the same way
    inventory = load_inventory_file(path)
    assert [t.description for t in inventory] == [r["description"] for r in records]


def test_shipped_text_is_finmcps_own(shared_dir):
    records = {r["name"]: r for r in _manifest_records(shared_dir)}
    for tool in load_inventory("fintool760"):
        record = records[tool.name]
        published = record["description"]
        headline = published.split("\n", 1)[0].split(":", 1)[-1].strip()
        if len(headline) >= 12:
            assert headline not in tool.description, tool.name
        for pname, pschema in record["parameters"]["properties"].items():
            text = pschema.get("description", "")
            if len(text) >= 20:
                assert text not in tool.input_schema["properties"][pname]["description"], (tool.name, pname)


# ----------------------------------------------------------------------------- the shipped data, standalone


def test_shipped_inventory_has_760_valid_tools():
    inventory = load_inventory("fintool760")
    assert len(inventory) == 760
    names = [t.name for t in inventory]
    assert len(set(names)) == 760
    assert all(is_valid_tool_name(n) for n in names)
    for tool in inventory:
        Draft202012Validator.check_schema(tool.input_schema)
        assert tool.output_schema is not None
        Draft202012Validator.check_schema(tool.output_schema)
        assert tool.output_schema["required"] == ["result"]
        assert tool.meta["output_wrapped"] is True
        assert tool.meta["tool_from"] == tool.source in {"akshare", "rapidapi"}
        assert tool.title and tool.description
        assert tool.scenario is None and tool.sub_scenario is None


def test_shipped_file_is_reproducible_gzip():
    raw = DEFAULT_OUTPUT.read_bytes()
    assert raw[:2] == b"\x1f\x8b" and raw[4:8] == b"\x00\x00\x00\x00"  # gzip, mtime 0
    document = json.loads(gzip.decompress(raw))
    assert document["inventory"] == "fintool760"
    assert document_bytes(document) == raw  # sorted keys, fixed settings


def test_output_schemas_validate_wrapped_rows():
    inventory = load_inventory("fintool760")
    with_columns = Draft202012Validator(inventory.get("get_qhkc_index_profit_loss").output_schema)
    assert with_columns.is_valid({"result": [{"indexes": "a-b", "value": -3.5, "trans_date": "2019-09-30"}]})
    assert not with_columns.is_valid({"result": [{"value": "not a number"}]})
    assert not with_columns.is_valid([{"value": 1}])  # rows must be wrapped
    generic = Draft202012Validator(inventory.get("stock_zh_a_hist").output_schema)
    assert generic.is_valid({"result": [{"日期": "2024-01-02", "收盘": 9.9}]})
    assert not generic.is_valid({"rows": []})
    rapid = Draft202012Validator(inventory.get("symbols_faq").output_schema)
    assert rapid.is_valid({"result": {"data": [{"symbol": "NVDA", "metric": "faq", "value": "text"}]}})
    assert not rapid.is_valid({"result": [1, 2]})  # a concrete normalised shape now
    assert inventory.get("symbols_faq").meta["output_kind"] == "json"


def test_shipped_entities_give_a_meaningful_sparse_graph():
    inventory = load_inventory("fintool760")
    graph = DependencyGraph.from_inventory(inventory)
    assert "company_id" in graph.edges[("market_v2_auto_complete", "stock_v2_get_realtime_data")]
    assert "stock_symbol" in graph.edges[("index_stock_cons", "stock_zh_a_hist")]
    assert "article_id" in graph.edges[("articles_v2_list", "comments_v2_list")]
    assert ("stock_zh_a_hist", "index_stock_cons") not in graph.edges
    assert 0 < graph.density < 0.02
    hist = inventory.get("stock_zh_a_hist")
    assert hist.consumes == ("stock_symbol", "date_range") and "price_series" in hist.produces


# ----------------------------------------------------------------------------- importer on hand-written lines


def test_both_modes_keep_the_facts_and_only_the_text_differs():
    text = "\n".join(json.dumps(r, ensure_ascii=False) for r in (_line(), RAPID, RAPID_DETAIL))
    published = load_manifest_text(text, keep_text=True)
    ours = load_manifest_text(text, keep_text=False)
    for kept, written, record in zip(published, ours, (_line(), RAPID, RAPID_DETAIL), strict=True):
        assert kept.description == record["description"] != written.description
        assert kept.input_schema == record["parameters"]
        assert written.input_schema["required"] == record["parameters"]["required"]
        for pname, pschema in record["parameters"]["properties"].items():
            assert written.input_schema["properties"][pname]["type"] == pschema["type"]
            assert "enum" not in written.input_schema["properties"][pname]
        assert (kept.consumes, kept.produces, kept.output_schema) == (
            written.consumes,
            written.produces,
            written.output_schema,
        )
    hist, complete, profile = ours
    period = hist.input_schema["properties"]["period"]["description"]
    assert "daily" in period and "weekly" in period and "monthly" in period  # the full multi-line list
    assert "daily | weekly | monthly" in hist.description
    assert hist.title == "Stock demo history (East Money)"
    assert hist.consumes == ("stock_symbol",)  # period has fixed choices: a selector, not an entity
    assert complete.consumes == ("keyword",) and complete.produces == ("company_id",)
    assert profile.consumes == ("company_id",)
    assert "en, de, fr" in profile.input_schema["properties"]["lang"]["description"]
    assert "from the Demo Finance API on RapidAPI" in profile.description


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        (_line(parameters=None), "field parameters: must be a JSON Schema object"),
        ({k: v for k, v in _line().items() if k != "parameters"}, "field parameters: missing"),
        (
            _line(
                financial_tags={
                    "timeliness": "hourly",
                    "intent_type": "informational",
                    "regulatory_domains": ["equity"],
                }
            ),
            "financial_tags.timeliness",
        ),
        (
            _line(
                financial_tags={
                    "timeliness": "daily",
                    "intent_type": "informational",
                    "regulatory_domains": ["stocks"],
                }
            ),
            "financial_tags.regulatory_domains",
        ),
        (
            _line(parameters={"type": "object", "properties": {"symbol": "string"}, "required": []}),
            "parameters.properties.symbol",
        ),
        (
            _line(parameters={"type": "object", "properties": {"symbol": {"type": "text"}}, "required": []}),
            "parameters.properties.symbol.type",
        ),
        (
            _line(parameters={"type": "object", "properties": {}, "required": ["symbol"]}),
            "parameters.required",
        ),
        (_line(parameters={"type": "array", "properties": {}, "required": []}), "parameters.type"),
        (_line(name="bad name!"), "field name"),
        (_line(), "duplicate tool name"),
    ],
)
def test_a_malformed_line_names_the_line_tool_and_field(tmp_path, bad, field):
    path = _write_manifest(tmp_path / "tools.jsonl", [_line(), bad])
    with pytest.raises(ManifestError) as info:
        load_manifest(path, keep_text=True)
    message = str(info.value)
    assert str(path) in message and "line 2" in message and field in message
    if isinstance(bad, dict) and "name" in bad:
        assert repr(bad["name"]) in message


def test_an_entity_type_outside_the_vocabulary_is_reported_by_line(tmp_path, monkeypatch):
    monkeypatch.setattr(manifest, "infer_consumes", lambda facts: ("stock_symbol", "no_such_entity"))
    path = _write_manifest(tmp_path / "tools.jsonl", [_line()])
    with pytest.raises(
        ManifestError, match=r"line 1: .*field consumes: unknown entity types \['no_such_entity'\]"
    ):
        load_manifest(path, keep_text=True)


def test_invalid_json_and_non_object_lines_are_reported_by_line(tmp_path):
    path = _write_manifest(tmp_path / "tools.jsonl", [_line(), "", '{"name": "x",'])
    with pytest.raises(ManifestError, match=r"line 3: not valid JSON"):
        load_manifest(path, keep_text=False)
    path = _write_manifest(tmp_path / "tools.jsonl", [RAPID, "[1, 2]"])
    with pytest.raises(ManifestError, match=r"line 2: field <line>: expected a JSON object"):
        load_manifest(path, keep_text=False)


def test_build_is_deterministic_and_keeps_manifest_order(tmp_path):
    path = _write_manifest(tmp_path / "tools.jsonl", [RAPID_DETAIL, _line(), RAPID])
    first = build(path, tmp_path / "a.json.gz").read_bytes()
    second = build(path, tmp_path / "b.json.gz").read_bytes()
    assert first == second
    names = [t["name"] for t in build_document(path)["tools"]]
    assert names == [RAPID_DETAIL["name"], _line()["name"], RAPID["name"]]


# ----------------------------------------------------------------------------- source facts


def test_columns_are_parsed_from_a_printed_sample_table():
    description = (
        "样例\n:param symbol: 代码\n:type symbol: str\n:return: 表\n:rtype: pandas.DataFrame\n"
        "result_df\n"
        "      trade_date   close   volume  name\n"
        "0    2021-01-04   10.50    12000  alpha\n"
        "1    2021-01-05   10.80    13500  beta\n"
        "..          ...     ...      ...   ...\n"
        "9    2021-01-15  1.1e+01     900  gamma\n"
    )
    columns, source, partial = parse_description_columns(description)
    assert source == "description-table" and partial is False
    assert [(c.name, c.type, c.date_format) for c in columns] == [
        ("trade_date", "string", "YYYY-MM-DD"),
        ("close", "number", None),
        ("volume", "number", None),
        ("name", "string", None),
    ]
    assert columns[0].schema() == {"type": "string", "format": "date"}


def test_columns_from_a_typed_listing_an_elided_header_and_prose():
    typed = ":rtype: pandas.DataFrame\n结果:\nrate     利率     float\nday      日期     string YYYYMMDD\n"
    columns, source, _ = parse_description_columns(typed)
    assert source == "description-typed-list"
    assert [(c.name, c.type, c.date_format) for c in columns] == [
        ("rate", "number", None),
        ("day", "string", "YYYYMMDD"),
    ]
    elided = ":rtype: pandas.DataFrame\n  date   open  ...  amount\n  20200102  3.5  ...  100\n"
    columns, source, partial = parse_description_columns(elided)
    assert partial is True and [c.name for c in columns] == ["date", "open", "amount"]
    assert columns[0].date_format == "YYYYMMDD"
    prose = ":rtype: pandas.DataFrame\n:raise: Exception if the page cannot be parsed\n"
    assert parse_description_columns(prose) == ((), "unknown", False)
    assert parse_description_columns("no return type here") == ((), "unknown", False)


def test_output_kind_follows_the_declared_return_type():
    def facts(description: str, tool_from: str = "akshare") -> ToolFacts:
        return ToolFacts("demo_tool", tool_from, description, {}, (), "daily", "informational", ("equity",))

    assert describe_output(facts(":return: x\n:rtype: dict")).kind == "object"
    assert describe_output(facts(":rtype: list")).kind == "array"
    assert describe_output(facts(":rtype: str")).kind == "text"
    assert describe_output(facts(":rtype: pandas.DataFrame")).kind == "rows"
    assert describe_output(facts("api_x: anything", "rapidapi")).kind == "json"


def test_choice_lists_in_their_source_forms():
    braces = parse_choices('choice of {"qfq": "前复权", "hfq": "后复权", "": "不复权"}')
    assert braces.values == ("qfq", "hfq", "") and braces.options[0].label == "前复权"
    multi = parse_choices("choice of {'a', 'b',\n'c', \"...\"}; 从 2010 开始")
    assert multi.values == ("a", "b", "c") and multi.open_ended
    assert parse_choices('choice of {“x”, "y"}').values == ("x", "y")
    assert parse_choices('choice of {"5": 最近 5 天; "10": 最近 10 天;}').values == ("5", "10")
    piped = parse_choices("One of the following : A - Annual | Q - Quarterly")
    assert piped.values == ("A", "Q") and piped.options[1].label == "Quarterly"
    assert parse_choices("One of the following is allowed\nUS|BR|AU").values == ("US", "BR", "AU")
    allowed = parse_choices("Lifespan. Allowed values: `perpetual`(default), `weekly`, `monthly`")
    assert allowed.values == ("perpetual", "weekly", "monthly") and allowed.default == "perpetual"
    assert parse_choices("can be either 'annual' or 'quarterly'.").values == ("annual", "quarterly")
    assert parse_choices("sort&#95;a|sort&#95;b").values == ("sort_a", "sort_b")
    assert parse_choices("choice of None or a positive float number") is None
    assert parse_choices("use either a specific date or a range") is None
    assert parse_choices("股票代码") is None


def test_examples_are_values_not_words():
    assert parse_example('交易日, e.g., "20240122"') == "20240122"
    assert parse_example("The format is yyyy-MM-dd. Ex : 2021-08-10") == "2021-08-10"
    assert parse_example("Expressed in YYYY-MM-DD") is None
    assert parse_example("Get shares. Ex result: https://example.org/x") is None


def test_names_are_expanded_through_the_glossary():
    assert humanize_name("stock_zh_a_hist_em") == "Stock China A-share history (East Money)"
    assert humanize_name("stock_fhps_detail_ths") == "Stock dividends and bonus shares details (Tonghuashun)"
    assert "Jin10" in humanize_name("futures_stock_shfe_js")
    assert humanize_name("get_qhkc_index") == "Index (Qihuo Kecha)"
    assert "Shanghai Stock Exchange" in humanize_name("option_daily_stats_sse")
