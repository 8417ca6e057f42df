"""Every printed score says how many samples were scored on their predictions and how many were missing:
``score``'s and ``run``'s headline line and JSON, report.md/html headers, ``compare`` and the leaderboard."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from finmcp.evaluator.benchmarks import load_benchmark
from finmcp.evaluator.cli import main
from finmcp.evaluator.harness.scoring import leaderboard
from finmcp.evaluator.reports.model import Report, SampleCounts

REFS = load_benchmark("finmcp-sim")
TWENTY = "scored 20 of 613 samples; 593 missing, counted as empty (finmcp-eval score --missing drop scores only the 20)"


def test_counts_add_up_under_both_policies() -> None:
    empty = SampleCounts.of(references=613, in_metric=611, missing=593, policy="empty")
    assert empty == SampleCounts(references=613, scored=18, missing=593, missing_as="empty", dropped=2)
    drop = SampleCounts.of(references=613, in_metric=18, missing=593, policy="drop")
    assert drop == SampleCounts(references=613, scored=18, missing=593, missing_as="dropped", dropped=2)
    assert empty.line() == (
        "scored 18 of 613 samples; 593 missing, counted as empty (finmcp-eval score --missing drop scores "
        "only the 18); 2 dropped (error or invalid samples: coverage.dropped)"
    )
    assert drop.line().startswith(
        "scored 18 of 613 samples; 593 missing, left out (--missing drop); 2 dropped"
    )
    full = SampleCounts.of(references=613, in_metric=613, missing=0, policy="empty")
    assert full.line() == "scored 613 of 613 samples; none missing"


def _rows(refs, run: str) -> list[dict]:
    return [
        {"run": run, "sample": ref.id, "turn": t, "group": g, "tool": call.tool, "arguments": call.arguments}
        for ref in refs
        for t, turn in enumerate(ref.turns)
        for g, group in enumerate(turn.calls)
        for call in group
    ]


@pytest.fixture
def twenty(trace_db) -> Path:
    """A trace DB whose run ``r`` made the gold calls of the first 20 finmcp-sim samples only."""
    return trace_db(_rows(REFS[:20], "r") + _rows(REFS[:40], "b"))


def test_score_says_scored_and_missing_on_every_output(tmp_path, twenty, capsys) -> None:
    out = tmp_path / "report"
    argv = ["score", "--bench", "finmcp-sim", "--db", str(twenty), "--run", "r", "--bootstrap", "0"]
    assert main([*argv, "--report-dir", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == TWENTY
    printed = json.loads(lines[2])
    assert printed["overall"]["N"] == 613 and printed["overall"]["macro_F1"] < 0.05
    assert printed["samples"] == {
        "references": 613,
        "scored": 20,
        "missing": 593,
        "missing_as": "empty",
        "dropped": 0,
    }
    report = json.loads((out / "report.json").read_text("utf-8"))
    assert report["coverage"]["scored"] == 613 and report["coverage"]["missing_predictions"] == 593  # kept
    assert f"- coverage: {TWENTY}\n" in (out / "report.md").read_text("utf-8")
    assert "Scored 20 of 613 samples; 593 missing, counted as empty" in (out / "report.html").read_text(
        "utf-8"
    )
    assert main(argv) == 0  # Markdown on stdout: the sentence in its header, and on stderr
    captured = capsys.readouterr()
    assert f"- coverage: {TWENTY}" in captured.out and f"finmcp-eval score: {TWENTY}" in captured.err
    assert main([*argv, "--missing", "drop", "--report-dir", str(out), "--format", "json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "scored 20 of 613 samples; 593 missing, left out (--missing drop)"
    assert json.loads(lines[2])["overall"]["macro_F1"] == 1.0  # the oracle's 20 alone


def test_compare_says_each_runs_counts(tmp_path, twenty, capsys) -> None:
    out = tmp_path / "cmp"
    argv = ["compare", "--bench", "finmcp-sim", "--db", str(twenty), "--run", "r", "--run", "b"]
    assert main([*argv, "--bootstrap", "0", "--report-dir", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"finmcp-eval compare: A (r): {TWENTY}" in err
    assert "finmcp-eval compare: B (b): scored 40 of 613 samples; 573 missing" in err
    result = json.loads((out / "compare.json").read_text("utf-8"))
    assert result["samples"]["a"]["scored"] == 20 and result["samples"]["b"]["missing"] == 573
    assert f"- A: {TWENTY}" in (out / "compare.md").read_text("utf-8")
    assert f"A: {TWENTY}" in (out / "compare.html").read_text("utf-8")


def test_leaderboard_has_scored_and_missing_columns(tmp_path, twenty, capsys) -> None:
    out = tmp_path / "report"
    argv = ["score", "--bench", "finmcp-sim", "--db", str(twenty), "--run", "r", "--bootstrap", "0"]
    assert main([*argv, "--report-dir", str(out), "--format", "json"]) == 0
    capsys.readouterr()
    report = Report.from_dict(json.loads((out / "report.json").read_text("utf-8")))
    table = leaderboard([("oracle-20", report)]).splitlines()
    assert table[0] == "| agent | scored | missing | TF1 | TR | TP | EMR |"
    assert (
        table[2] == "| oracle-20 | 20 of 613 | 593 (as empty) | 0.033 | 0.033 | 0.033 | 0.033 |"
    )  # bootstrap 0
