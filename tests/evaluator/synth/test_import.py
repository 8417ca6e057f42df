"""Importers: official FinMCP-Bench files and FinToolBench questions become reference sets."""

from __future__ import annotations

import json

from finmcp.evaluator.cli import main as eval_main
from finmcp.evaluator.inputs.references import load_references
from finmcp.evaluator.synth.importers import import_fintoolbench, import_official, official_records
from finmcp.tool_specs.inventory import load_inventory


def test_demo_infer_yields_six_valid_references(shared_dir, tmp_path):
    demo = shared_dir / "finmcp" / "demo_infer.json"
    out = tmp_path / "demo.jsonl"
    summary = import_official([demo], out, tmp_path / "demo.sqlite")
    assert summary["references"] == 6
    refs = load_references(out, load_inventory("qieman79").names, "qieman79")
    assert refs.format == "own" and len(refs.samples) == 6
    by_id = {r.id: r for r in refs.samples}
    assert by_id["202"].type == "multi_tool" and by_id["202"].call_count == 6
    assert by_id["603"].type == "multi_turn" and by_id["603"].turns[-1].user == "###STOP###"
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert {(r["scenario"], r["sub_scenario"]) for r in records} >= {
        ("PlatformTechnicalSupport", "PlatformFeatureUsage"),
        ("MarketAnalysisAndResearch", "MacroEconomy"),
    }
    assert "23 imported, 1 identical" in summary["recordings"][0]


def test_imported_references_score_against_themselves(shared_dir, tmp_path):
    demo = shared_dir / "finmcp" / "demo_infer.json"
    records, _ = official_records(demo)
    refs_file = tmp_path / "refs.jsonl"
    refs_file.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    preds = tmp_path / "preds.jsonl"
    lines = []
    for r in records:
        turns = [{"turn": i, "calls": t["calls"]} for i, t in enumerate(r["turns"])]
        lines.append(json.dumps({"run_id": "oracle", "sample_id": r["id"], "trial": 0, "turns": turns}))
    preds.write_text("\n".join(lines) + "\n")
    out = tmp_path / "report"
    assert (
        eval_main(
            [
                "score",
                "--bench",
                str(refs_file),
                "--preds",
                str(preds),
                "--report-dir",
                str(out),
                "--bootstrap",
                "0",
            ]
        )
        == 0
    )
    report = json.loads((out / "report.json").read_text())
    assert report["official"]["overall"]["macro_F1"] == 1.0
    assert report["official"]["overall"]["consist_mean"] == 1.0


def test_fintoolbench_questions_import(shared_dir, tmp_path):
    out = tmp_path / "ftb.jsonl"
    summary = import_fintoolbench(shared_dir / "fintoolbench" / "questions_sample.jsonl", out)
    refs = load_references(out)
    assert refs.format == "fintoolbench" and len(refs.samples) == summary["references"] > 0
    original = load_references(shared_dir / "fintoolbench" / "questions_sample.jsonl")
    assert [r.id for r in refs.samples] == [r.id for r in original.samples]
