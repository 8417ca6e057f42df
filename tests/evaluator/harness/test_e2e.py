"""End to end: the oracle through a spawned finmcp-server + finmcp-proxy scores 1.0 and its trace is
the reference, with explicit group tags (via the CLI) and with groups inferred by the proxy."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from finmcp.evaluator.agents import OracleAgent
from finmcp.evaluator.agents.history import RecordedOutputs
from finmcp.evaluator.cli import main
from finmcp.evaluator.harness.runner import RunConfig, run_agent
from finmcp.evaluator.harness.scoring import score_run
from finmcp.evaluator.harness.setup import load_bench
from finmcp.evaluator.harness.spawn import SpawnConfig, Stack
from finmcp.evaluator.harness.state import RunState
from finmcp.evaluator.inputs.trace_db import load_predictions_db


@pytest.fixture(scope="module")
def bench30(tmp_path_factory: pytest.TempPathFactory):
    return load_bench("finmcp-sim", tmp_path_factory.mktemp("bench"), limit=30)


def _assert_trace_is_reference(bench, db: Path, run: str) -> None:
    preds = load_predictions_db(db, run).first_trial()
    assert set(preds) == {r.id for r in bench.refs}
    for ref in bench.refs:
        pred_turns = [[[(c.tool, c.arguments) for c in g] for g in groups] for groups in preds[ref.id].turns]
        ref_turns = [[[(c.tool, c.arguments) for c in g] for g in t.calls] for t in ref.turns]
        while ref_turns and not ref_turns[-1]:  # the DB knows turns only up to the last one with calls
            ref_turns.pop()
        assert pred_turns == ref_turns, ref.id


def _assert_perfect(report: dict) -> None:
    official = report["official"]["overall"]
    for key in ("macro_Precision", "macro_Recall", "macro_F1", "micro_Precision", "micro_Recall", "micro_F1"):
        assert official[key] == 1.0, key
    assert official["consist_mean"] == 1.0
    head = report["headline"]
    for key in ("paper.EMR", "extended.emr_lenient", "extended.exact_call_f1", "extended.arg_f1_micro"):
        assert head[key]["value"] == 1.0, key
    assert head["extended.redundancy_rate"]["value"] == 0.0
    assert head["extended.overcall_rate"]["value"] == 0.0
    assert report["coverage"]["scored"] == 30 and not report["coverage"]["dropped"]


def test_slice_covers_every_shape(bench30) -> None:
    types = {r.type for r in bench30.refs}
    assert types == {"single_tool", "multi_tool", "multi_turn"}
    assert any(len(g) > 1 for r in bench30.refs for t in r.turns for g in t.calls), "no parallel group"
    assert any(len(r.turns) > 2 for r in bench30.refs)


@pytest.mark.slow
def test_oracle_explicit_groups_via_cli(bench30, tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    out = tmp_path / "report"
    ids = [arg for r in bench30.refs for arg in ("--sample", r.id)]
    status = main(
        ["run", "--agent", "oracle", "--spawn", "--run", "orc", "--db", str(db), "--report-dir", str(out),
         "--bootstrap", "50", "--no-progress", "--recordings", str(bench30.recordings), *ids]
    )  # fmt: skip
    assert status == 0
    import json

    report = json.loads((out / "report.json").read_text("utf-8"))
    _assert_perfect(report)
    _assert_trace_is_reference(bench30, db, "orc")
    with sqlite3.connect(db) as con:
        sources = {r[0] for r in con.execute("SELECT DISTINCT group_source FROM calls WHERE run_id='orc'")}
        statuses = {r[0] for r in con.execute("SELECT DISTINCT status FROM calls WHERE run_id='orc'")}
        turns = {r[0] for r in con.execute("SELECT DISTINCT turn FROM calls WHERE run_id='orc'")}
    assert sources == {"explicit"}
    assert statuses == {"ok"}
    assert min(turns) == 0
    assert (out / "report.html").is_file()


def test_oracle_inferred_groups(bench30, tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    # latency makes the calls of one step overlap at the proxy; gap 0 keeps dependent steps apart
    spawn = SpawnConfig(
        db=db, recordings=bench30.recordings, miss="strict", latency="fixed:40", group_gap_ms=0
    )
    state = tmp_path / "state.jsonl"
    outputs = RecordedOutputs(str(bench30.recordings), bench30.inventory)
    with Stack(spawn) as stack:
        config = RunConfig(
            "inf", stack.proxy_base, state, db, concurrency=8, group_tags=False, progress=False
        )
        summary = asyncio.run(run_agent(bench30.refs, OracleAgent(), config, outputs))
    outputs.close()
    assert summary.done == 30 and not summary.errors
    with sqlite3.connect(db) as con:
        sources = {r[0] for r in con.execute("SELECT DISTINCT group_source FROM calls")}
    assert "explicit" not in sources and "overlap" in sources
    _assert_trace_is_reference(bench30, db, "inf")
    report = score_run(
        bench30.refs, db, "inf", RunState(state).records("inf"), bench30.inventory, bootstrap=0
    ).to_dict()
    _assert_perfect(report)


def test_trials_are_tagged_and_give_pass_hat_k(bench30, tmp_path: Path) -> None:
    refs = bench30.refs[:6]
    db, state = tmp_path / "runs.sqlite", tmp_path / "state.jsonl"
    with Stack(SpawnConfig(db=db, recordings=bench30.recordings)) as stack:
        config = RunConfig("k", stack.proxy_base, state, db, trials=2, progress=False)
        summary = asyncio.run(run_agent(refs, OracleAgent(), config))
    assert summary.done == 12
    with sqlite3.connect(db) as con:
        trials = {r[0] for r in con.execute("SELECT DISTINCT trial FROM calls WHERE run_id = 'k'")}
    assert trials == {0, 1}
    report = score_run(refs, db, "k", RunState(state).records("k"), bench30.inventory, bootstrap=0).to_dict()
    assert report["trials"]["trials"] == 2
    assert set(report["trials"]["official_by_trial"]) == {"0", "1"}
    assert all(v == 1.0 for v in report["trials"]["pass_hat_k"].values())
