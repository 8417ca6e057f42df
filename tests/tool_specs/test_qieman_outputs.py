"""The qieman79 inventory data file against the facts and the recorded FinMCP sample traffic.

Checks that every record is a valid ToolSpec placed in the taxonomy, that the 79 names are the facts' names,
and that every Qieman call and every JSON tool output recorded in the FinMCP samples validates against the
tool's input and output schemas. The data file is read directly (json.load), independent of any loader.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from finmcp.tool_specs.entities import SOURCE_ENTITIES
from finmcp.tool_specs.model import ToolSpec

REPO = Path(__file__).resolve().parents[2]
INVENTORY_FILE = REPO / "tool_specs" / "data" / "qieman79.json"
TAXONOMY_FILE = REPO / "tool_specs" / "data" / "taxonomy.json"
SAMPLE_FILES = ("demo_infer.json", "train_data_demo.json")

# Lower-camel XiaoGu tools of the older SFT samples; they are not Qieman tools.
LEGACY_TOOLS = frozenset(
    {
        "getFundRecentPerformance",
        "getFundSectorAllocation",
        "getFundAssetAllocation",
        "getFundValuationInfo",
        "getFundHistoricalPerformance",
        "getPortfolioDetail",
    }
)

# Argument names that carry fund codes, and the entity types they imply.
FUND_CODE_ARGS = frozenset({"fundCode", "fundCodes", "fundCodeList", "fundList", "holdings", "holdingList"})
STRATEGY_CODE_ARGS = frozenset({"strategyCode", "strategyCodes", "poCode"})


@dataclass(frozen=True)
class Exchange:
    """One recorded tool call and, when the sample has it, the tool's text output."""

    where: str
    tool: str
    arguments: dict[str, Any]
    output: str | None


def _load_json(path: Path) -> Any:
    with path.open(encoding="utf-8") as fh:
        return json.load(fh)


def _inventory() -> dict[str, dict[str, Any]]:
    return {tool["name"]: tool for tool in _load_json(INVENTORY_FILE)["tools"]}


def _parse_arguments(raw: Any, where: str) -> dict[str, Any]:
    args = json.loads(raw) if isinstance(raw, str) else raw
    if not isinstance(args, dict):
        raise AssertionError(f"{where}: tool-call arguments are not a JSON object: {raw!r}")
    return args


def _exchanges_in(messages: list[dict[str, Any]], where: str) -> Iterator[Exchange]:
    """Pair each tool message with its call: by tool_call_id when present, else the oldest pending call."""
    pending: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant":
            pending.extend(message.get("tool_calls") or [])
        elif role == "tool":
            call_id = message.get("tool_call_id")
            match = next((c for c in pending if call_id and c.get("id") == call_id), None)
            if match is None and pending:
                match = pending[0]
            if match is None:
                continue
            pending.remove(match)
            content = message.get("content")
            fn = match["function"]
            label = f"{where}[{index}] {fn['name']}"
            yield Exchange(
                label,
                fn["name"],
                _parse_arguments(fn["arguments"], label),
                content if isinstance(content, str) else None,
            )
    for call in pending:  # calls whose output was never recorded
        fn = call["function"]
        label = f"{where} {fn['name']} (no output)"
        yield Exchange(label, fn["name"], _parse_arguments(fn["arguments"], label), None)


def _recorded_exchanges(shared_dir: Path) -> list[Exchange]:
    """Every Qieman tool call in the FinMCP sample files (messages and messages_list)."""
    found: list[Exchange] = []
    for filename in SAMPLE_FILES:
        for number, sample in enumerate(_load_json(shared_dir / "finmcp" / filename)):
            for key in ("messages", "messages_list"):
                messages = sample.get(key) or []
                where = f"{filename}[{number}].{key}"
                found.extend(x for x in _exchanges_in(messages, where) if x.tool not in LEGACY_TOOLS)
    return found


def _json_or_none(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None  # prose (paraphrased) outputs and error texts are not structured data


def _schema_errors(schema: dict[str, Any], instance: Any) -> list[str]:
    validator = Draft202012Validator(schema)
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message[:160]}"
        for e in validator.iter_errors(instance)
    ]


def _walk_schemas(schema: Any) -> Iterator[dict[str, Any]]:
    if isinstance(schema, dict):
        yield schema
        for value in schema.values():
            yield from _walk_schemas(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _walk_schemas(value)


# ---------------------------------------------------------------------------------------------- file only


def test_records_are_toolspecs_in_record_form() -> None:
    doc = _load_json(INVENTORY_FILE)
    assert doc["inventory"] == "qieman79"
    assert doc["description"]
    problems = []
    for record in doc["tools"]:
        try:
            spec = ToolSpec.model_validate(record)
        except ValueError as exc:
            problems.append(f"{record.get('name')}: {exc}")
            continue
        if spec.to_record() != record:
            problems.append(f"{spec.name}: record is not in to_record() form")
        if spec.source != "qieman":
            problems.append(f"{spec.name}: source is {spec.source!r}")
        if spec.tags.intent_type == "transactional":
            problems.append(f"{spec.name}: no Qieman tool places orders")
    assert not problems, "\n".join(problems)


def test_schemas_are_valid_draft_2020_12_and_never_closed() -> None:
    problems = []
    for name, tool in _inventory().items():
        for key in ("inputSchema", "outputSchema"):
            schema = tool[key]
            try:
                Draft202012Validator.check_schema(schema)
            except SchemaError as exc:
                problems.append(f"{name}.{key}: invalid schema: {exc.message}")
            if schema.get("type") != "object":
                problems.append(f"{name}.{key}: root type must be object")
            if any(node.get("additionalProperties") is False for node in _walk_schemas(schema)):
                problems.append(f"{name}.{key}: additionalProperties false is not allowed")
    assert not problems, "\n".join(problems)


def test_input_schemas_declare_and_describe_every_argument() -> None:
    problems = []
    for name, tool in _inventory().items():
        schema = tool["inputSchema"]
        properties, required = schema.get("properties"), schema.get("required")
        if not isinstance(properties, dict) or not isinstance(required, list):
            problems.append(f"{name}.inputSchema: needs a properties object and a required list")
            continue
        if undeclared := sorted(set(required) - set(properties)):
            problems.append(f"{name}.inputSchema: required but undeclared: {undeclared}")
        if undescribed := [arg for arg, sub in properties.items() if not sub.get("description")]:
            problems.append(f"{name}.inputSchema: arguments without description: {undescribed}")
    assert not problems, "\n".join(problems)


def test_output_schemas_describe_top_level_fields_and_wrap_arrays() -> None:
    problems = []
    for name, tool in _inventory().items():
        schema, meta = tool["outputSchema"], tool["meta"]
        properties = schema.get("properties", {})
        if undescribed := [field for field, sub in properties.items() if not sub.get("description")]:
            problems.append(f"{name}.outputSchema: top-level fields without description: {undescribed}")
        if "output_wrapped" in meta and meta["output_wrapped"] is not True:
            problems.append(f"{name}: meta.output_wrapped is written only when true")
        if meta.get("output_wrapped"):
            result = properties.get("result", {})
            if set(properties) != {"result"} or schema.get("required") != ["result"]:
                problems.append(f"{name}: a wrapped output has exactly one required field, result")
            elif result.get("type") != "array":
                problems.append(f"{name}: a wrapped output's result is an array")
        if meta.get("output_shape") not in ("observed", "designed"):
            problems.append(f"{name}: meta.output_shape must be observed or designed")
    assert not problems, "\n".join(problems)


def test_sub_scenarios_belong_to_their_scenario_and_cover_the_taxonomy() -> None:
    taxonomy = _load_json(TAXONOMY_FILE)
    parent = {sub["id"]: scen["id"] for scen in taxonomy["scenarios"] for sub in scen["sub_scenarios"]}
    problems = []
    for name, tool in _inventory().items():
        sub = tool.get("sub_scenario")
        if sub not in parent:
            problems.append(f"{name}: unknown sub_scenario {sub!r}")
        elif parent[sub] != tool.get("scenario"):
            problems.append(
                f"{name}: sub_scenario {sub} belongs to {parent[sub]}, not {tool.get('scenario')}"
            )
    assert not problems, "\n".join(problems)
    homeless = sorted(set(parent) - {tool.get("sub_scenario") for tool in _inventory().values()})
    assert not homeless, f"sub-scenarios that are no tool's primary home: {homeless}"


def test_code_arguments_imply_entity_types() -> None:
    problems = []
    for name, tool in _inventory().items():
        args = set(tool["inputSchema"]["properties"])
        consumes = set(tool.get("consumes", []))
        if args & FUND_CODE_ARGS and "fund_code" not in consumes:
            problems.append(f"{name}: takes {sorted(args & FUND_CODE_ARGS)} but does not consume fund_code")
        if args & STRATEGY_CODE_ARGS and "strategy_code" not in consumes:
            problems.append(
                f"{name}: takes {sorted(args & STRATEGY_CODE_ARGS)} but does not consume strategy_code"
            )
        if "userId" in args and "user_id" not in consumes:
            problems.append(f"{name}: takes userId but does not consume user_id")
    assert not problems, "\n".join(problems)


def test_recorded_chain_steps_are_data_flow_edges() -> None:
    """Hand-offs seen in the samples: the first tool produces a non-source entity the second consumes."""
    tools = _inventory()
    steps = [
        ("StrategySearchByKeyword", "GetStrategyDetails"),
        ("GetUserAssetView", "BatchGetStrategiesComposition"),
        ("GetUserAssetView", "GetFundLatestProfit"),
        ("BatchGetStrategiesComposition", "BatchGetFundsFeeRule"),
        ("BatchGetStrategiesComposition", "AnalyzePortfolioRisk"),
        ("GetAssetAllocationPlan", "GetCompositeModel"),
        ("GetCompositeModel", "BatchGetFundsDetail"),
        ("SearchFunds", "BatchGetFundTradeRules"),
        ("GetFundAnnouncements", "GetAnnouncementContent"),
        ("AnalyzeInvestmentPerformance", "RenderEchart"),
    ]
    missing = []
    for producer, consumer in steps:
        shared = (
            set(tools[producer].get("produces", [])) & set(tools[consumer].get("consumes", []))
        ) - SOURCE_ENTITIES
        if not shared:
            missing.append(f"{producer} -> {consumer}")
    assert not missing, f"no data-flow edge for: {missing}"


# ---------------------------------------------------------------------------------------------- with shared


@pytest.mark.shared
def test_names_equal_the_facts_in_order(shared_dir: Path) -> None:
    facts = _load_json(shared_dir / "finmcp" / "qieman_tools_facts.json")
    records = _load_json(INVENTORY_FILE)["tools"]
    assert [t["name"] for t in records] == [f["name"] for f in facts]
    by_name = {f["name"]: f for f in facts}
    problems = []
    for record in records:
        fact, meta = by_name[record["name"]], record["meta"]
        for key in ("group", "finmcp_evidence", "in_early_30_list", "in_2026_public_list"):
            if meta.get(key) != fact[key]:
                problems.append(f"{record['name']}: meta.{key}={meta.get(key)!r}, facts say {fact[key]!r}")
        required = {p["name"] for p in fact["params"] if p["required"] and not p["name"].startswith("<")}
        missing = required - set(record["inputSchema"]["required"])
        if missing:
            problems.append(f"{record['name']}: facts-required arguments not required: {sorted(missing)}")
        named = {p["name"] for p in fact["params"] if "|" not in p["name"] and not p["name"].startswith("<")}
        undeclared = named - set(record["inputSchema"]["properties"])
        if undeclared:
            problems.append(
                f"{record['name']}: facts arguments missing from inputSchema: {sorted(undeclared)}"
            )
    assert not problems, "\n".join(problems)


def _note_constraints(note: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Constraints a facts note states: enum a|b|c, max N, min N, default V (only when unambiguous)."""
    found: dict[str, Any] = {}
    if (m := re.search(r"(?:^|;\s*)enum ([^;(]+)", note)) and ".." not in m.group(1):
        found["enum"] = {"" if v.strip() == "''" else v.strip() for v in m.group(1).split("|")}
    numeric = schema.get("type") in ("number", "integer")
    if m := re.search(r"\bmax (\d+)\b", note):
        found["maxItems" if schema.get("type") == "array" else "maximum"] = int(m.group(1))
    if m := re.search(r"\bmin (\d+)\b", note):
        found["minimum"] = int(m.group(1))
    if m := re.search(r"\bdefault (\"[^\"]*\"|[^;,\s]+)", note):
        raw = m.group(1)
        if raw.startswith('"'):
            found["default"] = raw.strip('"')
        elif raw in ("true", "false"):
            found["default"] = raw == "true"
        elif numeric and re.fullmatch(r"\d+(\.\d+)?", raw):
            found["default"] = json.loads(raw)
        elif raw in found.get("enum", ()):
            found["default"] = raw
    return found


@pytest.mark.shared
def test_argument_constraints_follow_the_facts_notes(shared_dir: Path) -> None:
    tools = _inventory()
    problems, checked = [], 0
    for fact in _load_json(shared_dir / "finmcp" / "qieman_tools_facts.json"):
        properties = tools[fact["name"]]["inputSchema"]["properties"]
        for param in fact["params"]:
            schema = properties.get(param["name"])
            if schema is None or not param.get("note"):
                continue
            for key, expected in _note_constraints(param["note"], schema).items():
                checked += 1
                actual = set(schema.get("enum", ())) if key == "enum" else schema.get(key)
                if actual != expected:
                    problems.append(
                        f"{fact['name']}.{param['name']}: {key} is {actual!r}, the facts say {expected!r}"
                    )
    assert checked, "no constraints found in the facts notes"
    assert not problems, "\n".join(problems)


def test_batch_limits_and_string_typed_arguments() -> None:
    tools = _inventory()
    for name in ("BatchGetFundsFeeRule", "BatchGetFundsDetail", "BatchGetFundTradeRules"):
        assert tools[name]["inputSchema"]["properties"]["fundCodes"]["maxItems"] == 20, name
    # real calls pass 39 and 22 codes to these two, so they carry no cap
    assert "maxItems" not in tools["AnalyzeFundRisk"]["inputSchema"]["properties"]["fundCodes"]
    assert "maxItems" not in tools["GetFundLatestProfit"]["inputSchema"]["properties"]["fundCodeList"]
    echart = tools["RenderEchart"]["inputSchema"]["properties"]
    assert (echart["width"]["type"], echart["width"]["default"]) == ("string", "800")
    assert (echart["height"]["type"], echart["height"]["default"]) == ("string", "600")
    days = tools["GetTxnDayRange"]["inputSchema"]
    assert {"beforeDays", "afterDays"} <= set(days["required"])
    assert days["properties"]["afterDays"]["type"] == "string"
    strategy = tools["GetStrategyRiskInfo"]["inputSchema"]["properties"]["strategyCode"]
    assert "pattern" not in strategy, "strategy codes such as J7 or LONG_WIN_S have no fixed form"


@pytest.mark.shared
def test_recorded_call_counts_match_the_facts(shared_dir: Path) -> None:
    """Guards the sample walk itself: it must see every call the facts counted."""
    facts = _load_json(shared_dir / "finmcp" / "qieman_tools_facts.json")
    seen = Counter(x.tool for x in _recorded_exchanges(shared_dir))
    expected = Counter(
        {f["name"]: f["calls_in_finmcp_samples"] for f in facts if f["calls_in_finmcp_samples"]}
    )
    assert seen == expected


@pytest.mark.shared
def test_recorded_arguments_validate(shared_dir: Path) -> None:
    tools = _inventory()
    exchanges = _recorded_exchanges(shared_dir)
    assert exchanges, "no Qieman calls found in the samples"
    problems = []
    for x in exchanges:
        if x.tool not in tools:
            problems.append(f"{x.where}: {x.tool} is not in qieman79")
            continue
        problems += [f"{x.where}: {err}" for err in _schema_errors(tools[x.tool]["inputSchema"], x.arguments)]
    assert not problems, "\n".join(problems)


@pytest.mark.shared
def test_recorded_outputs_validate(shared_dir: Path) -> None:
    tools = _inventory()
    problems = []
    validated: Counter[str] = Counter()
    for x in _recorded_exchanges(shared_dir):
        parsed = _json_or_none(x.output)
        if parsed is None or x.tool not in tools:
            continue
        tool = tools[x.tool]
        structured = {"result": parsed} if tool["meta"].get("output_wrapped") else parsed
        errors = _schema_errors(tool["outputSchema"], structured)
        problems += [f"{x.where}: {err}" for err in errors]
        validated[x.tool] += not errors
    assert not problems, "\n".join(problems)
    observed = {name for name, tool in tools.items() if tool["meta"].get("output_shape") == "observed"}
    assert set(validated) == observed, (
        "meta.output_shape 'observed' must list exactly the tools with sample outputs"
    )
