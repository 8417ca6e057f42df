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

from finmcp.proxy.logical_calls import hops_of, link_hops
from finmcp.recordings import SqliteTraceStore
from finmcp.recordings.trace_store import open_trace_store
from tests.support import logical_server, tasks_2025
from tests.support.net import free_port, serving
from tests.support.pg_trace_copy import copy_trace
from tests.support.polling import wait_for
from tests.support.scripts import proxy_stdio
from tests.support.sdk import first_text
from tests.support.traces import read_calls, wait_calls, wait_messages

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
        wait_for(
            up, timeout=60, what="the logical server to listen"
        )  # its imports take >10 s on a busy machine
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


def test_input_required_without_request_state_is_linked_by_tool_and_arguments(proxy):
    run = "mrtr-stateless"

    async def main() -> list[str]:
        async with Client(proxy.tagged(run, "s1", 0), mode="auto", elicitation_callback=_elicit) as client:
            first = first_text(await client.call_tool("ask_stateless", {"x": 1}))
            second = first_text(await client.call_tool("ask_stateless", {"x": 2}))
            return [first, second]

    assert anyio.run(main) == ["1:A", "2:A"]
    calls = _settled(proxy.db, run, 2)
    assert [(c["arguments"], c["status"], c["result"]["content"][0]["text"]) for c in calls] == [
        ({"x": 1}, "ok", "1:A"),
        ({"x": 2}, "ok", "2:A"),
    ]
    assert all(c["latency_ms"] >= 2 * logical_server.ROUND_S * 1000 for c in calls)
    requests = [m for m in _messages(proxy.db, run, 10) if m["method"] == "tools/call"]
    assert all("requestState" not in json.loads(m["body"])["params"] for m in requests)


def test_concurrent_input_required_calls_stay_apart_in_one_group(proxy):
    run = "mrtr-parallel"

    async def main() -> list[str]:
        texts: list[str] = []
        async with Client(proxy.tagged(run, "s1", 0), mode="auto", elicitation_callback=_elicit) as client:
            await client.list_tools()  # warm: the calls leave together

            async def one(x: int) -> None:
                texts.append(first_text(await client.call_tool("ask_twice", {"x": x})))

            async with anyio.create_task_group() as tg:
                for x in (1, 2, 3):
                    tg.start_soon(one, x)
        return sorted(texts)

    assert anyio.run(main) == ["1:A:B", "2:A:B", "3:A:B"]
    calls = _settled(proxy.db, run, 3)
    assert len(calls) == 3
    assert sorted(c["result"]["content"][0]["text"] for c in calls) == ["1:A:B", "2:A:B", "3:A:B"]
    assert {c["call_group"] for c in calls} == {0}
    assert all(c["latency_ms"] >= logical_server.ASK_MIN_MS for c in calls)
    for call in calls:  # each call's own arguments and answer: the tokens kept the rounds apart
        assert call["result"]["content"][0]["text"].startswith(f"{call['arguments']['x']}:")


def test_input_required_over_stdio_is_one_call(tmp_path):
    db = tmp_path / "runs.sqlite"
    upstream = f"{sys.executable} -m tests.support.logical_server stdio"
    params = proxy_stdio(["--upstream-cmd", upstream], db, "--run", "stdio", "--sample", "s1")
    params.cwd = ROOT

    async def main() -> str:
        async with Client(params, mode="auto", elicitation_callback=_elicit) as client:
            return first_text(await client.call_tool("ask_twice", {"x": 9}))

    assert anyio.run(main) == "9:A:B"
    (call,) = _settled(db, "stdio", 1)
    assert call["status"] == "ok" and call["result"]["content"][0]["text"] == "9:A:B"
    assert call["latency_ms"] >= logical_server.ASK_MIN_MS
    hops = link_hops(_messages(db, "stdio", 6))
    assert len(hops[call["jsonrpc_id"]]) == 2


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
    with SqliteTraceStore.open(proxy.db) as store:
        children = hops_of(store, call)
    assert [(m["direction"], m["method"], m["jsonrpc_id"]) for m in children if m["direction"] == "c2s"] == [
        *(("c2s", "tasks/get", i) for i in range(2, 2 + polls)),
        ("c2s", "tasks/result", 100),
    ]
    assert len(children) == 2 * (polls + 1)  # each hop's request and its answer


def test_2025_11_25_task_through_the_proxy_is_one_call(proxy_process, tmp_path):
    # the SDK serves no 2025-11-25 tasks: a spec-shaped stdlib server answers them (raw HTTP client)
    db = tmp_path / "runs.sqlite"
    with serving(tasks_2025.TasksHandler) as base:
        proxy = proxy_process(["--upstream", f"{base}/mcp", "--db", str(db)])
        url = proxy.tagged("t2025", "s1", 0)
        headers = {"Accept": "application/json, text/event-stream"}

        def rpc(client: httpx2.Client, rid: int | None, method: str, params: dict[str, Any]) -> Any:
            body: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
            if rid is not None:
                body["id"] = rid
            response = client.post(url, json=body, headers=headers, timeout=10)
            assert response.status_code in (200, 202), response.text
            return response.json()["result"] if rid is not None else None

        with httpx2.Client() as client:
            init = {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            }
            rpc(client, 0, "initialize", init)
            headers |= {"Mcp-Session-Id": "s-1", "MCP-Protocol-Version": "2025-11-25"}
            rpc(client, None, "notifications/initialized", {})
            handle = rpc(
                client, 1, "tools/call", {"name": "slow", "arguments": {"x": 8}, "task": {"ttl": 60000}}
            )
            task_id = handle["task"]["taskId"]
            rid = 1
            while rpc(client, rid + 1, "tasks/get", {"taskId": task_id})["status"] != "completed":
                rid += 1
            final = rpc(client, 50, "tasks/result", {"taskId": task_id})
            assert final["content"][0]["text"] == "done 8"
            plain = rpc(client, 51, "tools/call", {"name": "plain", "arguments": {"x": 1}})
            assert plain["content"][0]["text"] == "plain 1"
    calls = _settled(db, "t2025", 2)
    assert [(c["tool"], c["status"]) for c in calls] == [("slow", "ok"), ("plain", "ok")]
    assert calls[0]["result"]["content"][0]["text"] == "done 8"
    assert calls[0]["latency_ms"] >= tasks_2025.POLLS * tasks_2025.POLL_S * 1000
    assert calls[0]["protocol_version"] == "2025-11-25"
    hops = link_hops(_messages(db, "t2025", 19))
    assert hops == {1: [*range(2, 2 + tasks_2025.POLLS), 50], 51: []}


def test_hops_read_the_same_from_postgresql(proxy, postgres_url):
    run = "tasks-pg"
    url = proxy.tagged(run, "s1", 0)
    with httpx2.Client() as client:
        task_id = _post(client, url, 1, "tools/call", {"name": "slow_task", "arguments": {"x": 2}})["result"][
            "task"
        ]
        rid = 1
        while (
            _post(client, url, rid + 1, "tasks/get", {"taskId": task_id["taskId"]})["result"]["status"]
            != "completed"
        ):
            rid += 1
        _post(client, url, 99, "tasks/result", {"taskId": task_id["taskId"]})
    _settled(proxy.db, run, 1)
    _messages(proxy.db, run, 2 * (rid + 2))
    copy_trace(proxy.db, postgres_url)

    def hops(db: Any) -> list[tuple[Any, ...]]:
        with open_trace_store(str(db)) as store:
            (call,) = store.calls(run)
            return [(m["direction"], m["method"], m["jsonrpc_id"], m["body"]) for m in hops_of(store, call)]

    sqlite_hops = hops(proxy.db)
    assert len(sqlite_hops) == 2 * (rid + 1)
    assert hops(postgres_url) == sqlite_hops


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


def test_a_task_between_polls_when_the_proxy_stops_is_a_transport_error(upstream, children, tmp_path):
    db = tmp_path / "runs.sqlite"
    proxy = children.proxy(["--upstream", upstream, "--db", str(db)])
    url = proxy.tagged("stopped", "s1", 0)
    with httpx2.Client() as client:
        handle = _post(client, url, 1, "tools/call", {"name": "slow_task", "arguments": {"x": 6}})
        _post(client, url, 2, "tasks/get", {"taskId": handle["result"]["task"]["taskId"]})
    children.stop(proxy)  # SIGTERM: the writer commits what is queued
    (call,) = read_calls(db, "stopped")
    assert call["status"] == "transport_error"
    assert call["rpc_error"] == {"code": None, "message": "the proxy stopped before the response"}


def test_mcp_method_and_name_headers_forwarded_and_logged(proxy):
    run = "headers"
    with httpx2.Client() as client:
        _post(client, proxy.tagged(run, "s1", 0), 1, "tools/call", {"name": "plain", "arguments": {"x": 2}})
    _settled(proxy.db, run, 1)
    (request,) = [m for m in _messages(proxy.db, run, 2) if m["direction"] == "c2s"]
    headers = {name.lower(): value for name, value in request["headers"]}
    assert headers["mcp-method"] == "tools/call"
    assert headers["mcp-name"] == "plain"


def test_subscriptions_listen_passes_through_and_its_notifications_are_logged(proxy):
    run = "listen"
    url = proxy.tagged(run, "s1", 0)

    async def main() -> int:
        async with Client(url, mode="auto") as client, client.listen(tools_list_changed=True) as sub:
            assert sub.honored.tools_list_changed
            await client.call_tool("touch_tools", {})
            with anyio.fail_after(10):
                async for _event in sub:
                    return 1
        return 0

    assert anyio.run(main) == 1
    _settled(proxy.db, run, 1)
    rows = wait_messages(
        proxy.db, run, lambda m: m["direction"] == "s2c" and m["kind"] == "notification", count=2
    )
    methods = [m["method"] for m in rows]
    assert "notifications/subscriptions/acknowledged" in methods
    assert "notifications/tools/list_changed" in methods
    (listen,) = [m for m in _messages(proxy.db, run, 1) if m["method"] == "subscriptions/listen"]
    assert listen["direction"] == "c2s"
    session = listen["session_key"]
    assert {m["session_key"] for m in rows} == {session}


# ---------------------------------------------------------------- EMR through the proxy = direct

GOLD: dict[str, list[list[str]]] = {  # per sample, one turn: its call groups in order
    "s1": [["ask_twice"]],
    "s2": [["plain"], ["ask_twice"]],
    "s3": [["ask_twice"], ["ask_twice"]],  # the same logical call twice: tokens keep them apart
    "s4": [["slow_task"], ["plain"]],
}


def _drive(base: str, tagged: Any) -> dict[str, list[list[tuple[str, str]]]]:
    """Issue every sample's gold calls (one at a time, as an oracle agent would); what came back."""

    async def sdk(url: str, groups: list[list[str]]) -> list[list[tuple[str, str]]]:
        out = []
        async with Client(url, mode="auto", elicitation_callback=_elicit) as client:
            for group in groups:
                out.append([(tool, first_text(await client.call_tool(tool, {"x": 5}))) for tool in group])
        return out

    def task(url: str) -> str:
        with httpx2.Client() as client:
            handle = _post(client, url, 1, "tools/call", {"name": "slow_task", "arguments": {"x": 5}})
            task_id = handle["result"]["task"]["taskId"]
            rid = 1
            while True:
                rid += 1
                if (
                    _post(client, url, rid, "tasks/get", {"taskId": task_id})["result"]["status"]
                    == "completed"
                ):
                    break
            return _post(client, url, rid + 1, "tasks/result", {"taskId": task_id})["result"]["content"][0][
                "text"
            ]

    seen: dict[str, list[list[tuple[str, str]]]] = {}
    for sample, groups in GOLD.items():
        url = tagged(sample) if tagged else base
        if groups[0] == ["slow_task"]:
            first = [("slow_task", task(url))]
            seen[sample] = [first, *anyio.run(sdk, url, groups[1:])]
        else:
            seen[sample] = anyio.run(sdk, url, groups)
    return seen


def test_emr_through_the_proxy_equals_the_direct_run(upstream, proxy):
    from finmcp.evaluator.inputs.model import Call
    from finmcp.evaluator.inputs.trace_db import load_predictions_db
    from finmcp.evaluator.metrics.finmcp import paper_emr

    run = "emr"
    direct = _drive(upstream, None)
    proxied = _drive(proxy.base, lambda sample: proxy.tagged(run, sample, 0))
    assert proxied == direct  # the client got the same final outputs either way

    def gold(sample: str) -> list[list[list[Call]]]:
        return [[[Call(name) for name in group] for group in GOLD[sample]]]

    direct_emr = {  # the direct run: the calls the client made, as it made them
        s: paper_emr([[[Call(tool) for tool, _ in g] for g in groups]], gold(s))
        for s, groups in direct.items()
    }
    _settled(proxy.db, run, sum(len(g) for groups in GOLD.values() for g in groups))
    preds = load_predictions_db(proxy.db, run).by_sample
    traced_emr = {s: paper_emr(preds[s][0].turns, gold(s)) for s in GOLD}
    assert direct_emr == {s: 1 for s in GOLD}
    assert traced_emr == direct_emr
    # each traced call carries the output the client got
    for sample, groups in direct.items():
        traced = preds[sample][0].turns[0]
        assert [[c.tool for c in g] for g in traced] == [[tool for tool, _ in g] for g in groups]
        for traced_group, group in zip(traced, groups, strict=True):
            for call, (_tool, text) in zip(traced_group, group, strict=True):
                assert call.status == "ok" and text in json.dumps(call.output), (call, text)
