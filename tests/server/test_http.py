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

from recordings import RecordingStore
from server.service import PROVENANCE_KEY, SOURCE_KEY
from server.testing import ServerProcess, minimal_instance
from tool_specs.inventory import load_inventory

MODES = ["auto", "legacy"]
TIME = {"currentTime": "2025-08-28 10:00:00", "date": "2025-08-28", "timestamp": 1756346400000}
TIME_TEXT = json.dumps(TIME, ensure_ascii=False, indent=2)
COUNTS = {"finmcp65": 65, "qieman79": 79, "fintool760": 760}
MODERN = "2026-07-28"


def text_result(text, structured):
    return {"content": [{"type": "text", "text": text}], "structuredContent": structured, "isError": False}


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
        store.put_response(
            "qieman79", "GetCurrentTime", {}, text_result(TIME_TEXT, TIME), "imported:unit.json"
        )
        store.put_response(
            "fintool760", name, arguments, text_result(json.dumps(output), output), "recorded:unit-upstream"
        )
    return path


@pytest.fixture(scope="module")
def multi(recordings):
    args = ["--inventory", "finmcp65", "--inventory", "qieman79", "--inventory", "fintool760"]
    with ServerProcess(
        [*args, "--miss", "strict", "--recordings", str(recordings), "--latency", "none"]
    ) as proc:
        yield proc


@pytest.fixture(scope="module")
def json_server(recordings):
    args = ["--json-response", "--miss", "strict", "--recordings", str(recordings), "--latency", "none"]
    with ServerProcess(args) as proc:
        yield proc


@pytest.fixture(scope="module")
def slow(recordings):
    args = ["--miss", "strict", "--recordings", str(recordings), "--latency", "fixed:1500"]
    with ServerProcess([*args, "--token", "s3cret", "--max-body", "20000"]) as proc:
        yield proc


def authed(url, token="s3cret"):
    return streamable_http_client(
        url, http_client=httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
    )


def modern_post(base_url, body, extra_headers=None):
    """One raw 2026-07-28 POST (no session): returns (status, headers, body bytes)."""
    params = body.setdefault("params", {})
    params["_meta"] = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": body["method"],
        **({"Mcp-Name": params["name"]} if "name" in params else {}),
        **(extra_headers or {}),
    }
    with httpx2.Client(timeout=10) as client:
        response = client.post(base_url, content=json.dumps(body), headers=headers)
        return response.status_code, response.headers, response.content


# ---------------------------------------------------------------- listing


def unlimited(url):
    """The SDK's HTTP transport without its 1 MiB SSE event cap (the 760-tool listing is ~1.4 MB)."""
    return streamable_http_client(url, max_sse_event_size=None)


@pytest.mark.parametrize("mode", MODES)
def test_each_inventory_lists_all_its_tools(multi, mode):
    async def main():
        for name, count in COUNTS.items():
            async with Client(unlimited(multi.endpoint(f"/{name}/mcp")), mode=mode) as client:
                assert client.protocol_version == (MODERN if mode == "auto" else "2025-11-25")
                listed = await client.list_tools()
                assert len(listed.tools) == count and listed.next_cursor is None
                assert len({t.name for t in listed.tools}) == count
                tool = listed.tools[-1]
                assert tool.annotations is not None and tool.output_schema is not None
                assert set(tool.meta["io.finmcp/tags"]) >= {"timeliness", "intent_type", "regulatory_domains"}

    anyio.run(main)


def test_big_listing_needs_pages_or_json_for_default_legacy_sse_clients(multi, recordings):
    async def too_big():
        async with Client(multi.endpoint("/fintool760/mcp"), mode="legacy") as client:
            await client.list_tools()

    with pytest.raises(ExceptionGroup) as caught:
        anyio.run(too_big)
    assert caught.group_contains(MCPError, match="byte limit", depth=2)

    async def paged(url):
        async with Client(url, mode="legacy") as client:
            names, cursor = [], None
            for _ in range(10):
                page = await client.list_tools(cursor=cursor)
                names += [t.name for t in page.tools]
                if (cursor := page.next_cursor) is None:
                    return names
        return names

    args = ["--inventory", "fintool760", "--miss", "strict", "--latency", "none"]
    with ServerProcess([*args, "--page-size", "250"]) as proc:
        assert len(anyio.run(paged, proc.url)) == 760
    with ServerProcess([*args, "--json-response"]) as proc:
        assert len(anyio.run(paged, proc.url)) == 760


def test_routes_and_healthz(multi):
    health = multi.health()
    assert health["status"] == "ok" and health["inventories"] == COUNTS
    assert health["endpoints"] == ["/finmcp65/mcp", "/fintool760/mcp", "/qieman79/mcp"]
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
            assert replay.content[0].text == TIME_TEXT and replay.structured_content == TIME
            assert replay.meta[SOURCE_KEY] == "replay" and replay.meta[PROVENANCE_KEY] == "imported:unit.json"

            bad = await client.call_tool("SearchFunds", {"sortOrder": "up"})
            assert bad.is_error
            assert bad.content[0].text == (
                "Invalid arguments for SearchFunds: sortOrder: 'up' is not one of ['', '升序', '降序']"
            )

            with pytest.raises(MCPError) as caught:
                await client.call_tool("GetMoonPhase", {})
            assert caught.value.code == types.INVALID_PARAMS and "GetMoonPhase" in caught.value.message

            miss = await client.call_tool("GetFundDiagnosis", {"fundNameOrCode": "000001"})
            assert miss.is_error and miss.meta[SOURCE_KEY] == "miss"
            assert miss.content[0].text.startswith("No recording for these arguments: GetFundDiagnosis")

        name, arguments, output = fintool_call
        async with Client(unlimited(multi.endpoint("/fintool760/mcp")), mode=mode) as client:
            result = await client.call_tool(name, arguments)
            assert (
                result.structured_content == output
                and result.meta[PROVENANCE_KEY] == "recorded:unit-upstream"
            )

    anyio.run(main)


def test_same_call_twice_gives_identical_bytes(multi, json_server):
    for url in (multi.endpoint("/finmcp65/mcp"), json_server.url):
        body = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "GetCurrentTime", "arguments": {}},
        }
        first = modern_post(url, json.loads(json.dumps(body)))
        second = modern_post(url, json.loads(json.dumps(body)))
        assert first[0] == 200 and first[1]["content-type"].startswith("application/json")
        assert first[2] == second[2]
        payload = json.loads(first[2])
        assert payload["result"]["content"][0]["text"] == TIME_TEXT
        miss = {
            "jsonrpc": "2.0",
            "id": 8,
            "method": "tools/call",
            "params": {"name": "GetFundDiagnosis", "arguments": {"fundNameOrCode": "1"}},
        }
        assert (
            modern_post(url, json.loads(json.dumps(miss)))[2]
            == modern_post(url, json.loads(json.dumps(miss)))[2]
        )


@pytest.mark.parametrize("mode", MODES)
def test_json_response_mode(json_server, mode):
    async def main():
        async with Client(json_server.url, mode=mode) as client:
            assert len((await client.list_tools()).tools) == 65
            result = await client.call_tool("GetCurrentTime", {})
            assert result.structured_content == TIME

    anyio.run(main)
    assert json_server.health()["endpoints"] == ["/finmcp65/mcp", "/mcp"]


# ---------------------------------------------------------------- latency, progress, cancellation, security


@pytest.mark.parametrize("mode", MODES)
def test_progress_and_cancellation(slow, mode):
    updates = []

    async def on_progress(progress, total, message):
        updates.append((progress, total))

    before = slow.health()["calls"]["finmcp65"].get("cancelled", 0)

    async def main():
        async with Client(authed(slow.url), mode=mode) as client:
            started = anyio.current_time()
            result = await client.call_tool("GetCurrentTime", {}, progress_callback=on_progress)
            assert anyio.current_time() - started >= 1.4
            assert result.structured_content == TIME
            with pytest.raises(MCPError):
                await client.call_tool("GetCurrentTime", {}, read_timeout_seconds=0.3)

    anyio.run(main)
    assert len(updates) >= 4 and updates[-1] == (pytest.approx(1500), pytest.approx(1500))
    for _ in range(50):  # the courtesy cancel / closed stream reaches the server shortly after
        if slow.health()["calls"]["finmcp65"].get("cancelled", 0) > before:
            break
        anyio.run(anyio.sleep, 0.05)
    assert slow.health()["calls"]["finmcp65"]["cancelled"] == before + 1


def test_client_disconnect_mid_call_leaves_the_server_healthy(slow):
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "GetCurrentTime", "arguments": {}},
    }
    with pytest.raises(httpx2.TimeoutException):
        modern_post_with_timeout(slow.url, body, timeout=0.3)
    status, _, raw = modern_post(slow.url, json.loads(json.dumps(body)), {"Authorization": "Bearer s3cret"})
    assert status == 200 and json.loads(raw)["result"]["structuredContent"] == TIME


def modern_post_with_timeout(url, body, timeout):
    params = body.setdefault("params", {})
    params["_meta"] = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": params["name"],
        "Authorization": "Bearer s3cret",
    }
    with httpx2.Client(timeout=timeout) as client:
        return client.post(url, content=json.dumps(body), headers=headers)


def test_token_host_origin_and_body_limit(slow):
    list_body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    status, headers, _ = modern_post(slow.url, dict(list_body))
    assert status == 401 and headers["www-authenticate"].startswith("Bearer")
    assert modern_post(slow.url, dict(list_body), {"Authorization": "Bearer nope"})[0] == 401
    auth = {"Authorization": "Bearer s3cret"}
    status, _, raw = modern_post(slow.url, dict(list_body), auth)
    assert status == 200 and len(json.loads(raw)["result"]["tools"]) == 65
    assert modern_post(slow.url, dict(list_body), {**auth, "Host": "attacker.example"})[0] == 421
    assert modern_post(slow.url, dict(list_body), {**auth, "Origin": "http://attacker.example"})[0] == 403
    assert (
        modern_post(slow.url, dict(list_body), {**auth, "Origin": f"http://localhost:{slow.port}"})[0] == 200
    )
    huge = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "SearchFunds", "arguments": {"keyword": "x" * 30000}},
    }
    assert modern_post(slow.url, huge, auth)[0] == 413
    assert slow.health()["status"] == "ok"  # /healthz needs no token

    async def main():
        with pytest.raises(ExceptionGroup) as caught:  # the SDK client reports the 401 as an error response
            async with Client(slow.url, mode="legacy") as client:
                await client.list_tools()
        assert caught.group_contains(MCPError, match="error response", depth=2)

    anyio.run(main)
