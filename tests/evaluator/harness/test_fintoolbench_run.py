"""FinToolBench questions through the harness: ``run --spawn`` (real server and proxy) hands the
inventory's finance tags to the scorer, the oracle's calls all succeed (TESR = 1), and ``score`` on the
same trace gives the same compliance numbers, or says n/a, never 0, when it has no tool metadata."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from finmcp.evaluator.cli import main
from finmcp.tool_specs.inventory import load_inventory

pytestmark = [pytest.mark.slow, pytest.mark.shared]  # spawns finmcp-server and finmcp-proxy
VARIANTS = ("fintoolbench", "fintoolbench_corrected")
RATES = ("tmr", "imr", "dmr")


@pytest.fixture(scope="module")
def oracle_run(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("ftb")
    questions = shared_dir / "fintoolbench" / "questions_sample.jsonl"
    db, out = work / "runs.sqlite", work / "report"
    status = main(
        ["run", "--bench", str(questions), "--inventory", "fintool760", "--agent", "oracle", "--spawn",
         "--run", "orc", "--db", str(db), "--report-dir", str(out), "--bootstrap", "50", "--no-progress"]
    )  # fmt: skip
    assert status == 0
    report = json.loads((out / "report.json").read_text("utf-8"))
    return {"questions": questions, "db": db, "out": out, "report": report, "work": work}


def _com(report: dict[str, Any], variant: str) -> dict[str, Any]:
    return report["fintoolbench"][variant]["metrics"]["com"]


def test_run_hands_the_inventory_tags_to_the_scorer(oracle_run) -> None:
    report = oracle_run["report"]
    block = report["fintoolbench"]
    assert block["tool_metadata"] == 760 and block["tool_metadata_source"] == "inventory fintool760"
    for variant in VARIANTS:
        com = _com(report, variant)
        assert "na_reason" not in com, com
        assert all(isinstance(com[k], float) for k in RATES), com
        assert com["with_metadata"] == com["judged_tools"] == 16 and all(
            com["verdicts"][k] > 0 for k in RATES
        )
    md = (oracle_run["out"] / "report.md").read_text("utf-8")
    assert "tools with metadata: 760 (inventory fintool760)" in md and "n/a (" not in md


def test_oracle_calls_all_succeed_on_fintoolbench_questions(oracle_run) -> None:
    report = oracle_run["report"]
    for variant in VARIANTS:
        cap = report["fintoolbench"][variant]["metrics"]["cap"]
        assert cap["tir"] == cap["tesr"] == cap["cer"] == 1.0, (variant, cap)
    assert report["tool_selection"]["overall"]["macro_F1"] == 1.0
    inventory = load_inventory("fintool760")
    with sqlite3.connect(oracle_run["db"]) as con:
        rows = con.execute("SELECT tool, arguments, status FROM calls WHERE run_id = 'orc'").fetchall()
    assert len(rows) == 16 and {status for _, _, status in rows} == {"ok"}
    for tool, arguments, _ in rows:  # every required parameter is given
        required = set(inventory.get(tool).input_schema.get("required") or [])
        assert required <= set(json.loads(arguments)), (tool, arguments)
    calls = {tool: json.loads(arguments) for tool, arguments, _ in rows}
    assert calls["symbols_get_financials"] == {"symbol": "NKE"}  # "Nike's ... FY2016 to FY2018"
    assert calls["get_futures_daily"] == {"start_date": "20231108", "end_date": "20231109"}


def test_score_reads_the_same_trace_with_the_same_numbers(oracle_run, tmp_path: Path) -> None:
    out = tmp_path / "score"
    argv = ["score", "--bench", str(oracle_run["questions"]), "--db", str(oracle_run["db"]), "--run", "orc",
            "--inventory", "fintool760", "--report-dir", str(out), "--bootstrap", "50"]  # fmt: skip
    assert main(argv) == 0
    report = json.loads((out / "report.json").read_text("utf-8"))
    assert report["fintoolbench"]["tool_metadata_source"] == "inventory fintool760"
    for variant in VARIANTS:
        assert {k: _com(report, variant)[k] for k in RATES} == {
            k: _com(oracle_run["report"], variant)[k] for k in RATES
        }
        assert report["fintoolbench"][variant]["metrics"]["cap"]["tesr"] == 1.0


def test_score_without_tool_metadata_says_na_and_warns(oracle_run, tmp_path: Path, capsys) -> None:
    empty = tmp_path / "tools.jsonl"
    empty.write_text("", encoding="utf-8")
    out = tmp_path / "score"
    argv = ["score", "--bench", str(oracle_run["questions"]), "--db", str(oracle_run["db"]), "--run", "orc",
            "--tool-manifest", str(empty), "--report-dir", str(out), "--bootstrap", "50"]  # fmt: skip
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert (
        "warning: FinToolBench (fintoolbench, fintoolbench_corrected): TMR/IMR/DMR n/a: no tool metadata"
        in err
    )
    report = json.loads((out / "report.json").read_text("utf-8"))
    assert report["fintoolbench"]["tool_metadata"] == 0
    for variant in VARIANTS:
        com = _com(report, variant)
        assert [com[k] for k in RATES] == [None, None, None]
        assert com["na_reason"] == {k: "no tool metadata" for k in RATES}
    assert "n/a (no tool metadata)" in (out / "report.md").read_text("utf-8")
    assert "n/a (no tool metadata)" in (out / "report.html").read_text("utf-8")
