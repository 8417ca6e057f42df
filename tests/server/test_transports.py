"""``finmcp-server`` over stdio and the legacy SSE transport, in both protocol eras, as real processes."""

from __future__ import annotations

import json
import sys

import anyio
import pytest
from mcp.client import Client
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from recordings import RecordingStore
from server.service import SOURCE_KEY
from server.testing import ServerProcess

MODES = ["auto", "legacy"]
TIME = {"currentTime": "2025-08-28 10:00:00", "date": "2025-08-28", "timestamp": 1756346400000}


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    path = tmp_path_factory.mktemp("rec") / "recordings.sqlite"
    result = {
        "content": [{"type": "text", "text": json.dumps(TIME)}],
        "structuredContent": TIME,
        "isError": False,
    }
    with RecordingStore.open(path) as store:
        store.put_response("qieman79", "GetCurrentTime", {}, result, "imported:unit.json")
    return path


@pytest.fixture(scope="module")
def sse_server(recordings):
    # --page-size: the SDK's legacy SSE client caps one event at 1 MiB; the 760-tool listing is ~1.4 MB
    args = [
        "--transport",
        "sse",
        "--inventory",
        "finmcp65",
        "--inventory",
        "fintool760",
        "--page-size",
        "300",
    ]
    with ServerProcess(
        [*args, "--miss", "strict", "--recordings", str(recordings), "--latency", "none"]
    ) as proc:
        yield proc


async def list_all(client):
    tools, cursor = [], None
    for _ in range(10):
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        if (cursor := page.next_cursor) is None:
            break
    return tools


async def exercise(client, count):
    tools = await list_all(client)
    assert len(tools) == count and len({t.name for t in tools}) == count
    if count == 65:
        replay = await client.call_tool("GetCurrentTime", {})
        assert replay.structured_content == TIME and replay.meta[SOURCE_KEY] == "replay"
        bad = await client.call_tool("SearchFunds", {"sortOrder": "up"})
        assert bad.is_error and "sortOrder: 'up' is not one of" in bad.content[0].text
        with pytest.raises(MCPError, match="NoSuchTool"):
            await client.call_tool("NoSuchTool", {})
    else:
        miss = await client.call_tool(tools[0].name, {})
        assert miss.meta[SOURCE_KEY] in ("miss", "invalid") and miss.is_error


@pytest.mark.parametrize("mode", MODES)
def test_legacy_sse_transport(sse_server, mode):
    async def main():
        for name, count in (("finmcp65", 65), ("fintool760", 760)):
            async with Client(sse_client(sse_server.endpoint(f"/{name}/sse")), mode=mode) as client:
                await exercise(client, count)

    anyio.run(main)
    assert sse_server.health()["endpoints"] == [
        "/finmcp65/messages/",
        "/finmcp65/sse",
        "/fintool760/messages/",
        "/fintool760/sse",
    ]


@pytest.mark.parametrize("mode", MODES)
def test_stdio_transport(recordings, mode):
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "server", "--transport", "stdio", "--miss", "strict", "--recordings", str(recordings)]
        + ["--latency", "none"],
    )

    async def main():
        with anyio.fail_after(30):
            async with Client(params, mode=mode) as client:
                assert client.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
                await exercise(client, 65)

    anyio.run(main)


def test_start_up_errors_are_clear(recordings, tmp_path):
    from server.testing import ServerStartError

    cases = [
        (["--miss", "strict", "--recordings", str(tmp_path / "none.sqlite")], "no such file"),
        (["--miss", "strict", "--latency", "slow"], "--latency 'slow'"),
        (["--miss", "strict", "--faults", "Get*:boom=1"], "unknown fault kind 'boom'"),
        (["--miss", "strict", "--inventory", "nope"], "--inventory nope"),
        (["--miss", "strict", "--page-size", "0"], "--page-size 0"),
    ]
    for args, needle in cases:
        with pytest.raises(ServerStartError) as caught:
            ServerProcess(args, timeout=20).start()
        assert needle in str(caught.value) and "exited with 2" in str(caught.value)


def test_simulate_without_the_simulator_fails_at_start_up(monkeypatch):
    from server.serve import ServeError, _world

    monkeypatch.setitem(sys.modules, "server.sim.known_codes", None)  # a broken install: import fails
    with pytest.raises(ServeError, match=r"--miss simulate needs the simulator \(server.sim\)"):
        _world(0, None)
