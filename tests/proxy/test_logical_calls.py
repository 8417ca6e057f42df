"""One logical tool call over several wire requests (2026-07-28), logged as ONE call row.

Real processes on loopback: an SDK server (:mod:`tests.support.logical_server`) whose tools ask for
input in two rounds (``input_required``) or run as a task polled five times, driven through
``finmcp-proxy`` by the SDK client (input_required) or raw HTTP (tasks: the SDK client has no
tasks API). Each logical call is one call row with the end-to-end latency (at least the server's
built-in delays), the final status and output; its wire hops are message rows linked to it
(:func:`finmcp.proxy.logical_calls.link_hops`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.session import ClientRequestContext
from mcp_types import ElicitRequestParams, ElicitResult, ErrorData

from finmcp.proxy.logical_calls import link_hops
from finmcp.recordings import SqliteTraceStore
from tests.support import logical_server
from tests.support.net import free_port
from tests.support.polling import wait_for
from tests.support.sdk import first_text
from tests.support.traces import wait_calls, wait_messages

ROOT = Path(__file__).resolve().parents[2]
V2026 = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": V2026,
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.logical_server", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"

    def up() -> bool:
        try:
            httpx2.get(url, timeout=1)
        except httpx2.HTTPError:
            return False
        return True

    try:
        wait_for(up, what="the logical server to listen")
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def proxy(upstream, proxy_process, tmp_path):
    db = tmp_path / "runs.sqlite"
    proc = proxy_process(["--upstream", upstream, "--db", str(db)])
    proc.db = db
    return proc


async def _elicit(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult | ErrorData:
    return ElicitResult(action="accept", content={"v": "A" if "first" in params.message else "B"})


def _messages(db: Path, run: str, count: int) -> list[dict[str, Any]]:
    """The run's message rows once ``count`` are written (they lag the traffic), in order."""
    wait_messages(db, run, count=count)
    with SqliteTraceStore.open(db) as store:
        return store.messages(run_id=run)


def _settled(db: Path, run: str, count: int) -> list[dict[str, Any]]:
    return wait_calls(db, run, count, settled=True)


def test_input_required_two_rounds_is_one_call(proxy):
    run = "mrtr"

    async def main() -> str:
        async with Client(proxy.tagged(run, "s1", 0), mode="auto", elicitation_callback=_elicit) as client:
            result = await client.call_tool("ask_twice", {"x": 7})
            plain = await client.call_tool("plain", {"x": 1})
            assert first_text(plain) == "plain 1"
            return first_text(result)

    assert anyio.run(main) == "7:A:B"
    calls = _settled(proxy.db, run, 2)
    assert [c["tool"] for c in calls] == ["ask_twice", "plain"]
    ask = calls[0]
    assert ask["status"] == "ok"
    assert ask["result"]["content"][0]["text"] == "7:A:B"
    assert ask["latency_ms"] >= logical_server.ASK_MIN_MS
    assert ask["call_group"] == 0
    # the three wire requests are message rows; the two retries are linked to the first
    messages = _messages(proxy.db, run, 10)  # discover, 3 + 1 calls: requests and answers
    wire = [m for m in messages if m["direction"] == "c2s" and m["method"] == "tools/call"]
    assert len(wire) == 4
    hops = link_hops(m for m in messages if m["session_key"] == ask["session_key"])
    assert hops[ask["jsonrpc_id"]] == [wire[1]["jsonrpc_id"], wire[2]["jsonrpc_id"]]
    assert hops[calls[1]["jsonrpc_id"]] == []


def _post(client: httpx2.Client, url: str, rid: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": V2026,
        "Mcp-Method": method,
    }
    name = params.get("name") or params.get("taskId")
    if name:
        headers["Mcp-Name"] = name
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": {**params, "_meta": META}}
    response = client.post(url, json=body, headers=headers, timeout=10)
    assert response.status_code == 200, response.text
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    return json.loads(text)


def test_task_with_five_polls_is_one_call(proxy):
    run = "tasks"
    url = proxy.tagged(run, "s1", 0)
    with httpx2.Client() as client:
        handle = _post(client, url, 1, "tools/call", {"name": "slow_task", "arguments": {"x": 3}})
        task_id = handle["result"]["task"]["taskId"]
        polls = 0
        status = "working"
        while status != "completed":
            polls += 1
            status = _post(client, url, 1 + polls, "tasks/get", {"taskId": task_id})["result"]["status"]
        final = _post(client, url, 100, "tasks/result", {"taskId": task_id})
    assert polls == logical_server.POLLS
    assert final["result"]["content"][0]["text"] == "done 3"
    (call,) = _settled(proxy.db, run, 1)
    assert call["tool"] == "slow_task" and call["status"] == "ok"
    assert call["result"]["content"][0]["text"] == "done 3"
    assert call["latency_ms"] >= logical_server.TASK_MIN_MS
    messages = _messages(proxy.db, run, 14)
    hops = link_hops(messages)
    assert hops == {1: [*range(2, 2 + polls), 100]}


def test_task_cancelled_is_one_cancelled_call(proxy):
    run = "task-cancel"
    url = proxy.tagged(run, "s1", 0)
    with httpx2.Client() as client:
        handle = _post(client, url, 1, "tools/call", {"name": "slow_task", "arguments": {"x": 4}})
        task_id = handle["result"]["task"]["taskId"]
        _post(client, url, 2, "tasks/get", {"taskId": task_id})
        _post(client, url, 3, "tasks/cancel", {"taskId": task_id})
    (call,) = _settled(proxy.db, run, 1)
    assert call["status"] == "cancelled"
    assert call["latency_ms"] >= logical_server.POLL_S * 1000


def test_mcp_method_and_name_headers_forwarded_and_logged(proxy):
    run = "headers"
    with httpx2.Client() as client:
        _post(client, proxy.tagged(run, "s1", 0), 1, "tools/call", {"name": "plain", "arguments": {"x": 2}})
    _settled(proxy.db, run, 1)
    (request,) = [m for m in _messages(proxy.db, run, 2) if m["direction"] == "c2s"]
    headers = {name.lower(): value for name, value in request["headers"]}
    assert headers["mcp-method"] == "tools/call"
    assert headers["mcp-name"] == "plain"
