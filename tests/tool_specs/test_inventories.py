"""The built-in inventories: counts, validity, the finmcp65 selection, the dependency graph, the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import mcp_types
import pytest

from finmcp.tool_specs.graph import DependencyGraph
from finmcp.tool_specs.inventory import builtin_names, load_builtin_checked, load_inventory
from finmcp.tool_specs.model import is_valid_tool_name

EXPECTED_COUNTS = {"finmcp65": 65, "qieman79": 79, "fintool760": 760}
BIN = Path(sys.executable).parent


@pytest.mark.parametrize("name", builtin_names())
def test_builtin_inventory_loads_with_expected_count(name):
    inventory = load_inventory(name)
    assert len(inventory) == EXPECTED_COUNTS[name]
    assert len(inventory.names) == len(inventory)
    assert all(is_valid_tool_name(t.name) for t in inventory)
    for wire in inventory.mcp_tools:
        mcp_types.Tool.model_validate(wire)


@pytest.mark.parametrize("name", builtin_names())
def test_builtin_schemas_pass_the_meta_schema_check_skipped_at_load(name):
    """Loading a shipped inventory skips the meta-schema check (start-up time); it must still pass."""
    assert load_builtin_checked(name).tools == load_inventory(name).tools


def test_require_returns_the_tool_or_names_tool_and_inventory():
    inventory = load_inventory("finmcp65")
    assert inventory.require("GetFundDiagnosis") is inventory.get("GetFundDiagnosis")
    with pytest.raises(KeyError, match="tool 'NoSuchTool' not in inventory 'finmcp65'"):
        inventory.require("NoSuchTool")


def test_finmcp65_is_the_documented_selection_of_qieman79():
    qieman = load_inventory("qieman79")
    finmcp = load_inventory("finmcp65")
    assert finmcp.names <= qieman.names
    evidenced = {t.name for t in qieman if t.meta.get("finmcp_evidence", "none") != "none"}
    assert len(evidenced) == 37
    assert evidenced <= finmcp.names
    assert "GetLatestQuotations" not in finmcp
    left_out = qieman.names - finmcp.names
    assert len(left_out) == 14
    assert all(
        "Bond" in n or "Industry" in n or n.startswith(("filter", "getFundDive", "fund-sector"))
        for n in left_out - {"GetLatestQuotations"}
    )
    # the selection keeps the base inventory's specs unchanged
    assert all(finmcp.get(t.name) == qieman.get(t.name) for t in finmcp)


def test_qieman_argument_conventions():
    qieman = load_inventory("qieman79")
    detail = qieman.get("BatchGetFundsDetail").input_schema["properties"]["fundCodes"]
    assert detail["type"] == "array" and detail["maxItems"] == 20
    echart = qieman.get("RenderEchart").input_schema["properties"]
    assert echart["width"]["type"] == "string" and echart["height"]["type"] == "string"
    txn = qieman.get("GetTxnDayRange").input_schema
    assert {"beforeDays", "afterDays"} <= set(txn["required"])
    assert txn["properties"]["beforeDays"]["type"] == "string"


def test_every_qieman_tool_has_a_taxonomy_place_and_all_sub_scenarios_are_used():
    qieman = load_inventory("qieman79")
    assert all(t.scenario and t.sub_scenario for t in qieman)
    assert len({t.scenario for t in qieman}) == 10


def test_dependency_graph_of_finmcp65():
    graph = DependencyGraph.from_inventory(load_inventory("finmcp65"))
    assert len(graph.nodes) == 65
    # chains seen in the official samples are edges
    assert ("SearchFunds", "BatchGetFundsDetail") in graph.edges
    assert ("StrategySearchByKeyword", "GetStrategyRiskInfo") in graph.edges
    assert ("GetUserAssetView", "GetFundLatestProfit") in graph.edges
    assert ("GetAssetAllocationPlan", "GetCompositeModel") in graph.edges
    assert "fund_code" in graph.edges[("SearchFunds", "BatchGetFundsDetail")]
    assert "BatchGetFundsDetail" in graph.successors("SearchFunds")
    assert "SearchFunds" in graph.predecessors("BatchGetFundsDetail")
    assert all(a != b for a, b in graph.edges)
    paths = graph.paths("StrategySearchByKeyword", "BatchGetFundNavHistory", max_length=2)
    assert ["StrategySearchByKeyword", "BatchGetStrategiesComposition", "BatchGetFundNavHistory"] in paths
    assert all(len(p) <= 3 and p[0] == "StrategySearchByKeyword" for p in paths)
    exported = json.loads(json.dumps(graph.to_json()))
    assert exported["nodes"] == 65 and exported["edges"] == len(graph.edges) == len(exported["edge_list"])
    with pytest.raises(KeyError, match="not in inventory"):
        graph.successors("NoSuchTool")


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "finmcp-server"), *args], capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_cli_summarises_and_exports_the_graph(tmp_path):
    summary = run_cli("inventories")
    assert summary.returncode == 0, summary.stderr
    for name in EXPECTED_COUNTS:
        assert name in summary.stdout
    out = tmp_path / "graph.json"
    exported = run_cli("graph", "--inventory", "finmcp65", "--output", str(out))
    assert exported.returncode == 0, exported.stderr
    assert json.loads(out.read_text("utf-8"))["nodes"] == 65
    tools = run_cli("tools", "--inventory", "qieman79", "--json")
    assert len(json.loads(tools.stdout)["tools"]) == 79


def test_cli_unknown_inventory_is_a_clear_error():
    result = run_cli("tools", "--inventory", "nope")
    assert result.returncode == 2
    assert "unknown inventory 'nope'" in result.stderr
    assert "Traceback" not in result.stderr
