"""Traced samples that match no reference are counted and named (stderr and every report format), and
a run none of whose samples matches a reference is refused (exit 2) with a message on how samples are
tagged; once with hand-made trace rows, once with traces the real proxy wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from finmcp.evaluator.benchmarks import load_records
from finmcp.evaluator.cli import main
from finmcp.evaluator.harness.setup import load_bench

REFS = [
    {"id": f"s{i}", "type": "single_tool", "scenario": "A", "sub_scenario": "B",
     "turns": [{"user": "q", "calls": [[{"tool": "SearchFunds", "arguments": {"keyword": str(i)}}]], "assistant": "a"}]}
    for i in range(5)
]  # fmt: skip


def _rows(run: str, ids: list[str]) -> list[dict]:
    return [{"run": run, "sample": sid, "tool": "SearchFunds", "arguments": {"keyword": "x"}} for sid in ids]


@pytest.fixture
def refs_file(tmp_path: Path) -> Path:
    path = tmp_path / "refs.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in REFS), encoding="utf-8")
    return path


def test_no_match_fails_and_says_how_samples_are_tagged(refs_file, trace_db, capsys):
    db = trace_db(_rows("r", [f"x-s{i}" for i in range(5)]))
    assert main(["score", "--bench", str(refs_file), "--db", str(db), "--run", "r", "--bootstrap", "0"]) == 2
    err = capsys.readouterr().err
    assert "none of the 5 samples of run 'r'" in err and "'x-s0', 'x-s1'" in err
    assert "reference ids look like: 's0', 's1', 's2'" in err
    assert "/r/{run}/s/{sample}/t/{turn}/mcp" in err and "X-Finmcp-Sample" in err and "--turn-base" in err


def test_partial_match_warns_and_reports_the_unmatched(refs_file, trace_db, tmp_path, capsys):
    ids = ["s0", "s1", *(f"x-{i:02d}" for i in range(12))]
    db = trace_db(_rows("r", ids))
    out = tmp_path / "o"
    argv = [
        "score",
        "--bench",
        str(refs_file),
        "--db",
        str(db),
        "--run",
        "r",
        "--bootstrap",
        "0",
        "--report-dir",
        str(out),
    ]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "warning: 12 traced samples of run 'r' of trace DB" in err
    assert "'x-00', 'x-01'" in err and "'x-09', ... (2 more)" in err and "'x-10'" not in err
    report = json.loads((out / "report.json").read_text("utf-8"))
    cov = report["coverage"]
    assert (
        cov["predictions_not_in_references_count"] == 12 and cov["predictions_not_in_references"][0] == "x-00"
    )
    assert cov["scored"] == 5 and cov["missing_predictions"] == 3
    assert any(w.startswith("12 traced samples") for w in report["warnings"])
    md = (out / "report.md").read_text("utf-8")
    assert "predicted samples matching no reference: 12" in md and "## Warnings" in md and "'x-00'" in md
    html = (out / "report.html").read_text("utf-8")
    assert "12 predicted samples match no reference" in html and "&#x27;x-00&#x27;" in html


def test_compare_refuses_a_run_that_matches_nothing(refs_file, trace_db, capsys):
    db = trace_db(_rows("a", ["s0", "s1"]) + _rows("b", ["y-0"]))
    argv = [
        "compare",
        "--bench",
        str(refs_file),
        "--db",
        str(db),
        "--run",
        "a",
        "--run",
        "b",
        "--bootstrap",
        "0",
    ]
    assert main(argv) == 2
    assert "none of the 1 samples of run 'b'" in capsys.readouterr().err


@pytest.mark.slow  # spawns finmcp-server and finmcp-proxy
def test_real_traces_with_prefixed_sample_tags(tmp_path: Path, capsys):
    """The harness runs references whose ids carry a prefix (all of them, then half), so the proxy tags
    the calls so; scoring them against finmcp-sim fails, then warns."""
    bench = load_bench("finmcp-sim", tmp_path, limit=1)  # installs the recordings
    records = load_records("finmcp-sim")[:8]
    db = tmp_path / "runs.sqlite"
    for run, prefixed in (("pref", range(8)), ("half", range(4))):
        path = tmp_path / f"{run}.jsonl"
        lines = [dict(r, id=f"p-{r['id']}" if i in prefixed else r["id"]) for i, r in enumerate(records)]
        path.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines), encoding="utf-8")
        argv = ["run", "--bench", str(path), "--agent", "oracle", "--spawn", "--run", run, "--db", str(db),
                "--recordings", str(bench.recordings), "--no-progress"]  # fmt: skip
        assert main(argv) == 0
    capsys.readouterr()
    score = ["score", "--bench", "finmcp-sim", "--db", str(db), "--bootstrap", "0"]
    assert main([*score, "--run", "pref"]) == 2
    err = capsys.readouterr().err
    assert f"none of the 8 samples of run 'pref' of trace DB {db}" in err
    assert f"'p-{records[0]['id']}'" in err and "/r/{run}/s/{sample}/t/{turn}/mcp" in err
    out = tmp_path / "half-report"
    assert main([*score, "--run", "half", "--report-dir", str(out)]) == 0
    err = capsys.readouterr().err
    assert "warning: 4 traced samples of run 'half'" in err and f"'p-{records[3]['id']}'" in err
    report = json.loads((out / "report.json").read_text("utf-8"))
    assert report["coverage"]["predictions_not_in_references_count"] == 4
    assert report["coverage"]["scored"] == 613 and report["coverage"]["missing_predictions"] == 609
    assert report["official"]["overall"]["N"] == 613
