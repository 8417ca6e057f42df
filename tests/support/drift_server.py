"""A tiny real MCP server (the SDK's low-level ``Server``) whose tool definitions a test edits while it runs.

``python -m tests.support.drift_server TOOLS_JSON [--page-size N] [--port PORT]`` lists the tools in
the JSON file (a list of tool definitions), re-read at every ``tools/list``, so a test changes a
description, a schema or an annotation between two sessions by rewriting the file. ``--page-size``
splits the listing into pages (``nextCursor``); ``--port`` serves Streamable HTTP on 127.0.0.1:PORT
(path ``/mcp``, both protocol eras) instead of stdio. Every tool answers ``ok``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp_types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
)


def build(tools_file: Path, page_size: int) -> Server[Any]:
    """The server: ``tools/list`` from ``tools_file`` (paged by ``page_size``, 0: one page)."""
    server: Server[Any] = Server("drift")

    async def on_list_tools(ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
        tools = json.loads(tools_file.read_text(encoding="utf-8"))
        if not page_size:
            return ListToolsResult(tools=tools)
        start = int(params.cursor) if params is not None and params.cursor else 0
        more = start + page_size < len(tools)
        page = tools[start : start + page_size]
        return ListToolsResult(tools=page, next_cursor=str(start + page_size) if more else None)

    async def on_call_tool(ctx: Any, params: CallToolRequestParams) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text="ok")])

    server.add_request_handler("tools/list", PaginatedRequestParams, on_list_tools)
    server.add_request_handler("tools/call", CallToolRequestParams, on_call_tool)
    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("tools", type=Path)
    parser.add_argument("--page-size", type=int, default=0)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = build(args.tools, args.page_size)
    if args.port:
        import uvicorn

        app = server.streamable_http_app(host="127.0.0.1")
        uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")
        return

    async def serve_stdio() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(serve_stdio)


if __name__ == "__main__":
    main()
