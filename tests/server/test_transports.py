"""``finmcp-server`` over stdio and the legacy SSE transport, in both protocol eras, as real processes."""

from __future__ import annotations

import sys

import anyio
import pytest
from mcp.client import Client
from mcp.client.sse import sse_client
from mcp.shared.exceptions import MCPError

from finmcp.server.service import SOURCE_KEY
from finmcp.server.testing import ServerProcess
from tests.server.recorded_time import TIME
from tests.support.processes import health
from tests.support.scripts import server_stdio

MODES = ["auto", "legacy"]


@pytest.fixture(scope="module")
def sse_server(recorded_time, module_children):
    # default --page-size auto: the SDK's legacy SSE client caps one event at 1 MiB (the 760-tool
    # listing is ~1.6 MB), so fintool760 is listed in pages and finmcp65 in one
    args = ["--transport", "sse", "--inventory", "finmcp65", "--inventory", "fintool760"]
    return module_children.server(
        [*args, "--miss", "strict", "--recordings", str(recorded_time), "--latency", "none"]
    )


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
    assert health(sse_server)["endpoints"] == [
        "/finmcp65/messages/",
        "/finmcp65/sse",
        "/fintool760/messages/",
        "/fintool760/sse",
    ]


@pytest.mark.parametrize("mode", MODES)
def test_stdio_transport(recorded_time, mode):
    params = server_stdio("--miss", "strict", "--recordings", str(recorded_time), "--latency", "none")

    async def main():
        with anyio.fail_after(30):
            async with Client(params, mode=mode) as client:
                assert client.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
                await exercise(client, 65)

    anyio.run(main)


@pytest.mark.slow
def test_start_up_errors_are_clear(recorded_time, tmp_path):
    """Start-up itself is under test here, so the launcher is used directly (no running child to check)."""
    from finmcp.server.testing import ServerStartError

    cases = [
        (["--miss", "strict", "--recordings", str(tmp_path / "none.sqlite")], "no such file"),
        (["--miss", "strict", "--latency", "slow"], "--latency 'slow'"),
        (["--miss", "strict", "--faults", "Get*:boom=1"], "unknown fault kind 'boom'"),
        (["--miss", "strict", "--inventory", "nope"], "--inventory nope"),
        (["--miss", "strict", "--page-size", "-1"], "argument --page-size: '-1': expected auto, 0"),
    ]
    for args, needle in cases:
        with pytest.raises(ServerStartError) as caught:
            ServerProcess(args, timeout=20).start()
        assert needle in str(caught.value) and "exited with 2" in str(caught.value)
        assert "Traceback" not in str(caught.value)  # a clear message, not a crash


def test_simulate_without_the_simulator_fails_at_start_up(monkeypatch):
    from finmcp.server.serve import ServeError, _world

    monkeypatch.setitem(
        sys.modules, "finmcp.server.sim.entity_harvest", None
    )  # a broken install: import fails
    with pytest.raises(ServeError, match=r"--miss simulate needs the simulator \(server.sim\)"):
        _world(0, None)
