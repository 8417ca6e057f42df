"""``finmcp-eval run --bench FILE`` without ``--inventory``: the references' own inventory, else the smallest
built-in holding every tool they call (said on stderr), else an error naming ``--inventory`` and the tools."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from finmcp.evaluator.benchmarks import load_benchmark
from finmcp.evaluator.cli import main
from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.harness.inventory_choice import (
    InventoryChoice,
    builtin_tool_sets,
    choose_inventory,
    covering_inventory,
)
from finmcp.evaluator.inputs.references import parse_references

SETS = {"big": frozenset("abcde"), "small": frozenset("abc"), "other": frozenset("xyz")}


def test_the_smallest_covering_inventory_is_chosen() -> None:
    assert covering_inventory({"a", "b"}, SETS) == "small"
    assert covering_inventory({"a", "e"}, SETS) == "big"
    assert covering_inventory({"x"}, SETS) == "other"  # 3 tools, ties with small: by name
    assert covering_inventory(set(), SETS) == "other"
    ties = {"b2": frozenset("ab"), "a2": frozenset("ab")}
    assert covering_inventory({"a"}, ties) == "a2"  # deterministic whatever the mapping's order


def test_none_covering_names_the_flag_and_the_missing_tools() -> None:
    with pytest.raises(EvalInputError) as caught:
        covering_inventory({"a", "b", "x", "q"}, SETS)
    message = str(caught.value)
    assert "--inventory" in message
    assert "the closest, small, lacks 2: q, x" in message  # small lacks q, x; other lacks a, b, q


def test_builtins_qieman79_holds_finmcp65() -> None:
    sets = builtin_tool_sets()
    assert {"qieman79", "finmcp65", "fintool760"} <= set(sets)
    assert sets["finmcp65"] < sets["qieman79"]
    only_qieman = sorted(sets["qieman79"] - sets["finmcp65"])
    assert covering_inventory({"SearchFinancialNews"}) == "finmcp65"
    assert covering_inventory({"SearchFinancialNews", only_qieman[0]}) == "qieman79"
    with pytest.raises(EvalInputError, match="--inventory"):
        covering_inventory({"SearchFinancialNews", "NoSuchTool"})


def official_sample(sid: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One sample in the official FinMCP-Bench shape (it names tools, not an inventory)."""
    call = {"id": f"call_{sid}", "type": "function", "index": 0,
            "function": {"name": tool, "arguments": json.dumps(arguments, ensure_ascii=False)}}  # fmt: skip
    return {
        "id": sid,
        "scenery": "市场分析与研究-宏观经济-市场环境研判",
        "diff_level": {"turns": 1, "tool_number": 1, "para_tool_call_number": 0, "level": "easy"},
        "tool_list": [[tool]],
        "question": "最近市场行情如何？",
        "answer": "……",
        "messages": [
            {"role": "user", "content": "最近市场行情如何？"},
            {"role": "assistant", "tool_calls": [call]},
            {"role": "tool", "content": "{}", "tool_call_id": f"call_{sid}"},
            {"role": "assistant", "content": "……"},
        ],
        "first-class": "市场分析与研究",
        "sub-class": "宏观经济",
        "task": "single step",
    }


QIEMAN_ONLY = [official_sample(1, "SearchFinancialNews", {"keyword": "市场"}),
               official_sample(2, "GetLatestQuotations", {"calDate": "2025-08-15"})]  # fmt: skip


def test_choose_inventory_prefers_the_flag_then_the_references() -> None:
    refs = parse_references(QIEMAN_ONLY).samples
    assert choose_inventory(refs, "fintool760") == InventoryChoice("fintool760", "flag")
    assert choose_inventory(refs, None) == InventoryChoice("qieman79", "inferred", 2)
    assert choose_inventory(refs[:1], None) == InventoryChoice("finmcp65", "inferred", 1)
    named = load_benchmark("finmcp-sim")[:5]  # finmcp's own references name their inventory
    assert choose_inventory(named, None) == InventoryChoice("finmcp65", "references")


@pytest.mark.slow
def test_run_infers_the_inventory_and_serves_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """End to end: a spawned server and proxy serve the inferred inventory; the oracle's calls all succeed."""
    bench = tmp_path / "official.json"
    bench.write_text(json.dumps(QIEMAN_ONLY, ensure_ascii=False), "utf-8")
    db = tmp_path / "runs.sqlite"
    argv = ["run", "--bench", str(bench), "--agent", "oracle", "--spawn", "--run", "r", "--db", str(db),
            "--report-dir", str(tmp_path / "report"), "--bootstrap", "0", "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "inventory" in line]
    assert lines == [
        "finmcp-eval: inventory qieman79 (inferred: the smallest built-in holding the 2 tools official.json "
        "calls; --inventory to choose another)"
    ], err
    with sqlite3.connect(db) as con:
        calls = con.execute("SELECT tool, status FROM calls WHERE run_id = 'r' ORDER BY tool").fetchall()
    assert calls == [("GetLatestQuotations", "ok"), ("SearchFinancialNews", "ok")]
    report = json.loads((tmp_path / "report" / "report.json").read_text("utf-8"))
    assert report["official"]["overall"]["macro_F1"] == 1.0


def test_run_without_a_covering_inventory_names_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = tmp_path / "official.json"
    bench.write_text(json.dumps([official_sample(1, "NoSuchTool", {})]), "utf-8")
    argv = ["run", "--bench", str(bench), "--agent", "oracle", "--proxy", "http://127.0.0.1:9/mcp",
            "--run", "r", "--db", str(tmp_path / "runs.sqlite"), "--no-progress"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "finmcp-eval run: error: no built-in inventory" in err
    assert "lacks 1: NoSuchTool" in err and "Give --inventory" in err
