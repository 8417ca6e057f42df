"""Shipping to PostgreSQL (``finmcp-proxy --ship-to``): what it costs the proxy and how fast rows land.

1. **Commit path** (in process): the proxy's critical write — one transaction holding a finished
   call row, committed before its response is forwarded — on a plain trace file (the baseline), on a
   file that is an outbox (its triggers add one entry per row) and on an outbox that a running
   :class:`proxy.shipper.Shipper` drains to PostgreSQL at the same time. Every 8 calls a deferred
   batch of 16 message rows is written too, as the proxy's linger flush does. Rows are interleaved,
   the best of ``ROUNDS`` kept; ``slowdown`` is the variant's median commit over the baseline's.
2. **Ingest** (real processes): one ``finmcp-server`` and 4 proxies, 8 raw stateless-era HTTP clients per
   proxy, ``CALLS`` calls each: aggregate calls/s with every proxy shipping into one PostgreSQL,
   against the same load with SQLite only; then how long after the last answer every row is in
   PostgreSQL (``drain_s``) and the shipping lag (entry queued → batch committed) p50/p99 that the
   proxies' ``/healthz`` report.

PostgreSQL: ``FINMCP_BENCH_PG_URL`` (a database of its own), else a throwaway cluster like the tests'
(``tests/support/postgres.py``); without PostgreSQL the rows say so and nothing else is measured.
"""

from __future__ import annotations

import importlib.util
import json
import os
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import httpx2

from bench.calls import CODES, TOOL, recorded_result
from finmcp.proxy.shipper import Shipper
from finmcp.proxy.testing import ProxyProcess
from finmcp.recordings import RecordingStore, SqliteTraceStore
from finmcp.recordings.outbox import install_outbox
from finmcp.recordings.plumbing.protocol import LATEST_STATELESS_VERSION
from finmcp.recordings.postgres.connection import connect
from finmcp.recordings.trace_rows import prepare_call, prepare_message, prepare_outcome
from finmcp.server.testing import ServerProcess

ROUNDS = 3
COMMITS = 1500
PROXIES, CLIENTS, CALLS = 4, 8, 100
RESULT = recorded_result("000001")


# ------------------------------------------------------------------------- commit path


def _commit_path(path: Path, commits: int) -> list[float]:
    """Seconds per critical commit (a finished call row), with the linger flush's message rows between."""
    outcome = prepare_outcome(result=RESULT, t_resp_ns=2_000_000)
    timings: list[float] = []
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "result": RESULT})
    with SqliteTraceStore.open(path) as store:
        store.checkpoint_in_background()
        for i in range(commits):
            row = prepare_call(
                tool=TOOL,
                arguments={"fundNameOrCode": CODES[i % len(CODES)]},
                run_id="bench",
                sample_id=f"s{i // 50}",
                turn=0,
                session_key="k",
                jsonrpc_id=i,
                t_req_ns=1_000_000,
            ).finished(outcome)
            started = time.perf_counter()
            with store.transaction():
                store.write_call(row)
            timings.append(time.perf_counter() - started)
            if i % 8 == 7:
                with store.transaction():
                    for _ in range(16):
                        store.write_message(
                            prepare_message(direction="s2c", kind="response", body=body, session_key="k")
                        )
    return timings


def _commit_rows(pg_url: str | None, folder: Path) -> list[dict[str, Any]]:
    variants = ["plain", "outbox"] + (["outbox+shipper"] if pg_url else [])
    best: dict[str, list[float]] = {}
    for round_ in range(ROUNDS):
        for variant in variants:
            path = folder / f"commit-{variant}-{round_}.sqlite"
            shipper = None
            if variant != "plain":
                with SqliteTraceStore.open(path) as store:
                    install_outbox(store.db.conn)
            if variant == "outbox+shipper" and pg_url:
                shipper = Shipper(str(path), pg_url, label="bench", interval=0.05)
                shipper.start()
            try:
                timings = _commit_path(path, COMMITS)
            finally:
                if shipper is not None:
                    shipper.stop(10.0)
            if variant not in best or statistics.median(timings) < statistics.median(best[variant]):
                best[variant] = timings
    base = statistics.median(best["plain"])
    rows = []
    for variant, timings in best.items():
        ordered = sorted(timings)
        median = statistics.median(ordered)
        rows.append(
            {
                "bench": "pg_ship_commit_path",
                "variant": variant,
                "commits": len(ordered),
                "p50_us": round(median * 1e6, 1),
                "p99_us": round(ordered[int(0.99 * (len(ordered) - 1))] * 1e6, 1),
                "slowdown": round(median / base, 3),
            }
        )
    return rows


# ------------------------------------------------------------------------- ingest


async def _client(http: httpx2.AsyncClient, url: str, calls: int, offset: int) -> None:
    for j in range(calls):
        code = CODES[(offset + j) % len(CODES)]
        message = {
            "jsonrpc": "2.0",
            "id": j + 1,
            "method": "tools/call",
            "params": {
                "name": TOOL,
                "arguments": {"fundNameOrCode": code},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": LATEST_STATELESS_VERSION,
                    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        }
        response = await http.post(
            url,
            content=json.dumps(message),
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": LATEST_STATELESS_VERSION,
                "Mcp-Method": "tools/call",
                "Mcp-Name": TOOL,
            },
        )
        if response.status_code != 200 or code.encode() not in response.content:
            raise RuntimeError(f"benchmark call failed: {response.status_code} {response.content[:200]!r}")


def _load(bases: list[str], run: str) -> float:
    """Seconds for PROXIES x CLIENTS clients making CALLS calls each (connections opened untimed)."""

    async def main() -> float:
        limits = httpx2.Limits(max_connections=CLIENTS * len(bases))
        async with httpx2.AsyncClient(timeout=60, limits=limits) as http:
            urls = [
                f"{base}/r/{run}/s/p{i}c{j}/t/0/mcp" for i, base in enumerate(bases) for j in range(CLIENTS)
            ]
            async with anyio.create_task_group() as tg:  # warm-up: connections, replay caches
                for k, url in enumerate(urls):
                    tg.start_soon(_client, http, url, 2, k)
            started = time.perf_counter()
            with anyio.fail_after(600):
                async with anyio.create_task_group() as tg:
                    for k, url in enumerate(urls):
                        tg.start_soon(_client, http, url, CALLS, k)
            return time.perf_counter() - started

    return anyio.run(main)


def _health(base: str) -> dict[str, Any]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"{base}/healthz", timeout=10) as response:
        return dict(json.loads(response.read()))


def _ingest_rows(pg_url: str | None, folder: Path, server_url: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    total = PROXIES * CLIENTS * CALLS
    sides = [("sqlite-only", None)] + ([("postgres", pg_url)] if pg_url else [])
    rates: dict[str, float] = {}
    for side, url in sides:
        dbs = [folder / f"ingest-{side}-{i}.sqlite" for i in range(PROXIES)]
        ship = ["--ship-to", url] if url else []
        procs = [ProxyProcess(["--upstream", server_url, "--db", str(db), *ship]).start() for db in dbs]
        try:
            run = f"ingest-{side}"
            elapsed = _load([p.base for p in procs], run)
            rates[side] = total / elapsed
            row: dict[str, Any] = {
                "bench": "pg_ingest",
                "side": side,
                "proxies": PROXIES,
                "clients": PROXIES * CLIENTS,
                "calls": total,
                "calls_per_s": round(total / elapsed, 1),
            }
            if url:
                answered = time.perf_counter()
                expected = total + PROXIES * CLIENTS * 2  # the warm-up calls ship too
                conn = connect(url)
                try:
                    while True:
                        shipped = conn.execute(
                            "SELECT count(*) FROM calls WHERE run_id = %s AND status <> 'pending'", (run,)
                        ).fetchone()[0]
                        if shipped >= expected or time.perf_counter() - answered > 120:
                            break
                        time.sleep(0.05)
                finally:
                    conn.close()
                row["drain_s"] = round(time.perf_counter() - answered, 2)
                row["rows_in_postgres"] = shipped
                lags = [_health(p.base)["shipping"]["shipped_lag_ms"] for p in procs]
                row["lag_p50_ms"] = max(lag["p50"] for lag in lags)
                row["lag_p99_ms"] = max(lag["p99"] for lag in lags)
            rows.append(row)
        finally:
            for proc in procs:
                proc.stop()
    if "postgres" in rates:
        rows.append(
            {
                "bench": "pg_ingest_ratio",
                "postgres_over_sqlite_only": round(rates["postgres"] / rates["sqlite-only"], 3),
            }
        )
    return rows


# ------------------------------------------------------------------------- PostgreSQL


def _postgres() -> tuple[str | None, Any]:
    """A PostgreSQL database URL and the cluster to destroy afterwards (None, None without one)."""
    url = os.environ.get("FINMCP_BENCH_PG_URL")
    if url:
        return url, None
    if importlib.util.find_spec("psycopg") is None:  # the postgres extra is not installed
        return None, None
    from tests.support.postgres import PostgresCluster, postgres_bin_dir

    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        return None, None
    cluster = PostgresCluster(bin_dir)
    cluster.start()
    return cluster.create_database("bench_ingest"), cluster


def run() -> list[dict[str, Any]]:
    """Commit-path rows, ingest rows (SQLite only, then shipping to PostgreSQL) and their ratio."""
    pg_url, cluster = _postgres()
    rows: list[dict[str, Any]] = []
    if pg_url is None:
        rows.append(
            {
                "bench": "pg_ingest",
                "note": "PostgreSQL not found (FINMCP_BENCH_PG_URL or initdb): shipping not measured",
            }
        )
    try:
        with tempfile.TemporaryDirectory(prefix="bench-pg-") as tmp:
            folder = Path(tmp)
            rows += _commit_rows(pg_url, folder)
            rec = folder / "recordings.sqlite"
            with RecordingStore.open(rec) as store:
                for code in CODES:
                    store.put_response(
                        "qieman79", TOOL, {"fundNameOrCode": code}, recorded_result(code), "imported:bench"
                    )
            server_args = ["--miss", "strict", "--recordings", str(rec), "--latency", "none"]
            with ServerProcess(server_args, wait_warm=True) as server:
                rows += _ingest_rows(pg_url, folder, server.url)
    finally:
        if cluster is not None:
            cluster.destroy()
    return rows
