"""The client the conformance suite's client scenarios run: ``python client.py [--proxy-db DB] URL``.

``conformance client --command "python client.py"`` starts one test server per scenario, appends its
URL and names the scenario in ``MCP_CONFORMANCE_SCENARIO``. This script plays that scenario with the
mcp SDK's ``Client`` (handshake era, the suite's servers speak 2025-xx). With ``--proxy-db DB`` it
first starts ``finmcp-proxy --upstream URL --db DB --run conformance`` on loopback and talks to the proxy instead, so the
same scenario runs direct and through the proxy. The suite's URLs say ``localhost``; the client uses
127.0.0.1 (tests reach nothing else, and the suite's servers are bound there by ``loopback.mjs``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from typing import Any

import anyio
from mcp.client import Client
from mcp.client.session import ClientRequestContext
from mcp_types import ElicitRequestParams, ElicitResult

from proxy.testing import ProxyProcess

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


def main(argv: list[str] | None = None) -> int:
    """Play ``$MCP_CONFORMANCE_SCENARIO`` against the URL (through a proxy with ``--proxy-db``)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--proxy-db", help="start finmcp-proxy with this trace store in front of URL")
    parser.add_argument("url")
    args = parser.parse_args(argv)
    name = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    scenario = SCENARIOS.get(name)
    if scenario is None:
        print(f"client.py: no handler for scenario {name!r} (known: {', '.join(SCENARIOS)})", file=sys.stderr)
        return 2
    url = loopback(args.url)
    with ExitStack() as stack:
        if args.proxy_db:
            proxy_args = ["--upstream", url, "--db", args.proxy_db, "--run", RUN]
            proxy = stack.enter_context(ProxyProcess(proxy_args))
            url = proxy.url
        anyio.run(scenario, url)
    return 0


if __name__ == "__main__":
    sys.exit(main())
