"""Scoring at scale: ``finmcp-eval score`` of a 1,000,000-call run, from PostgreSQL and from SQLite.

The run is synthetic but valid: the finmcp-sim references' own calls (tool, arguments, a recorded-size
result), repeated as trials until the run holds 10^6 calls, with a seeded share of calls dropped or
sent to a wrong tool so the scores are not trivial. The rows go into a throwaway PostgreSQL (bulk
``COPY``, as a shipper would leave them: ``origin``, ``local_id``) and into a SQLite trace file (the
baseline), then the installed ``finmcp-eval score`` scores each (streaming, one sample at a time) and
the bench reports the wall time, calls/s and the scorer's peak RSS. Goal: under 60 s from PostgreSQL.

Set ``FINMCP_BENCH_PG_URL`` to an empty database to use a server of your own (its finmcp tables are
filled, not dropped); otherwise a throwaway cluster is started (``tests.support.postgres``).
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from finmcp.evaluator.benchmarks import open_references
from finmcp.recordings.postgres.connection import connect
from finmcp.recordings.trace_store import SqliteTraceStore

CALLS = 1_000_000
RUN = "bench"
GOAL_S = 60.0
RESULT = json.dumps(
    {
        "content": [{"type": "text", "text": json.dumps({"rows": [{"v": i} for i in range(12)]})}],
        "isError": False,
    }
)
COLUMNS = ("run_id", "sample_id", "turn", "seq", "tool", "arguments", "result", "status", "call_group",
           "group_source", "trial", "session_key", "wall_time", "latency_ms")  # fmt: skip


def synthetic_rows(calls: int = CALLS, seed: int = 11) -> Iterator[tuple[Any, ...]]:
    """``calls`` call rows (COLUMNS order) of run RUN: reference calls, trial after trial, ~8% perturbed."""
    refs = open_references("finmcp-sim").samples
    tools = sorted({c.tool for r in refs for t in r.turns for g in t.calls for c in g})
    rng = random.Random(seed)
    made, trial, seq = 0, 0, 0
    while made < calls:
        for ref in refs:
            for turn_index, turn in enumerate(ref.turns):
                for group_index, group in enumerate(turn.calls):
                    for call in group:
                        if made >= calls:
                            return
                        draw = rng.random()
                        if draw < 0.04:
                            continue  # dropped
                        tool = rng.choice(tools) if draw < 0.08 else call.tool
                        seq += 1
                        made += 1
                        yield (
                            RUN, ref.id, turn_index, seq, tool, json.dumps(call.arguments, ensure_ascii=False),
                            RESULT, "ok", group_index, "explicit", trial, f"s-{trial}", "2026-01-01T00:00:00Z", 1.5,
                        )  # fmt: skip
        trial += 1


def load_sqlite(path: Path) -> float:
    """Fill a SQLite trace file with the rows; returns seconds."""
    started = time.perf_counter()
    SqliteTraceStore.open(path).close()  # the proxy's schema
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=OFF")
    con.execute("PRAGMA synchronous=OFF")
    con.execute("INSERT INTO runs (run_id, created) VALUES (?, ?)", (RUN, "2026-01-01T00:00:00Z"))
    marks = ",".join("?" * len(COLUMNS))
    con.executemany(f"INSERT INTO calls ({', '.join(COLUMNS)}) VALUES ({marks})", synthetic_rows())
    con.commit()
    con.close()
    return time.perf_counter() - started


def load_postgres(url: str) -> float:
    """COPY the rows into the PostgreSQL store at ``url`` (origin 'bench', local_id 1..n); returns seconds."""
    started = time.perf_counter()
    with connect(url) as conn:
        conn.execute(
            "INSERT INTO runs (run_id, created) VALUES (%s, %s) ON CONFLICT DO NOTHING", (RUN, "2026")
        )
        with (
            conn.cursor() as cur,
            cur.copy(f"COPY calls (origin, local_id, {', '.join(COLUMNS)}) FROM STDIN") as copy,
        ):
            for local_id, row in enumerate(synthetic_rows(), 1):
                copy.write_row(("bench", local_id, *row))
        conn.execute("ANALYZE calls")
    return time.perf_counter() - started


def score(db: str, out: Path) -> dict[str, Any]:
    """Run the installed ``finmcp-eval score`` on run RUN of ``db``: seconds, peak RSS (MiB), report."""
    script = Path(sys.executable).parent / "finmcp-eval"
    argv = [str(script), "score", "--bench", "finmcp-sim", "--db", db, "--run", RUN, "--report-dir", str(out),
            "--format", "json", "--wait-flush", "0"]  # fmt: skip
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    if status != 0:
        raise RuntimeError(f"finmcp-eval score --db {db} failed: {stderr}")
    report = json.loads((out / "report.json").read_text("utf-8"))
    return {"seconds": seconds, "peak_rss_mib": usage.ru_maxrss / 1024, "report": report}


def _postgres_url(stack: list[Any]) -> str:
    url = os.environ.get("FINMCP_BENCH_PG_URL")
    if url:
        return url
    from tests.support.postgres import PostgresCluster, postgres_bin_dir

    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        raise RuntimeError("PostgreSQL is not installed: set FINMCP_BENCH_PG_URL or FINMCP_PG_BIN")
    cluster = PostgresCluster(bin_dir)
    stack.append(cluster)
    cluster.start()
    return cluster.create_database("bench_score")


def run() -> list[dict[str, Any]]:
    """Load 10^6 calls into both engines and time ``score`` on each."""
    clusters: list[Any] = []
    try:
        url = _postgres_url(clusters)
        with tempfile.TemporaryDirectory(prefix="finmcp-bench-score-") as tmp:
            folder = Path(tmp)
            lite_load = load_sqlite(folder / "runs.sqlite")
            pg_load = load_postgres(url)
            lite = score(str(folder / "runs.sqlite"), folder / "lite")
            pg = score(url, folder / "pg")
    finally:
        for cluster in clusters:
            cluster.destroy()
    same = lite["report"]["official"] == pg["report"]["official"]
    trials = pg["report"].get("trials", {}).get("trials")
    rows = []
    for engine, result, load in (("sqlite", lite, lite_load), ("postgresql", pg, pg_load)):
        rows.append(
            {
                "bench": "pg_score",
                "engine": engine,
                "calls": CALLS,
                "trials": trials,
                "load_s": round(load, 1),
                "score_s": round(result["seconds"], 1),
                "calls_per_s": round(CALLS / result["seconds"]),
                "peak_rss_mib": round(result["peak_rss_mib"], 1),
                "goal_s": GOAL_S,
                "within_goal": result["seconds"] < GOAL_S,
            }
        )
    rows.append(
        {
            "bench": "pg_score",
            "ratio": "postgresql/sqlite",
            "score_time": round(pg["seconds"] / lite["seconds"], 2),
            "peak_rss": round(pg["peak_rss_mib"] / lite["peak_rss_mib"], 2),
            "same_official_numbers": same,
            "macro_F1": pg["report"]["official"]["overall"]["macro_F1"],
        }
    )
    return rows


if __name__ == "__main__":
    for line in run():
        print(json.dumps(line))
