"""The 760-tool listing reaches every kind of client with the server's defaults (real processes, real clients).

The mcp SDK's clients refuse one SSE event over 1 MiB (``streamable_http_client`` by default,
``sse_client`` always); the 760-tool listing is ~1.6 MB of JSON. So by default the server answers
``tools/list`` on Streamable HTTP with a JSON body (both eras, one page), pages it under the cap on
the legacy SSE transport (clients follow ``nextCursor``), and serves it whole on stdio.
``--page-size 0`` still serves one page everywhere, ``--page-size N`` pages by N tools.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.sse import sse_client

from finmcp.evaluator.harness.mcp_client import McpHttpClient
from finmcp.proxy.cli import main as proxy_main
from finmcp.recordings import RecordingStore
from finmcp.recordings.plumbing.sse import SSEParser
from finmcp.server.service import SOURCE_KEY
from finmcp.server.testing import minimal_instance
from finmcp.tool_specs.inventory import load_inventory
from tests.server.recorded_time import text_result
from tests.support.rpc import ACCEPT, HANDSHAKE, initialize
from tests.support.scripts import server_stdio
from tests.support.traces import wait_calls

MODES = ["auto", "legacy"]
SDK_EVENT_CAP = 1024 * 1024  # mcp.client.streamable_http.DEFAULT_MAX_SSE_EVENT_SIZE, sse_client's fixed cap
COUNT = 760


@pytest.fixture(scope="module")
def last_tool():
    """The inventory's last tool (on the last page whenever the listing is paged) and a valid call of it."""
    tool = load_inventory("fintool760").tools[-1]
    return tool.name, minimal_instance(tool.input_schema), minimal_instance(tool.output_schema)


@pytest.fixture(scope="module")
def recordings(tmp_path_factory, last_tool):
    path = tmp_path_factory.mktemp("rec") / "recordings.sqlite"
    name, arguments, output = last_tool
    with RecordingStore.open(path) as store:
        store.put_response(
            "fintool760", name, arguments, text_result(json.dumps(output), output), "recorded:unit"
        )
    return path


def serve_args(recordings, *extra: str) -> list[str]:
    return [
        "--inventory",
        "fintool760",
        "--miss",
        "strict",
        "--recordings",
        str(recordings),
        "--latency",
        "none",
        *extra,
    ]


@pytest.fixture(scope="module")
def http_server(recordings, module_children):
    return module_children.server(serve_args(recordings))


@pytest.fixture(scope="module")
def sse_server(recordings, module_children):
    return module_children.server(serve_args(recordings, "--transport", "sse"))


async def list_all(client: Client) -> tuple[list[str], int]:
    """Every tool name, following ``nextCursor`` as the SDK's users must; and the number of pages."""
    names: list[str] = []
    cursor: str | None = None
    for pages in range(1, 100):
        page = await client.list_tools(cursor=cursor)
        names += [t.name for t in page.tools]
        if (cursor := page.next_cursor) is None:
            return names, pages
    raise AssertionError("more than 99 pages")


async def call_last(client: Client, last_tool) -> None:
    """The last tool's recorded answer, validated by the SDK client against the listed output schema."""
    name, arguments, output = last_tool
    result = await client.call_tool(name, arguments)
    assert not result.is_error and result.meta[SOURCE_KEY] == "replay"
    assert result.structured_content == output


@pytest.mark.parametrize("mode", MODES)
def test_default_http_lists_all_tools_to_default_sdk_clients_in_both_eras(http_server, last_tool, mode):
    async def main():
        async with Client(http_server.url, mode=mode) as client:  # default transport: 1 MiB SSE event cap
            page = await client.list_tools()
            assert len(page.tools) == COUNT and page.next_cursor is None
            await call_last(client, last_tool)

    anyio.run(main)


def test_handshake_era_listing_is_answered_as_json_and_calls_still_stream(http_server, last_tool):
    """The mechanism: only ``tools/list`` leaves the SDK's SSE framing; a call still streams."""
    name, arguments, _ = last_tool
    with httpx2.Client(headers={"Accept": ACCEPT}) as http:
        opened = http.post(http_server.url, json=initialize())
        session = {"Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": HANDSHAKE}
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert http.post(http_server.url, json=note, headers=session).status_code == 202
        listed = http.post(
            http_server.url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=session
        )
        assert listed.status_code == 200 and listed.headers["content-type"] == "application/json"
        assert listed.headers["mcp-session-id"] == session["Mcp-Session-Id"]
        assert int(listed.headers["content-length"]) == len(listed.content) > SDK_EVENT_CAP
        assert len(listed.json()["result"]["tools"]) == COUNT and listed.json()["id"] == 2
        call = {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        called = http.post(http_server.url, json=call, headers=session)
        assert called.headers["content-type"].startswith("text/event-stream")


@pytest.mark.parametrize("mode", MODES)
def test_default_legacy_sse_pages_stay_under_the_sdk_clients_cap(sse_server, last_tool, mode):
    async def main():
        async with Client(sse_client(sse_server.endpoint("/sse")), mode=mode) as client:
            names, pages = await list_all(client)
            assert len(names) == len(set(names)) == COUNT and pages > 1
            await call_last(client, last_tool)

    anyio.run(main)


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_stdio_lists_all_tools_in_one_page(recordings, last_tool, mode):
    async def main():
        async with Client(server_stdio(*serve_args(recordings)), mode=mode) as client:
            page = await client.list_tools()
            assert len(page.tools) == COUNT and page.next_cursor is None
            await call_last(client, last_tool)

    anyio.run(main)


async def legacy_sse_listing(base: str) -> list[dict[str, Any]]:
    """Every ``tools/list`` result page of a legacy SSE server, read raw (no event cap)."""
    parser = SSEParser()
    async with (
        httpx2.AsyncClient(timeout=30) as http,
        http.stream("GET", f"{base}/sse", headers={"Accept": "text/event-stream"}) as stream,
    ):
        chunks = stream.aiter_bytes()

        async def next_event() -> Any:
            while True:
                events = parser.feed(await anext(chunks))
                if events:
                    assert len(events) == 1, events
                    return events[0]

        endpoint = (await next_event()).data.decode()
        assert (await http.post(base + endpoint, json=initialize())).status_code == 202
        assert json.loads((await next_event()).data)["id"] == 1
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await http.post(base + endpoint, json=note)
        pages: list[dict[str, Any]] = []
        cursor = None
        while True:
            request: dict[str, Any] = {"jsonrpc": "2.0", "id": 2 + len(pages), "method": "tools/list"}
            if cursor is not None:
                request["params"] = {"cursor": cursor}
            await http.post(base + endpoint, json=request)
            answer = json.loads((await next_event()).data)
            assert answer["id"] == request["id"]
            pages.append(answer["result"])
            if (cursor := answer["result"].get("nextCursor")) is None:
                return pages


@pytest.mark.slow
def test_page_size_0_serves_one_page_and_n_pages_by_n(recordings, sse_server, server_process):
    """Unpaginated stays available (legacy SSE included), and ``--page-size N`` still pages by N."""
    whole = server_process(serve_args(recordings, "--transport", "sse", "--page-size", "0"))
    pages = anyio.run(legacy_sse_listing, whole.base)
    assert len(pages) == 1 and len(pages[0]["tools"]) == COUNT
    by_300 = server_process(serve_args(recordings, "--transport", "sse", "--page-size", "300"))
    assert [len(p["tools"]) for p in anyio.run(legacy_sse_listing, by_300.base)] == [300, 300, 160]
    default = anyio.run(legacy_sse_listing, sse_server.base)
    assert sum(len(p["tools"]) for p in default) == COUNT
    assert all(len(json.dumps(p).encode()) < SDK_EVENT_CAP // 2 + 4096 for p in default)


@pytest.mark.slow
def test_harness_client_and_proxy_replay_see_every_tool_of_a_paged_server(
    recordings, last_tool, http_server, server_process, proxy_process, tmp_path
):
    paged = server_process(serve_args(recordings, "--page-size", "100"))

    async def harness_listings():
        client = McpHttpClient()
        try:
            return [len(await client.list_tools(url)) for url in (paged.url, http_server.url)]
        finally:
            await client.aclose()

    assert anyio.run(harness_listings) == [COUNT, COUNT]

    db = tmp_path / "runs.sqlite"
    proxy = proxy_process(["--upstream", http_server.url, "--db", str(db)])

    async def logged_call():
        async with Client(proxy.tagged("big", "s1", 0), mode="legacy") as client:
            page = await client.list_tools()  # the JSON listing passes the proxy as it is
            assert len(page.tools) == COUNT and page.next_cursor is None
            await call_last(client, last_tool)

    anyio.run(logged_call)
    assert wait_calls(db, "big", 1, settled=True)[0]["status"] == "ok"
    code = proxy_main(["audit", "--db", str(db), "--run", "big", "--against", paged.url, "--json"])
    assert code == 0
