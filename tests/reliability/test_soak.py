"""Soak: 32 HTTP clients and 8 stdio clients (both protocol eras) through finmcp-proxy to finmcp-server.

Every client makes a fixed number of calls whose answers name their arguments (recorded, strict
replay), keeps a log of what it received, and after the run the trace database must hold exactly one
row per call (no loss, no duplicate), each row matching the answer its client got, in order. The
resident memory (``VmRSS``) of the server and of the HTTP proxy is read after a warm-up round and
after the load; growth must stay under ``RSS_GROWTH_BOUND_MIB``. The figures are printed (``-s``)
and quoted in docs/reliability.md; the speed is measured in bench/, not asserted here.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import anyio
import pytest
from mcp.client import Client

from finmcp.recordings import SqliteTraceStore
from tests.support.loadgen import TOOL, assert_rows_are_what_clients_got, record_diagnoses
from tests.support.processes import health
from tests.support.scripts import proxy_stdio
from tests.support.sdk import first_text

CODES = [f"{i:06d}" for i in range(1, 65)]
HTTP_CLIENTS, STDIO_CLIENTS, CALLS, WARMUP_CALLS = 32, 8, 40, 5
RSS_GROWTH_BOUND_MIB = 16.0  # "flat": the load round adds less than this to either process
HANG_GUARD_S = 600  # not a speed limit: only ends a round that hangs


def rss_mib(pid: int) -> float:
    """Resident set size of a live process, from /proc/<pid>/status."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for pid {pid}")


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    return record_diagnoses(tmp_path_factory.mktemp("soak") / "rec.sqlite", CODES, "imported:soak")


def code_for(client: int, call: int) -> str:
    return CODES[(client * 11 + call * 7) % len(CODES)]


async def http_client(url: str, mode: str, index: int, calls: int, seen: list) -> None:
    async with Client(url, mode=mode) as client:
        for j in range(calls):
            code = code_for(index, j)
            result = await client.call_tool(TOOL, {"fundNameOrCode": code})
            seen.append((code, first_text(result)))


async def stdio_client(params, mode: str, index: int, calls: int, seen: list) -> None:
    async with Client(params, mode=mode) as client:
        for j in range(calls):
            code = code_for(100 + index, j)
            result = await client.call_tool(TOOL, {"fundNameOrCode": code})
            seen.append((code, first_text(result)))


@pytest.mark.slow
def test_soak_no_loss_no_duplicates_flat_memory(recordings, children, tmp_path):
    db = tmp_path / "runs.sqlite"
    server_args = ["--miss", "strict", "--recordings", str(recordings), "--latency", "fixed:2"]
    seen: dict[str, list[tuple[str, str]]] = {}
    server = children.server(server_args)
    proxy = children.proxy(["--upstream", server.url, "--db", str(db)])

    async def round_(run: str, calls: int, with_stdio: bool) -> None:
        with anyio.fail_after(HANG_GUARD_S):
            async with anyio.create_task_group() as tg:
                for i in range(HTTP_CLIENTS):
                    sample = f"h{i:02d}"
                    mode = "auto" if i % 2 == 0 else "legacy"
                    got = seen.setdefault(f"{run}/{sample}", [])
                    tg.start_soon(http_client, proxy.tagged(run, sample, 0), mode, i, calls, got)
                for i in range(STDIO_CLIENTS if with_stdio else 0):
                    sample = f"s{i:02d}"
                    mode = "auto" if i % 2 == 0 else "legacy"
                    extra = ("--run", run, "--sample", sample, "--turn", "0")
                    params = proxy_stdio(["--upstream", server.url], db, *extra)
                    got = seen.setdefault(f"{run}/{sample}", [])
                    tg.start_soon(stdio_client, params, mode, i, calls, got)

    anyio.run(round_, "warmup", WARMUP_CALLS, False)
    rss_before = {"server": rss_mib(server.process.pid), "proxy": rss_mib(proxy.process.pid)}
    anyio.run(round_, "soak", CALLS, True)
    rss_after = {"server": rss_mib(server.process.pid), "proxy": rss_mib(proxy.process.pid)}
    counts = health(server)["calls"]["finmcp65"]
    children.stop(proxy)  # checked: no write failure, no error logged, a clean exit
    children.stop(server)

    total = (HTTP_CLIENTS + STDIO_CLIENTS) * CALLS
    with SqliteTraceStore.open(db) as store:
        calls = store.calls("soak")
        integrity = store.db.execute("PRAGMA integrity_check").fetchone()[0]
    figures = {
        "calls": total,
        "sessions": HTTP_CLIENTS + STDIO_CLIENTS,
        "rows": len(calls),
        "rss_mib_before": {k: round(v, 1) for k, v in rss_before.items()},
        "rss_mib_after": {k: round(v, 1) for k, v in rss_after.items()},
    }
    print("\nsoak figures:", json.dumps(figures))
    assert integrity == "ok"
    assert len(calls) == total == 1600
    assert Counter(c["status"] for c in calls) == {"ok": total}
    assert counts.get("replayed", 0) >= total and not counts.get("miss")
    # no duplicate: (session, JSON-RPC id) and seq are unique
    assert len({(c["session_key"], json.dumps(c["jsonrpc_id"])) for c in calls}) == total
    assert len({c["seq"] for c in calls}) == total
    assert_rows_are_what_clients_got(calls, seen, prefix="soak/")
    for name in ("server", "proxy"):
        growth = rss_after[name] - rss_before[name]
        assert growth < RSS_GROWTH_BOUND_MIB, f"{name} RSS grew {growth:.1f} MiB under load"
