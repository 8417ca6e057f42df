"""Copy a SQLite trace store into a PostgreSQL one as a proxy's shipper would leave it (tests only).

Every row keeps its values; ``origin`` names the source file's proxy and ``local_id`` is the row's id
in the file, so reading both stores must give the same rows (see ``recordings.postgres.reads``).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from finmcp.recordings.postgres.connection import connect
from finmcp.recordings.schema import CALLS_COLUMNS, MESSAGE_COLUMNS
from finmcp.recordings.trace_types import SESSION_FIELDS

SESSION_COLUMNS = ("session_key", *SESSION_FIELDS)


def copy_trace(sqlite_path: str | Path, url: str, origin: str = "proxy-a") -> dict[str, int]:
    """Insert every run, session, message and call of the SQLite file into the store at ``url``;
    returns the number of rows copied per table."""
    src = sqlite3.connect(f"file:{sqlite_path}?mode=ro", uri=True)
    counts: dict[str, int] = {}
    try:
        with connect(url) as conn, conn.transaction():
            runs = src.execute("SELECT run_id, created, meta FROM runs ORDER BY rowid").fetchall()
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO runs (run_id, created, meta) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                    runs,
                )
            counts["runs"] = len(runs)
            counts["sessions"] = _copy(conn, src, "sessions", SESSION_COLUMNS, origin, local_id=False)
            counts["messages"] = _copy(conn, src, "messages", MESSAGE_COLUMNS, origin, local_id=True)
            counts["calls"] = _copy(conn, src, "calls", CALLS_COLUMNS, origin, local_id=True)
    finally:
        src.close()
    return counts


def _copy(
    conn, src: sqlite3.Connection, table: str, columns: tuple[str, ...], origin: str, *, local_id: bool
) -> int:
    rows = src.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY rowid").fetchall()
    if local_id:  # the file's id becomes local_id; PostgreSQL numbers the row itself
        target = ("origin", "local_id", *columns[1:])
        values = [(origin, row[0], *row[1:]) for row in rows]
    else:
        target = ("origin", *columns)
        values = [(origin, *row) for row in rows]
    marks = ", ".join(["%s"] * len(target))
    with conn.cursor() as cur:
        cur.executemany(f"INSERT INTO {table} ({', '.join(target)}) VALUES ({marks})", values)
    return len(values)


def real_trace(folder: Path, samples: int = 8, trials: int = 2, run_id: str = "noisy") -> tuple[Path, list]:
    """A trace written by a real finmcp-server + finmcp-proxy: a noisy agent (drops, wrong tools,
    extra calls, split/merged/reordered groups) over ``samples`` finmcp-sim samples, ``trials`` each.

    Returns the SQLite trace file and the references run.
    """
    import asyncio

    from finmcp.evaluator.agents.noisy import NoiseRates, NoisyAgent
    from finmcp.evaluator.harness.runner import RunConfig, run_agent
    from finmcp.evaluator.harness.setup import load_bench
    from finmcp.evaluator.harness.spawn import SpawnConfig, Stack

    bench = load_bench("finmcp-sim", folder / "bench", limit=samples)
    db = folder / "runs.sqlite"
    agent = NoisyAgent(NoiseRates.parse("0.25"), seed=3)
    with Stack(SpawnConfig(db=db, recordings=bench.recordings)) as stack:
        config = RunConfig(
            run_id, stack.proxy_base, folder / "state.jsonl", db, trials=trials, progress=False
        )
        summary = asyncio.run(run_agent(bench.refs, agent, config))
    assert summary.done == samples * trials and not summary.errors, summary
    return db, bench.refs
