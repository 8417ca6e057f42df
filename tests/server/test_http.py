"""``finmcp-server`` over Streamable HTTP, as a real process on loopback, with the SDK's own client."""

from __future__ import annotations

import json

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from finmcp.recordings import RecordingStore
from finmcp.server.service import PROVENANCE_KEY, SOURCE_KEY
from finmcp.server.testing import minimal_instance
from finmcp.tool_specs.inventory import load_inventory
from tests.server.recorded_time import TIME, TIME_TEXT, record_time, text_result
from tests.support.polling import wait_for
from tests.support.processes import health
from tests.support.rpc import MODERN, modern_message, modern_post
from tests.support.sdk import first_text

MODES = ["auto", "legacy"]
COUNTS = {"finmcp65": 65, "qieman79": 79, "fintool760": 760}
AUTH = {"Authorization": "Bearer s3cret"}


@pytest.fixture(scope="module")
def fintool_call():
    """A fintool760 tool with minimal valid arguments and a valid recorded output."""
    tool = load_inventory("fintool760").tools[0]
    arguments = minimal_instance(tool.input_schema)
    output = minimal_instance(tool.output_schema)
    return tool.name, arguments, output


@pytest.fixture(scope="module")
def recordings(tmp_path_factory, fintool_call):
    path = tmp_path_factory.mktemp("rec") / "recordings.sqlite"
    name, arguments, output = fintool_call
    with RecordingStore.open(path) as store:
        record_time(store)
        store.put_response(
            "fintool760", name, arguments, text_result(json.dumps(output), output), "recorded:unit-upstream"
        )
    return path


@pytest.fixture(scope="module")
def multi(recordings, module_children):
    args = ["--inventory", "finmcp65", "--inventory", "qieman79", "--inventory", "fintool760"]
    return module_children.server(
        [*args, "--miss", "strict", "--recordings", str(recordings), "--latency", "none"]
    )


@pytest.fixture(scope="module")
def json_server(recordings, module_children):
    args = ["--json-response", "--miss", "strict", "--recordings", str(recordings), "--latency", "none"]
    return module_children.server(args)


@pytest.fixture(scope="module")
def slow(recordings, module_children):
    args = ["--miss", "strict", "--recordings", str(recordings), "--latency", "fixed:1500"]
    return module_children.server([*args, "--token", "s3cret", "--max-body", "20000"])


def authed(url, token="s3cret"):
    return streamable_http_client(
        url, http_client=httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
    )


def cancelled(server) -> int:
    return health(server)["calls"]["finmcp65"].get("cancelled", 0)


# ---------------------------------------------------------------- listing


@pytest.mark.parametrize("mode", MODES)
def test_each_inventory_lists_all_its_tools(multi, mode):
    """With the SDK client's default transport (1 MiB SSE event cap): fintool760's listing is ~1.6 MB."""

    async def main():
        for name, count in COUNTS.items():
            async with Client(multi.endpoint(f"/{name}/mcp"), mode=mode) as client:
                assert client.protocol_version == (MODERN if mode == "auto" else "2025-11-25")
                listed = await client.list_tools()
                assert len(listed.tools) == count and listed.next_cursor is None
                assert len({t.name for t in listed.tools}) == count
                tool = listed.tools[-1]
                assert tool.annotations is not None and tool.output_schema is not None
                assert set(tool.meta["io.finmcp/tags"]) >= {"timeliness", "intent_type", "regulatory_domains"}

    anyio.run(main)


@pytest.mark.slow
def test_page_size_pages_the_listing_for_sdk_clients(server_process):
    async def paged(url):
        async with Client(url, mode="legacy") as client:
            sizes, cursor = [], None
            for _ in range(10):
                page = await client.list_tools(cursor=cursor)
                sizes.append(len(page.tools))
                if (cursor := page.next_cursor) is None:
                    return sizes
        return sizes

    args = ["--inventory", "fintool760", "--miss", "strict", "--latency", "none"]
    assert anyio.run(paged, server_process([*args, "--page-size", "250"]).url) == [250, 250, 250, 10]
    assert anyio.run(paged, server_process([*args, "--json-response"]).url) == [760]


def test_routes_and_healthz(multi):
    healthz = health(multi)
    assert healthz["status"] == "ok" and healthz["inventories"] == COUNTS
    assert healthz["endpoints"] == ["/finmcp65/mcp", "/fintool760/mcp", "/qieman79/mcp"]
    with httpx2.Client() as client:
        missing = client.post(
            multi.endpoint("/mcp"), content=b"{}", headers={"Content-Type": "application/json"}
        )
    assert missing.status_code == 404 and "/finmcp65/mcp" in missing.json()["endpoints"]


# ---------------------------------------------------------------- calls


@pytest.mark.parametrize("mode", MODES)
def test_calls_replay_validate_and_reject(multi, fintool_call, mode):
    async def main():
        async with Client(multi.endpoint("/finmcp65/mcp"), mode=mode) as client:
            replay = await client.call_tool("GetCurrentTime", {})
            assert first_text(replay) == TIME_TEXT and replay.structured_content == TIME
            assert replay.meta[SOURCE_KEY] == "replay" and replay.meta[PROVENANCE_KEY] == "imported:unit.json"

            bad = await client.call_tool("SearchFunds", {"sortOrder": "up"})
            assert bad.is_error
            assert first_text(bad) == (
                "Invalid arguments for SearchFunds: sortOrder: 'up' is not one of ['', '升序', '降序']"
            )

            with pytest.raises(MCPError) as caught:
                await client.call_tool("GetMoonPhase", {})
            assert caught.value.code == types.INVALID_PARAMS and "GetMoonPhase" in caught.value.message

            miss = await client.call_tool("GetFundDiagnosis", {"fundNameOrCode": "000001"})
            assert miss.is_error and miss.meta[SOURCE_KEY] == "miss"
            assert first_text(miss).startswith("No recording for these arguments: GetFundDiagnosis")

        name, arguments, output = fintool_call
        async with Client(multi.endpoint("/fintool760/mcp"), mode=mode) as client:
            result = await client.call_tool(name, arguments)
            assert (
                result.structured_content == output
                and result.meta[PROVENANCE_KEY] == "recorded:unit-upstream"
            )

    anyio.run(main)


def test_same_call_twice_gives_identical_bytes(multi, json_server):
    call = modern_message("tools/call", {"name": "GetCurrentTime", "arguments": {}}, 7, client="raw-test")
    miss_params = {"name": "GetFundDiagnosis", "arguments": {"fundNameOrCode": "1"}}
    miss = modern_message("tools/call", miss_params, 8, client="raw-test")
    for url in (multi.endpoint("/finmcp65/mcp"), json_server.url):
        first, second = modern_post(url, call), modern_post(url, call)
        assert first.status_code == 200 and first.headers["content-type"].startswith("application/json")
        assert first.content == second.content
        assert first.json()["result"]["content"][0]["text"] == TIME_TEXT
        first_miss, second_miss = modern_post(url, miss), modern_post(url, miss)
        assert first_miss.json()["result"]["isError"] is True
        assert first_miss.content == second_miss.content


@pytest.mark.parametrize("mode", MODES)
def test_json_response_mode(json_server, mode):
    async def main():
        async with Client(json_server.url, mode=mode) as client:
            assert len((await client.list_tools()).tools) == 65
            result = await client.call_tool("GetCurrentTime", {})
            assert result.structured_content == TIME

    anyio.run(main)
    assert health(json_server)["endpoints"] == ["/finmcp65/mcp", "/mcp"]


# ---------------------------------------------------------------- latency, progress, cancellation, security


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_progress_and_cancellation(slow, mode):
    updates = []

    async def on_progress(progress, total, message):
        updates.append((progress, total))

    before = cancelled(slow)

    async def main():
        async with Client(authed(slow.url), mode=mode) as client:
            started = anyio.current_time()
            result = await client.call_tool("GetCurrentTime", {}, progress_callback=on_progress)
            assert anyio.current_time() - started >= 1.4
            assert result.structured_content == TIME
            with pytest.raises(MCPError):
                await client.call_tool("GetCurrentTime", {}, read_timeout_seconds=0.3)
            # the courtesy cancel reaches the server shortly after; the session stays open until it has
            await anyio.to_thread.run_sync(
                lambda: wait_for(lambda: cancelled(slow), lambda n: n > before, what="the cancelled count")
            )

    anyio.run(main)
    assert len(updates) >= 4 and updates[-1] == (pytest.approx(1500), pytest.approx(1500))
    assert cancelled(slow) == before + 1


def test_client_disconnect_mid_call_leaves_the_server_healthy(slow):
    call = modern_message("tools/call", {"name": "GetCurrentTime", "arguments": {}}, 1, client="raw-test")
    with pytest.raises(httpx2.TimeoutException):
        modern_post(slow.url, call, AUTH, timeout=0.3)  # leaves during the 1.5 s latency
    response = modern_post(slow.url, call, AUTH)
    assert response.status_code == 200 and response.json()["result"]["structuredContent"] == TIME


def test_token_host_origin_and_body_limit(slow):
    listing = modern_message("tools/list", {}, 1, client="raw-test")
    refused = modern_post(slow.url, listing)
    assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Bearer")
    assert modern_post(slow.url, listing, {"Authorization": "Bearer nope"}).status_code == 401
    listed = modern_post(slow.url, listing, AUTH)
    assert listed.status_code == 200 and len(listed.json()["result"]["tools"]) == 65
    assert modern_post(slow.url, listing, {**AUTH, "Host": "attacker.example"}).status_code == 421
    assert modern_post(slow.url, listing, {**AUTH, "Origin": "http://attacker.example"}).status_code == 403
    local = {**AUTH, "Origin": f"http://localhost:{slow.port}"}
    assert modern_post(slow.url, listing, local).status_code == 200
    huge_params = {"name": "SearchFunds", "arguments": {"keyword": "x" * 30000}}
    assert modern_post(slow.url, modern_message("tools/call", huge_params, 2), AUTH).status_code == 413
    assert health(slow)["status"] == "ok"  # /healthz needs no token

    async def main():
        with pytest.raises(ExceptionGroup) as caught:  # the SDK client reports the 401 as an error response
            async with Client(slow.url, mode="legacy") as client:
                await client.list_tools()
        assert caught.group_contains(MCPError, match="error response", depth=2)

    anyio.run(main)
