"""fastmcp's ``Client`` through finmcp-proxy: Streamable HTTP in either era, or stdio (a launched stdio proxy).

``--era handshake`` connects with ``mode="legacy"`` (initialize, ``Mcp-Session-Id``), ``--era stateless`` with
``mode="2026-07-28"`` (stateless, no initialize). See drivers/common.py for the command line and output.
"""

from __future__ import annotations

import asyncio
from typing import Any

from common import emit, outcome, parse
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from mcp import MCPError


async def main() -> None:
    args = parse()
    target: Any = args.url if args.url else StdioTransport(args.stdio[0], args.stdio[1:], keep_alive=False)
    mode = "2026-07-28" if args.era == "stateless" else "legacy"
    outcomes = []
    async with Client(target, mode=mode) as client:
        tools = await client.list_tools()
        for tool, arguments in args.calls:
            try:
                result = await client.call_tool(tool, arguments, raise_on_error=False)
            except MCPError as exc:
                outcomes.append(outcome(tool, True, str(exc), raised=True))
                continue
            error = result.content[0].text if result.is_error else None  # type: ignore[union-attr]
            outcomes.append(outcome(tool, result.is_error, error))
    emit(len(tools), outcomes)


asyncio.run(main())
