"""A metric computed over nothing renders as n/a with its reason in Markdown and HTML, never as a number."""

from __future__ import annotations

import json
import re

import pytest

from finmcp.evaluator.inputs.fintoolbench_jsonl import result_prediction
from finmcp.evaluator.inputs.model import PredictionSet
from finmcp.evaluator.inputs.references import load_references
from finmcp.evaluator.metrics.fintoolbench import tool_metadata_from_inventory
from finmcp.evaluator.metrics.options import EvalOptions
from finmcp.evaluator.reports.html import render_html
from finmcp.evaluator.reports.markdown import fintoolbench_value, render_markdown
from finmcp.evaluator.reports.pipeline import evaluate
from finmcp.tool_specs.inventory import load_inventory


def test_value_cell_names_the_reason():
    metrics = {
        "cap": {"tesr": 1.0, "cer": None},
        "com": {"tmr": None, "imr": 0.25, "dmr": None, "na_reason": {"tmr": "no tool metadata"}},
    }
    assert fintoolbench_value(metrics, "tmr") == "n/a (no tool metadata)"
    assert fintoolbench_value(metrics, "imr") == "0.2500"
    assert fintoolbench_value(metrics, "tesr") == "1.0000"
    assert fintoolbench_value(metrics, "cer") == "n/a"  # undefined for another reason: no reason to give
    assert fintoolbench_value(metrics, "dmr") == "n/a"


def _report(shared_dir, tool_meta):
    refs = load_references(shared_dir / "fintoolbench" / "questions_sample.jsonl")
    by_sample = {}
    for r in refs.samples:
        calls = [
            {"step": 1, "tool_name": c.tool, "parameters": {}, "output": "rows"} for c in r.turns[0].calls[0]
        ]
        by_sample[r.id] = [result_prediction(r.id, {"id": r.id, "tool_calls": calls, "error": None}, [])]
    preds = PredictionSet(by_sample, "fintoolbench_result", "memory")
    return evaluate(refs, preds, EvalOptions(bootstrap=20, tool_meta=tool_meta))


def _row(text: str, variant: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"| {variant} |"))


@pytest.mark.shared
def test_reports_show_na_without_tool_metadata(shared_dir):
    report = _report(shared_dir, {})
    md = render_markdown(report)
    assert "tools with metadata: 0." in md
    for variant in ("fintoolbench", "fintoolbench_corrected"):
        cells = [c.strip() for c in _row(md, variant).strip("|").split("|")]
        assert cells[6:] == ["n/a (no tool metadata)"] * 3, cells  # TMR, IMR, DMR
        assert cells[2].startswith("1.0000")  # TESR is still a number
    assert "## Warnings" in md and "TMR/IMR/DMR n/a: no tool metadata" in md
    html = render_html(report)
    assert html.count("n/a (no tool metadata)") == 6
    text = json.loads(report.to_json())  # what report.json holds
    com = text["fintoolbench"]["fintoolbench"]["metrics"]["com"]
    assert com["tmr"] is None and com["na_reason"] == {k: "no tool metadata" for k in ("tmr", "imr", "dmr")}


@pytest.mark.shared
def test_reports_show_numbers_with_tool_metadata(shared_dir):
    report = _report(shared_dir, tool_metadata_from_inventory(load_inventory("fintool760")))
    md = render_markdown(report)
    assert "tools with metadata: 760." in md and "n/a (" not in md
    cells = [c.strip() for c in _row(md, "fintoolbench").strip("|").split("|")]
    assert all(re.match(r"\d\.\d{4}", c) for c in cells[6:]), cells
