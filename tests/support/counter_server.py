"""A tiny real MCP server (the SDK's low-level ``Server``, stdio) whose one tool answers differently each call.

``python -m tests.support.counter_server`` serves ``GetCurrentTime`` (a finmcp65 name, so a
finmcp-server can replay its recording): call n answers ``answer n``; every 7th call is an
``isError`` result, every 10th a JSON-RPC error. What a real server with time, faults or state
looks like to a recorder: 30 identical calls, no two alike.
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolRequestParams, PaginatedRequestParams

TOOL = {
    "name": "GetCurrentTime",
    "description": "a counter",
    "inputSchema": {"type": "object", "properties": {}},
}
FAULT_CODE = -32001


def expected(n: int) -> tuple[str, Any]:
    """What call ``n`` (from 1) answers: ``("text", s)``, ``("isError", s)`` or ``("rpc_error", (code, message))``."""
    if n % 10 == 0:
        return "rpc_error", (FAULT_CODE, f"upstream fault at call {n}")
    if n % 7 == 0:
        return "isError", f"tool failed at call {n}"
    return "text", f"answer {n}"


def build() -> Server[Any]:
    count = 0
    server: Server[Any] = Server("counter")

    async def on_list_tools(ctx: Any, params: PaginatedRequestParams | None) -> dict[str, Any]:
        return {"tools": [TOOL]}

    async def on_call_tool(ctx: Any, params: CallToolRequestParams) -> dict[str, Any]:
        nonlocal count
        count += 1
        kind, value = expected(count)
        if kind == "rpc_error":
            raise MCPError(value[0], value[1])
        return {"content": [{"type": "text", "text": value}], "isError": kind == "isError"}

    server.add_request_handler("tools/list", PaginatedRequestParams, on_list_tools)
    server.add_request_handler("tools/call", CallToolRequestParams, on_call_tool)
    return server


async def main() -> None:
    server = build()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
