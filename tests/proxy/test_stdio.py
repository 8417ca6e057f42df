"""SDK client over stdio (both eras) → finmcp-proxy --transport stdio → HTTP, stdio and SSE upstreams."""

from __future__ import annotations

import signal
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPError

from finmcp.evaluator.inputs.trace_db import load_predictions_db
from finmcp.recordings import SqliteTraceStore
from tests.support.scripts import proxy_stdio, run_script, server_stdio_command
from tests.support.sdk import request_meta
from tests.support.traces import read_calls, wait_calls

MODES = ["auto", "legacy"]
LATENCY = "fixed:150"  # long enough that three calls sent together overlap on a loaded machine


@pytest.fixture(scope="module")
def http_server(module_children):
    return module_children.server(["--latency", LATENCY])


@pytest.fixture(scope="module")
def sse_server(module_children):
    return module_children.server(["--latency", LATENCY, "--transport", "sse"])


def upstreams(http_server, sse_server):
    return {
        "http": ["--upstream", http_server.url],
        "cmd": ["--upstream-cmd", server_stdio_command("--latency", LATENCY)],
        "sse": ["--upstream-sse", sse_server.endpoint("/sse")],
    }


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", ["http", "cmd", "sse"])
def test_stdio_client_through_each_upstream(http_server, sse_server, tmp_path, mode, kind):
    db = tmp_path / "runs.sqlite"
    run = f"stdio-{kind}-{mode}"
    params = proxy_stdio(
        upstreams(http_server, sse_server)[kind], db, "--run", run, "--sample", "s", "--turn", "2"
    )

    async def main():
        async with Client(params, mode=mode) as client:
            listed = await client.list_tools()
            async with anyio.create_task_group() as tg:
                for _ in range(3):
                    tg.start_soon(client.call_tool, "GetCurrentTime", {})
            await anyio.sleep(0.15)
            result = await client.call_tool("GetCurrentTime", {}, meta=request_meta({"io.finmcp/turn": 3}))
            return len(listed.tools), result

    count, result = anyio.run(main)
    assert count == 65 and not result.is_error and "currentTime" in result.content[0].text
    calls = read_calls(db, run)
    assert [(c["sample_id"], c["turn"], c["status"]) for c in calls] == [("s", 2, "ok")] * 3 + [
        ("s", 3, "ok")
    ]
    assert [c["call_group"] for c in calls] == [0, 0, 0, 0]  # turn 3 starts its own numbering
    assert sorted(c["group_source"] for c in calls[:3]) == ["gap", "overlap", "overlap"]
    with SqliteTraceStore.open(db) as store:
        (session,) = store.sessions(run)
        messages = store.messages(session["session_key"])
    assert session["transport"] == "stdio" and session["ended"]
    assert session["era"] == ("stateless" if mode == "auto" else "handshake")
    assert {m["direction"] for m in messages} == {"c2s", "s2c"}
    assert sum(1 for m in messages if m["method"] == "tools/call") == 4


@pytest.mark.slow
def test_stdio_upstream_killed_gives_errors(server_process, tmp_path):
    db = tmp_path / "runs.sqlite"
    server = server_process(["--latency", "fixed:600"], killed=True)
    params = proxy_stdio(["--upstream", server.url, "--timeout", "10"], db, "--run", "dead")

    async def main():
        errors = []
        async with Client(params, mode="auto") as client:
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

    errors = anyio.run(main)
    assert server.process.returncode == -signal.SIGKILL
    assert len(errors) == 2 and all("finmcp-proxy" in str(e) for e in errors)
    calls = wait_calls(db, "dead", 3, settled=True)
    assert [c["status"] for c in calls] == ["ok", "transport_error", "transport_error"]


@pytest.mark.slow
def test_two_proxy_processes_on_one_file_never_share_a_group_number(http_server, tmp_path):
    """A stdio host relaunched: two proxy processes log the same (run, sample, trial, turn) in turn."""
    db = tmp_path / "runs.sqlite"
    params = proxy_stdio(
        ["--upstream", http_server.url], db, "--run", "relaunch", "--sample", "s", "--turn", "0"
    )

    async def session(tool: str) -> None:
        async with Client(params, mode="auto") as client:  # its own proxy process
            for label in (0, 1):  # two steps, tagged as the harness tags them
                meta: Any = {"io.finmcp/group": label}  # an open TypedDict to the SDK's types
                await client.call_tool(tool, {}, meta=meta)

    anyio.run(session, "GetCurrentTime")
    anyio.run(session, "GetCurrentTime")
    calls = wait_calls(db, "relaunch", 4, settled=True)
    assert len({c["session_key"] for c in calls}) == 2
    assert [c["call_group"] for c in calls] == [0, 1, 2, 3]  # in seq order; each session's own groups
    shown = run_script("finmcp-proxy", "show", "--db", str(db), "--run", "relaunch")
    assert shown.returncode == 0, shown.stderr
    groups = [line.strip() for line in shown.stdout.splitlines() if line.strip().startswith("group ")]
    assert groups == [f"group {i} (1 call, explicit)" for i in range(4)]
    predictions = load_predictions_db(db, "relaunch")
    (prediction,) = predictions.by_sample["s"]
    assert [len(group) for group in prediction.turns[0]] == [1, 1, 1, 1]
