"""The start-up check of what the tools/call fast path relies on in the mcp SDK (server.sdk_check).

On the installed SDK the probe finds nothing. When the SDK is not what the fast path was built on (a
later minor version, a runner that shapes results differently, a transport that keeps its idle
countdown elsewhere) it names the problem, and the server takes the SDK's path for every call with a
warning in the log.
"""

from __future__ import annotations

import logging
import re
from collections.abc import MutableMapping
from typing import Any

import anyio
import pytest
from mcp.server.runner import ServerRunner
from mcp.server.streamable_http import StreamableHTTPServerTransport

from finmcp.server import sdk_check
from finmcp.server.app import build_http_app
from finmcp.server.latency import parse_latency
from finmcp.server.service import ToolService
from finmcp.tool_specs.inventory import load_inventory


def test_the_installed_sdk_is_what_the_fast_path_relies_on() -> None:
    assert anyio.run(sdk_check.check_fast_path) == []


def test_another_sdk_minor_version_turns_the_fast_path_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sdk_check.metadata, "version", lambda name: "2.4.0")
    problems = anyio.run(sdk_check.check_fast_path)
    assert problems == ["mcp 2.4.0 is installed; the fast path was verified against mcp 2.3"]


def test_a_runner_that_shapes_results_differently_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """A later SDK stamping something more on every result: the fast path would not, so it goes off."""
    shape = ServerRunner._serialize

    def stamped(self: Any, method: str, version: str, result: Any) -> dict[str, Any]:
        return {**shape(self, method, version, result), "stampedBy": "a later SDK"}

    monkeypatch.setattr(ServerRunner, "_serialize", stamped)
    problems = anyio.run(sdk_check.check_fast_path)
    assert problems and all("the fast path answered" in p for p in problems), problems
    assert any("2026-07-28 tools/call" in p for p in problems)
    assert any("2025-11-25 tools/call" in p for p in problems)


def test_a_transport_that_keeps_its_idle_countdown_elsewhere_is_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def handle_request(self: Any, scope: Any, receive: Any, send: Any) -> None:
        await self._handle_request(scope, receive, send)  # no in-flight count, no countdown

    monkeypatch.setattr(StreamableHTTPServerTransport, "handle_request", handle_request)
    problems = anyio.run(sdk_check.check_fast_path)
    assert len(problems) == 1, problems
    assert re.fullmatch(
        r"while the SDK answers a request the session's \(in flight, idle deadline\) is \(0, [0-9.]+\), "
        r"not \(1, inf\)",
        problems[0],
    ), problems


def test_the_server_takes_the_sdks_path_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(sdk_check.metadata, "version", lambda name: "3.0.0")
    service = ToolService(load_inventory("finmcp65"), miss="strict", latency=parse_latency("none"))
    app = build_http_app({"finmcp65": service})
    http_app: Any = app.app
    assert set(http_app.fast) == {"/finmcp65/mcp", "/mcp"}

    async def start_and_stop() -> list[str]:
        incoming = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
        sent: list[str] = []

        async def receive() -> dict[str, str]:
            return incoming.pop(0)

        async def send(message: MutableMapping[str, Any]) -> None:
            sent.append(message["type"])

        await app({"type": "lifespan"}, receive, send)
        return sent

    with caplog.at_level(logging.WARNING, logger="finmcp.server"):
        assert anyio.run(start_and_stop) == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert http_app.fast == {}
    assert "tools/call fast path off, every call takes the SDK's path: mcp 3.0.0 is installed" in caplog.text
