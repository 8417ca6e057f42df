"""Grounded answers of a run: run-state answers against the trace's calls, the report block, the
leaderboard columns, and ``finmcp-eval demo`` end to end (real server and proxy on loopback)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from finmcp.evaluator.cli import main
from finmcp.evaluator.grounding.metrics import summarize
from finmcp.evaluator.grounding.run import call_outputs, run_checks
from finmcp.evaluator.inputs.model import Call, Prediction, PredictionSet
from finmcp.evaluator.reports.grounding import grounding_html, grounding_markdown, leaderboard_cells
from finmcp.evaluator.reports.html import bar_chart

OUT = json.dumps({"fundCode": "000957", "nav": 1.2345, "navDate": "2025-09-30"})


def _preds() -> PredictionSet:
    turns = [[[Call("GetNav", {"code": "000957"}, output=OUT)]], []]
    return PredictionSet({"s1": [Prediction("s1", turns)]}, "trace_db", "mem", "r")


def test_answers_of_each_turn_see_that_turn_and_earlier() -> None:
    preds = _preds()
    assert call_outputs(preds.by_sample["s1"][0], 0) == [("t0.g0.c0:GetNav", OUT)]
    records = [{"sample": "s1", "trial": 0, "answers": ["000957净值1.2345", "", "净值1.30，截至2025-10-09"]}]
    checks = run_checks(preds, records)
    assert [w["turn"] for w, _ in checks] == [0, 2]  # the empty answer is no answer
    assert [c.verdict for c in checks[0][1].claims] == ["supported", "supported"]
    assert [c.verdict for c in checks[1][1].claims] == ["unsupported", "unsupported"]
    block = summarize(checks, bootstrap=200, seed=0)
    assert (block["answers"], block["claims"], block["supported"], block["unsupported"]) == (2, 4, 2, 2)
    assert block["claim_precision"]["value"] == 0.5
    assert block["invented_number_rate"]["value"] == 0.5 and block["stale_data_rate"]["value"] == 0.0
    assert block["per_answer"][0]["turn"] == 2  # answers with flagged claims first
    md = "\n".join(grounding_markdown(block))
    assert "| `s1` | 2 | 1\\.30 | unsupported | in no tool output |" in md  # md_text escapes the point
    html = grounding_html(block, bar_chart)
    assert "t0.g0.c0:GetNav $.nav" in html and "<svg" in html
    assert leaderboard_cells(block)[0].startswith("0.5000 [") and leaderboard_cells(None) == ["—"] * 3


def test_unreadable_answers_count_as_not_checkable() -> None:
    checks = run_checks(_preds(), [{"sample": "s1", "answers": ["Ответ: всё хорошо, цена выросла"]}])
    block = summarize(checks, bootstrap=0)
    assert (block["unreadable_answers"], block["not_checkable"], block["supported"]) == (1, 1, 0)
    assert block["claim_precision"]["value"] is None


@pytest.mark.slow
def test_demo_has_grounded_columns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["demo", "--limit", "24", "--out-dir", str(tmp_path), "--bootstrap", "100", "--no-progress"])
        == 0
    )
    table = (tmp_path / "leaderboard.md").read_text("utf-8").splitlines()
    assert (
        table[0].endswith("| CP | INV | STALE |") and "| EMR |" in table[0]
    )  # robustness columns may sit between
    oracle = next(line for line in table if line.startswith("| oracle |"))
    assert oracle.endswith("| 1.0000 [1.00, 1.00] | 0.0000 [0.00, 0.00] | 0.0000 [0.00, 0.00] |"), oracle
    report = json.loads((tmp_path / "oracle" / "report.json").read_text("utf-8"))
    block = report["grounding"]
    assert block["answers"] > 24 and block["unsupported"] == block["stale"] == 0
    assert all(c["evidence"] for a in block["per_answer"] for c in a["claims"])
    heavy = json.loads((tmp_path / "noisy-heavy" / "report.json").read_text("utf-8"))["grounding"]
    assert heavy["unsupported"] > 0  # gold replies naming funds of calls the noisy agent dropped
    assert "Grounded answers" in (tmp_path / "noisy-heavy" / "report.md").read_text("utf-8")
    assert "<th>CP</th>" in (tmp_path / "leaderboard.html").read_text("utf-8")
