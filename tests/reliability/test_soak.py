"""Soak: 32 HTTP clients and 8 stdio clients (both protocol eras) through finmcp-proxy to finmcp-server.

Every client makes a fixed number of calls whose answers name their arguments (recorded, strict
replay), keeps a log of what it received, and after the run the trace database must hold exactly one
row per call (no loss, no duplicate), each row matching the answer its client got, in order. The
resident memory (``VmRSS``) of the server and of the HTTP proxy is read after a warm-up round and
after the load; growth must stay under ``RSS_GROWTH_BOUND_MIB``. The figures are printed (``-s``)
and quoted in docs/reliability.md.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from proxy.testing import ProxyProcess, stdio_args
from recordings import RecordingStore
from server.testing import ServerProcess, minimal_instance
from tool_specs.inventory import load_inventory

TOOL = "GetFundDiagnosis"
CODES = [f"{i:06d}" for i in range(1, 65)]
HTTP_CLIENTS, STDIO_CLIENTS, CALLS, WARMUP_CALLS = 32, 8, 40, 5
RSS_GROWTH_BOUND_MIB = 16.0  # "flat": the load round adds less than this to either process
TIME_LIMIT_S = 75


def result_for(code: str) -> dict:
    spec = load_inventory("finmcp65").get(TOOL)
    structured = minimal_instance(spec.output_schema) | {"fundCode": code}
    text = json.dumps(structured, ensure_ascii=False, indent=2)
    return {"content": [{"type": "text", "text": text}], "structuredContent": structured, "isError": False}


def rss_mib(pid: int) -> float:
    """Resident set size of a live process, from /proc/<pid>/status."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for pid {pid}")


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    path = tmp_path_factory.mktemp("soak") / "rec.sqlite"
    with RecordingStore.open(path) as store:
        for code in CODES:
            store.put_response("qieman79", TOOL, {"fundNameOrCode": code}, result_for(code), "imported:soak")
    return path


def code_for(client: int, call: int) -> str:
    return CODES[(client * 11 + call * 7) % len(CODES)]


async def http_client(url: str, mode: str, index: int, calls: int, seen: list) -> None:
    async with Client(url, mode=mode) as client:
        for j in range(calls):
            code = code_for(index, j)
            result = await client.call_tool(TOOL, {"fundNameOrCode": code})
            seen.append((code, result.content[0].text))


async def stdio_client(args: list[str], mode: str, index: int, calls: int, seen: list) -> None:
    async with Client(StdioServerParameters(command=sys.executable, args=args), mode=mode) as client:
        for j in range(calls):
            code = code_for(100 + index, j)
            result = await client.call_tool(TOOL, {"fundNameOrCode": code})
            seen.append((code, result.content[0].text))


def test_soak_no_loss_no_duplicates_flat_memory(recordings, tmp_path):
    db = tmp_path / "runs.sqlite"
    server_args = ["--miss", "strict", "--recordings", str(recordings), "--latency", "fixed:2"]
    seen: dict[str, list[tuple[str, str]]] = {}
    with (
        ServerProcess(server_args) as server,
        ProxyProcess(["--upstream", server.url, "--db", str(db)]) as proxy,
    ):
        assert server.process and proxy.process

        async def round_(run: str, calls: int, with_stdio: bool) -> float:
            started = time.monotonic()
            with anyio.fail_after(TIME_LIMIT_S):
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
                        args = stdio_args(["--upstream", server.url], db, *extra)
                        got = seen.setdefault(f"{run}/{sample}", [])
                        tg.start_soon(stdio_client, args, mode, i, calls, got)
            return time.monotonic() - started

        anyio.run(round_, "warmup", WARMUP_CALLS, False)
        rss_before = {"server": rss_mib(server.process.pid), "proxy": rss_mib(proxy.process.pid)}
        seconds = anyio.run(round_, "soak", CALLS, True)
        rss_after = {"server": rss_mib(server.process.pid), "proxy": rss_mib(proxy.process.pid)}
        assert proxy.process.poll() is None and server.process.poll() is None
        health = server.health()["calls"]["finmcp65"]

    total = (HTTP_CLIENTS + STDIO_CLIENTS) * CALLS
    with RecordingStore.open(db) as store:
        calls = store.calls("soak")
        integrity = store.db.execute("PRAGMA integrity_check").fetchone()[0]
    figures = {
        "calls": total,
        "sessions": HTTP_CLIENTS + STDIO_CLIENTS,
        "rows": len(calls),
        "seconds": round(seconds, 2),
        "calls_per_s": round(total / seconds, 1),
        "rss_mib_before": {k: round(v, 1) for k, v in rss_before.items()},
        "rss_mib_after": {k: round(v, 1) for k, v in rss_after.items()},
    }
    print("\nsoak figures:", json.dumps(figures))
    assert integrity == "ok"
    assert len(calls) == total == 1600
    assert Counter(c["status"] for c in calls) == {"ok": total}
    assert health.get("replayed", 0) >= total and not health.get("miss")
    # no duplicate: (session, JSON-RPC id) and seq are unique
    assert len({(c["session_key"], json.dumps(c["jsonrpc_id"])) for c in calls}) == total
    assert len({c["seq"] for c in calls}) == total
    by_sample: dict[str, list[dict]] = {}
    for call in calls:
        by_sample.setdefault(f"soak/{call['sample_id']}", []).append(call)
    assert sorted(by_sample) == sorted(k for k in seen if k.startswith("soak/"))
    for sample, rows in by_sample.items():
        rows.sort(key=lambda c: c["seq"])
        logged = [(r["arguments"]["fundNameOrCode"], r["result"]["content"][0]["text"]) for r in rows]
        assert logged == seen[sample], sample  # each row is the answer its client received, in order
        assert all(f'"fundCode": "{code}"' in text for code, text in logged)
    for name in ("server", "proxy"):
        growth = rss_after[name] - rss_before[name]
        assert growth < RSS_GROWTH_BOUND_MIB, f"{name} RSS grew {growth:.1f} MiB under load"
