"""No loss under load: 16 concurrent SDK clients × 200 calls through the proxy ⇒ 3,200 matching rows."""

from __future__ import annotations

import anyio
import pytest
from mcp.client import Client

from tests.support.loadgen import TOOL, assert_rows_are_what_clients_got, record_diagnoses
from tests.support.processes import health
from tests.support.sdk import first_text
from tests.support.traces import read_calls

CODES = [f"{i:06d}" for i in range(1, 33)]
CLIENTS, CALLS = 16, 200
HANG_GUARD_S = 600  # not a speed limit (bench/ measures speed): only ends a run that hangs


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    return record_diagnoses(tmp_path_factory.mktemp("rec") / "rec.sqlite", CODES, "imported:load")


@pytest.mark.slow
def test_sixteen_clients_two_hundred_calls_each(recordings, server_process, proxy_process, tmp_path):
    db = tmp_path / "runs.sqlite"
    seen: dict[str, list[tuple[str, str]]] = {}
    server = server_process(["--miss", "strict", "--recordings", str(recordings), "--latency", "none"])
    proxy = proxy_process(["--upstream", server.url, "--db", str(db)])

    async def client_run(index):
        sample = f"c{index:02d}"
        got = seen.setdefault(sample, [])
        async with Client(proxy.tagged("load", sample, 0), mode="auto") as client:
            for j in range(CALLS):
                code = CODES[(index * 7 + j) % len(CODES)]
                result = await client.call_tool(TOOL, {"fundNameOrCode": code})
                got.append((code, first_text(result)))

    async def main():
        with anyio.fail_after(HANG_GUARD_S):
            async with anyio.create_task_group() as tg:
                for index in range(CLIENTS):
                    tg.start_soon(client_run, index)

    anyio.run(main)
    calls = read_calls(db, "load")  # every call row is committed before its answer is forwarded
    assert len(calls) == CLIENTS * CALLS == 3200
    assert all(c["status"] == "ok" for c in calls)
    assert_rows_are_what_clients_got(calls, seen)
    assert len({c["seq"] for c in calls}) == 3200
    # how requests fared on pooled upstream connections (docs/proxy.md, "Failures"): printed with -s
    pool = health(proxy)["upstream_connections"]
    print(f"upstream connections: {pool}")
    assert pool["not_resent"] == 0 and pool["resent"] == pool["lost_after_write"]
