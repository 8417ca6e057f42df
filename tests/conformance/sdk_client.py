"""The suite's client scenarios played by the mcp SDK's ``Client``, direct or through finmcp-proxy.

:func:`play` plays one scenario (handshake era: the suite's servers speak 2025-xx) against a URL; with
``proxy_db`` it first starts ``finmcp-proxy --upstream URL --db DB --run conformance`` on loopback
and talks to the proxy instead, so the same scenario runs direct and through the proxy. The suite's
URLs say ``localhost``; the client uses 127.0.0.1 (tests reach nothing else, and the suite's servers
are bound there by ``loopback.mjs``).

``tests/conformance/client.py`` is the command the suite runs. The SDK takes over a second of CPU to
import, so the tests run :class:`ClientService` in their own process, and ``client.py`` only hands
it the scenario and URL (a standalone ``client.py`` plays the scenario itself).
"""

from __future__ import annotations

import json
import socketserver
import threading
import traceback
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Self

import anyio
from mcp.client import Client
from mcp.client.session import ClientRequestContext
from mcp_types import ElicitRequestParams, ElicitResult

from finmcp.proxy.testing import ProxyProcess

Scenario = Callable[[str], Awaitable[None]]
RUN = "conformance"  # the run tag of the proxy's trace rows


async def list_tools_only(url: str) -> None:
    """``initialize``: connect, list the tools, leave."""
    async with Client(url, mode="legacy") as client:
        await client.list_tools()


async def call_every_tool(url: str) -> None:
    """``tools_call`` (and ``sse-retry``): list the tools and call each with the arguments it needs."""
    async with Client(url, mode="legacy") as client:
        for tool in (await client.list_tools()).tools:
            arguments = {"a": 5, "b": 3} if tool.name == "add_numbers" else {}
            await client.call_tool(tool.name, arguments)


async def apply_elicitation_defaults(
    context: ClientRequestContext, params: ElicitRequestParams
) -> ElicitResult:
    """Accept an elicitation with every ``default`` its requested schema declares (SEP-1034)."""
    schema: dict[str, Any] = getattr(params, "requested_schema", None) or {}
    properties: dict[str, Any] = schema.get("properties", {}) if isinstance(schema, dict) else {}
    content = {name: spec["default"] for name, spec in properties.items() if "default" in spec}
    return ElicitResult(action="accept", content=content)


async def elicitation_defaults(url: str) -> None:
    """``elicitation-sep1034-client-defaults``: call the test tool, answering its elicitation with defaults."""
    async with Client(url, mode="legacy", elicitation_callback=apply_elicitation_defaults) as client:
        for tool in (await client.list_tools()).tools:
            await client.call_tool(tool.name, {})


SCENARIOS: dict[str, Scenario] = {
    "initialize": list_tools_only,
    "tools_call": call_every_tool,
    "sse-retry": call_every_tool,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
}


def loopback(url: str) -> str:
    """``url`` with the host ``localhost`` spelled 127.0.0.1."""
    return url.replace("://localhost:", "://127.0.0.1:", 1)


def play(scenario: str, url: str, proxy_db: str | None = None) -> None:
    """Play ``scenario`` against ``url`` (through a new finmcp-proxy writing ``proxy_db``, if given)."""
    handler = SCENARIOS.get(scenario)
    if handler is None:
        raise LookupError(f"no handler for scenario {scenario!r} (known: {', '.join(SCENARIOS)})")
    url = loopback(url)
    with ExitStack() as stack:
        if proxy_db:
            proxy = stack.enter_context(ProxyProcess(["--upstream", url, "--db", proxy_db, "--run", RUN]))
            url = proxy.url
        anyio.run(handler, url)


class _Play(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        request = json.loads(self.rfile.readline())
        try:
            play(request["scenario"], request["url"], request.get("proxy_db"))
            answer: dict[str, int | str] = {"exit": 0}
        except Exception:
            answer = {"exit": 1, "error": traceback.format_exc()}
        self.wfile.write(json.dumps(answer).encode() + b"\n")


class ClientService(socketserver.ThreadingTCPServer):
    """Plays scenarios for ``client.py`` on 127.0.0.1 (one thread each); ``with`` starts and stops it.

    Its address goes to ``client.py`` in :data:`SERVICE_ENV` (``host:port``).
    """

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Play)
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def address(self) -> str:
        host, port = self.server_address[:2]
        return f"{host!s}:{port}"

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()


SERVICE_ENV = "FINMCP_CONFORMANCE_CLIENT_SERVICE"
CLIENT = Path(__file__).resolve().parent / "client.py"
