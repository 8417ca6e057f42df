"""Resume: kill a run halfway (SIGKILL), then ``--resume`` completes only the missing samples."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from finmcp.evaluator.cli import main
from finmcp.evaluator.harness.session import tagged_url, untagged_url
from finmcp.evaluator.harness.setup import load_bench, stratified_slice
from finmcp.evaluator.harness.spawn import SpawnConfig, Stack
from finmcp.evaluator.harness.state import RunState
from finmcp.evaluator.inputs.trace_db import load_predictions_db

N = 40


def _done_lines(path: Path) -> int:
    return len(RunState(path).finished("r")) if path.is_file() else 0


def _wait_until_settled(proxy_base: str, db: Path, seconds: float = 30.0) -> None:
    """Poll until the proxy has no call awaiting its answer and has written a row for every call it saw
    (the calls in flight when the client was killed)."""
    deadline = time.monotonic() + seconds
    while True:
        with urllib.request.urlopen(f"{proxy_base}/healthz", timeout=5) as response:
            health = json.load(response)
        with sqlite3.connect(db) as con:
            rows = con.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
        if health["pending"] == 0 and rows >= health["calls"]:
            return
        assert time.monotonic() < deadline, f"the proxy did not settle: {health}, {rows} rows"
        time.sleep(0.02)


@pytest.mark.slow  # a crash test: SIGKILL of a run halfway
def test_kill_then_resume_runs_only_missing_samples(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    bench = load_bench("finmcp-sim", tmp_path, limit=N)
    db = tmp_path / "runs.sqlite"
    state = db.with_name(db.name + ".harness.jsonl")
    ids = [arg for r in bench.refs for arg in ("--sample", r.id)]
    spawn = SpawnConfig(db=db, recordings=bench.recordings, latency="fixed:60")
    with Stack(spawn) as stack:
        args = ["run", "--agent", "oracle", "--proxy", f"{stack.proxy_base}/mcp", "--run", "r", "--db", str(db),
                "--recordings", str(bench.recordings), "--concurrency", "3", "--no-progress", *ids]  # fmt: skip
        child = subprocess.Popen(
            [sys.executable, "-m", "finmcp.evaluator.cli", *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        while _done_lines(state) < N // 3 and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.05)
        child.kill()
        child.wait(timeout=10)
        before = RunState(state).finished("r")
        assert N // 3 <= len(before) < N, "the run was not killed halfway"
        _wait_until_settled(stack.proxy_base, db)
        with sqlite3.connect(db) as con:
            last_id = con.execute("SELECT MAX(id) FROM calls").fetchone()[0]
            traced = {r[0] for r in con.execute("SELECT DISTINCT sample_id FROM calls WHERE run_id = 'r'")}
        partial = traced - {s for s, _ in before}
        assert partial, "no sample was caught in flight"

        assert main(args) == 2  # the same run id without --resume is refused
        assert "--resume" in capsys.readouterr().err

        assert main([*args, "--resume"]) == 0
        out = capsys.readouterr().out
        assert f"{N - len(before)} done, 0 failed, {len(before)} skipped" in out

    assert RunState(state).finished("r") == {(r.id, 0) for r in bench.refs}
    with sqlite3.connect(db) as con:
        new = {
            r[0]
            for r in con.execute(
                "SELECT DISTINCT sample_id FROM calls WHERE id > ? AND run_id = 'r'", (last_id,)
            )
        }
        moved = {r[0] for r in con.execute("SELECT DISTINCT sample_id FROM calls WHERE run_id = 'r~partial'")}
    assert new.isdisjoint({s for s, _ in before})  # finished samples were not run again
    assert moved == partial  # the interrupted samples' calls were set aside, not lost
    preds = load_predictions_db(db, "r").first_trial()
    for ref in bench.refs:
        want = [[[(c.tool, c.arguments) for c in g] for g in t.calls] for t in ref.turns]
        while want and not want[-1]:
            want.pop()
        got = [[[(c.tool, c.arguments) for c in g] for g in groups] for groups in preds[ref.id].turns]
        assert got == want, ref.id


def test_tagged_urls() -> None:
    assert (
        tagged_url("http://127.0.0.1:8766/mcp", "run a", "s/1", 2)
        == "http://127.0.0.1:8766/r/run%20a/s/s%2F1/t/2/mcp"
    )
    assert tagged_url("http://127.0.0.1:8766", "r", "s", 0, 3) == "http://127.0.0.1:8766/r/r/s/s/k/3/t/0/mcp"
    assert tagged_url("http://h:1/fintool760/mcp", "r", "s", 1) == "http://h:1/r/r/s/s/t/1/fintool760/mcp"
    assert untagged_url("http://h:1/mcp", "r") == "http://h:1/r/r/mcp"
    with pytest.raises(Exception, match="--proxy"):
        tagged_url("127.0.0.1:8766", "r", "s", 0)


def test_state_ignores_a_torn_line_and_later_records_win(tmp_path: Path) -> None:
    state = RunState(tmp_path / "s.jsonl")
    state.append({"run": "r", "sample": "a", "trial": 0, "status": "error", "error": "x"})
    state.append({"run": "r", "sample": "a", "trial": 0, "status": "done"})
    state.append({"run": "r", "sample": "b", "trial": 0, "status": "error", "error": "boom"})
    state.close()
    with (tmp_path / "s.jsonl").open("a") as fh:
        fh.write('{"run": "r", "sample": "c", "tri')
    assert state.finished("r") == {("a", 0)}
    assert state.errors("r") == {("b", 0): "boom"}


def test_stratified_slice_keeps_the_type_mix() -> None:
    from finmcp.evaluator.benchmarks import load_benchmark

    refs = load_benchmark("finmcp-sim")
    for n in (30, 100, 200):
        part = stratified_slice(refs, n)
        assert len({r.id for r in part}) == n
        assert part == [r for r in refs if r in part]  # file order
        for kind in ("single_tool", "multi_tool", "multi_turn"):
            share = n * sum(r.type == kind for r in refs) / len(refs)
            assert abs(sum(r.type == kind for r in part) - share) < 1, (n, kind)
