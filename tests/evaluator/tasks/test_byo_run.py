"""Bring your own agent, end to end through a spawned finmcp-server + finmcp-proxy: a real program per
task (``--agent cmd:``, tests/support/byo_agent.py, the mcp SDK client at the task's URL) and a Python
callable (``--agent python:``). The trace has the agent's calls and the answers table its answers; the
report scores both. A program that crashes, hangs, prints nothing or megabytes (a callable that raises,
returns nothing or outlasts the timeout) fails its sample with the reason in the run state, the answers
table and the report; the run goes on, and ``--resume`` completes it without losing a logged call."""

from __future__ import annotations

import json
import shlex
import sqlite3
import sys
from pathlib import Path

import pytest

from finmcp.evaluator.cli import main
from finmcp.evaluator.harness.state import RunState
from finmcp.recordings.answers import answers_of

pytestmark = pytest.mark.slow  # spawns finmcp-server and finmcp-proxy and agent processes

AGENT = Path(__file__).resolve().parents[2] / "support" / "byo_agent.py"
GOOD = ["sim-single-0001", "sim-multi-0001", "sim-turn-0001"]
BAD = {
    "sim-single-0002": ("crash", "exited with status 3; stderr:\nTraceback (most recent call last):"),
    "sim-single-0003": ("hang", "timed out after 25 s; process group killed"),
    "sim-multi-0002": ("silent", "printed no answer on stdout; stderr empty"),
    "sim-multi-0003": ("flood", "printed more than 1048576 bytes on stdout (cut there)"),
}


def _calls(db: Path, run: str) -> list[tuple]:
    with sqlite3.connect(db) as con:
        return con.execute(
            "SELECT id, sample_id, turn, tool, status FROM calls WHERE run_id = ? ORDER BY id", (run,)
        ).fetchall()


def _report(out: Path) -> dict:
    return json.loads((out / "report.json").read_text("utf-8"))


def test_a_program_per_task_is_scored_and_its_failures_are_said(tmp_path: Path) -> None:
    db, out = tmp_path / "runs.sqlite", tmp_path / "report"
    fails = [arg for sample, (mode, _) in BAD.items() for arg in ("--fail", f"{sample}={mode}")]
    command = shlex.join([sys.executable, str(AGENT), *fails])
    samples = [arg for sample in [*GOOD, *BAD] for arg in ("--sample", sample)]
    base = ["run", "--spawn", "--run", "byo", "--db", str(db), "--bootstrap", "20", "--no-progress", *samples]
    status = main([*base, "--agent", f"cmd:{command}", "--task-timeout", "25", "--report-dir", str(out)])
    assert status == 0
    state = {r["sample"]: r for r in RunState(f"{db}.harness.jsonl").records("byo")}
    assert {s for s, r in state.items() if r["status"] == "done"} == set(GOOD)
    for sample, (_, reason) in BAD.items():
        assert state[sample]["status"] == "error" and reason in state[sample]["error"], state[sample]["error"]
    stored = {(a.sample_id, a.turn): a for a in answers_of(db, "byo")}
    assert stored[("sim-turn-0001", 3)].answer and len([k for k in stored if k[0] == "sim-turn-0001"]) == 4
    assert stored[("sim-single-0002", 0)].answer is None and "status 3" in str(
        stored[("sim-single-0002", 0)].error
    )
    report = _report(out)
    assert report["official"]["overall"]["macro_F1"] == 1.0 and report["official"]["overall"]["N"] == 3
    assert report["coverage"]["scored"] == 3
    dropped = {d["id"]: d["reason"] for d in report["coverage"]["dropped"]}
    for sample, (_, reason) in BAD.items():  # the report says why, in its first 120 characters
        assert dropped[sample].startswith("error sample: ExternalAgentError: " + reason[:60]), dropped[sample]
    logged = _calls(db, "byo")
    assert {row[1] for row in logged} == set(GOOD) and {row[4] for row in logged} == {"ok"}

    # --resume: the failed samples again, now answering; every call logged before is still there
    again = main([*base, "--agent", f"cmd:{shlex.join([sys.executable, str(AGENT)])}", "--resume"])
    assert again == 0
    after = _calls(db, "byo")
    assert set(logged) <= set(after) and {row[1] for row in after} == {*GOOD, *BAD}
    assert main(["score", "--db", str(db), "--run", "byo", "--bench", "finmcp-sim", "--report-dir",
                 str(tmp_path / "again"), "--bootstrap", "0", *samples_as_missing_drop()]) == 0  # fmt: skip
    assert _report(tmp_path / "again")["official"]["overall"]["macro_F1"] == 1.0


def samples_as_missing_drop() -> list[str]:
    """Score only the run's samples (the others of finmcp-sim are not predictions of this run)."""
    return ["--missing", "drop"]


def test_a_python_callable_is_the_agent_and_its_failures_are_said(tmp_path: Path) -> None:
    db, out = tmp_path / "runs.sqlite", tmp_path / "report"
    good = ["sim-single-0001", "sim-turn-0001"]
    bad = {
        "sim-single-0002": "ValueError: the agent broke on purpose",
        "sim-single-0003": "returned NoneType, not an answer",
        "sim-single-0004": "timed out after 4 s",
    }
    samples = [arg for sample in [*good, *bad] for arg in ("--sample", sample)]
    status = main(
        ["run", "--agent", "python:tests.support.byo_agent:picky", "--task-timeout", "4", "--spawn",
         "--run", "py", "--db", str(db), "--report-dir", str(out), "--bootstrap", "0", "--no-progress", *samples]
    )  # fmt: skip
    assert status == 0
    state = {r["sample"]: r for r in RunState(f"{db}.harness.jsonl").records("py")}
    assert {s for s, r in state.items() if r["status"] == "done"} == set(good)
    for sample, reason in bad.items():
        assert reason in state[sample]["error"], state[sample]["error"]
    assert len(state["sim-turn-0001"]["answers"]) == 4
    report = _report(out)
    assert report["official"]["overall"]["macro_F1"] == 1.0 and report["coverage"]["scored"] == 2
    assert {a.sample_id for a in answers_of(db, "py") if a.error} == set(bad)
