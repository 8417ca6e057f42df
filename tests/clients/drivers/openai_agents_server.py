"""openai-agents' ``MCPServerStreamableHttp`` through finmcp-proxy, called directly (no model, no Runner).

``connect()``, ``list_tools()`` and ``call_tool()`` are the calls an ``Agent`` makes through this class.
With mcp 2.x installed, the class builds its SDK ``Client`` with ``mode="auto"``, so the era is the one
the server offers (2026-07-28 against finmcp-server); the driver cannot choose. The run/sample tags
travel in headers (``--header NAME=VALUE``).
"""

from __future__ import annotations

import asyncio
import sys

from agents.exceptions import UserError
from agents.mcp import MCPServerStreamableHttp
from common import emit, outcome, parse
from mcp import MCPError


async def main() -> None:
    argv, headers = [], {}
    items = iter(sys.argv[1:])
    for item in items:
        if item == "--header":
            name, _, value = next(items).partition("=")
            headers[name] = value
        else:
            argv.append(item)
    args = parse(argv)
    assert args.url, "the openai-agents driver runs over Streamable HTTP"
    server = MCPServerStreamableHttp({"url": args.url, "headers": headers}, name="finmcp")
    outcomes = []
    await server.connect()
    try:
        tools = await server.list_tools()
        for tool, arguments in args.calls:
            try:
                result = await server.call_tool(tool, arguments)
            except (MCPError, UserError) as exc:
                outcomes.append(outcome(tool, True, f"{type(exc).__name__}: {exc}", raised=True))
                continue
            error = result.content[0].text if result.is_error else None  # type: ignore[union-attr]
            outcomes.append(outcome(tool, result.is_error, error))
    finally:
        await server.cleanup()
    emit(len(tools), outcomes, session_id=server.session_id)


asyncio.run(main())
