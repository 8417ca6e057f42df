"""Sharded runs on many machines: shard processes write through their proxies' outboxes into one
PostgreSQL store, and the run scored from PostgreSQL equals the same run unsharded in SQLite."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from finmcp.evaluator.benchmarks import load_benchmark
from finmcp.recordings.postgres.connection import connect
from tests.evaluator.harness.shard_runs import run_command, score_report


@pytest.mark.slow
def test_two_shards_into_postgres_score_like_one_run_in_sqlite(tmp_path: Path, postgres_url: str) -> None:
    ids = [r.id for r in load_benchmark("finmcp-sim")[::40]]  # 16 samples of every type
    lite = tmp_path / "runs.sqlite"
    whole = subprocess.run(run_command(lite, "sweep", ids), capture_output=True, text=True, timeout=300)
    assert whole.returncode == 0, whole.stderr
    shards = [
        subprocess.Popen(
            run_command(
                postgres_url, "sweep", ids, "--shard", f"{i}/2", "--workdir", str(tmp_path / f"m{i}")
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)  # as if on two machines: each its own work folder, outbox and proxy
    ]
    for process in shards:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
        assert "[shard " in out
    outboxes = sorted(p.name for p in tmp_path.glob("m*/*.outbox.sqlite"))
    assert outboxes == ["sweep.shard-0-of-2.outbox.sqlite", "sweep.shard-1-of-2.outbox.sqlite"]
    with connect(postgres_url) as conn:  # every row arrived, from two proxies, none pending
        origins = conn.execute("SELECT count(*), sum(pending_rows) FROM origins").fetchone()
        assert origins == (2, 0)
        pending = conn.execute("SELECT count(*) FROM calls WHERE status = 'pending'").fetchone()[0]
        assert pending == 0

    a = score_report(lite, "sweep", tmp_path / "a")
    b = score_report(postgres_url, "sweep", tmp_path / "b")
    assert a["coverage"]["scored"] >= 13 and 0 < a["official"]["overall"]["macro_F1"] < 1
    assert a == b
