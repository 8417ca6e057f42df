"""SDK client over stdio (both eras) → finmcp-proxy --transport stdio → HTTP, stdio and SSE upstreams."""

from __future__ import annotations

import sys
import time

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from proxy.testing import stdio_args
from recordings import RecordingStore
from server.testing import ServerProcess

MODES = ["auto", "legacy"]
PY = sys.executable


@pytest.fixture(scope="module")
def http_server():
    with ServerProcess(["--latency", "fixed:40"]) as proc:
        yield proc


@pytest.fixture(scope="module")
def sse_server():
    with ServerProcess(["--latency", "fixed:40", "--transport", "sse"]) as proc:
        yield proc


def upstreams(http_server, sse_server):
    return {
        "http": ["--upstream", http_server.url],
        "cmd": ["--upstream-cmd", f"{PY} -m server --transport stdio --latency fixed:40"],
        "sse": ["--upstream-sse", sse_server.endpoint("/sse")],
    }


def calls_of(db, run):
    with RecordingStore.open(db) as store:
        return store.calls(run)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", ["http", "cmd", "sse"])
def test_stdio_client_through_each_upstream(http_server, sse_server, tmp_path, mode, kind):
    db = tmp_path / "runs.sqlite"
    run = f"stdio-{kind}-{mode}"
    args = stdio_args(
        upstreams(http_server, sse_server)[kind], db, "--run", run, "--sample", "s", "--turn", "2"
    )

    async def main():
        async with Client(StdioServerParameters(command=PY, args=args), mode=mode) as client:
            listed = await client.list_tools()
            async with anyio.create_task_group() as tg:
                for _ in range(3):
                    tg.start_soon(client.call_tool, "GetCurrentTime", {})
            await anyio.sleep(0.15)
            result = await client.call_tool("GetCurrentTime", {}, meta={"io.finmcp/turn": 3})
            return len(listed.tools), result

    count, result = anyio.run(main)
    assert count == 65 and not result.is_error and "currentTime" in result.content[0].text
    calls = calls_of(db, run)
    assert [(c["sample_id"], c["turn"], c["status"]) for c in calls] == [("s", 2, "ok")] * 3 + [
        ("s", 3, "ok")
    ]
    assert [c["call_group"] for c in calls] == [0, 0, 0, 0]  # turn 3 starts its own numbering
    assert sorted(c["group_source"] for c in calls[:3]) == ["gap", "overlap", "overlap"]
    with RecordingStore.open(db) as store:
        (session,) = store.sessions(run)
        messages = store.messages(session["session_key"])
    assert session["transport"] == "stdio" and session["ended"]
    assert session["era"] == ("2026-07-28" if mode == "auto" else "handshake")
    assert {m["direction"] for m in messages} == {"c2s", "s2c"}
    assert sum(1 for m in messages if m["method"] == "tools/call") == 4


def test_stdio_upstream_killed_gives_errors(tmp_path):
    db = tmp_path / "runs.sqlite"
    server = ServerProcess(["--latency", "fixed:600"]).start()
    args = stdio_args(["--upstream", server.url, "--timeout", "10"], db, "--run", "dead")

    async def main():
        errors = []
        async with Client(StdioServerParameters(command=PY, args=args), mode="auto") as client:
            await client.call_tool("GetCurrentTime", {})
            server.process.kill()
            server.process.wait()
            for _ in range(2):
                with anyio.fail_after(8):
                    try:
                        await client.call_tool("GetCurrentTime", {})
                    except MCPError as exc:
                        errors.append(exc)
        return errors

    try:
        errors = anyio.run(main)
    finally:
        server.stop()
    assert len(errors) == 2 and all("finmcp-proxy" in str(e) for e in errors)
    time.sleep(0.1)
    assert [c["status"] for c in calls_of(db, "dead")] == ["ok", "transport_error", "transport_error"]
