"""A tiny real MCP server (the SDK's low-level ``Server``, stdio) for the audit's pins: what it answers
and declares is set by environment variables, so a test records it once and audits it changed.

Tools (all annotated ``readOnlyHint``):
- ``now``: ``{"now": <ISO time>, "id": <uuid4>, "city": $DRIFT_CITY or "Paris"}`` as JSON text (volatile);
- ``entities``: structuredContent ``{"entities": [...]}`` from ``$DRIFT_ENTITIES`` (comma-separated)
  and the same JSON as text;
- ``probe``: the text of ``$DRIFT_PROBE`` (``<unset>`` when unset): which environment it runs in.
``$DRIFT_DESCRIPTION`` replaces the description of ``probe`` (a definition change).
"""

from __future__ import annotations

import datetime
import json
import os
import uuid
from typing import Any

import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp_types import CallToolRequestParams, PaginatedRequestParams

READ_ONLY = {"readOnlyHint": True}


def tools() -> list[dict[str, Any]]:
    """The declared tools (``probe``'s description from the environment)."""
    schema = {"type": "object", "properties": {}}
    return [
        {"name": "now", "description": "the time", "inputSchema": schema, "annotations": READ_ONLY},
        {"name": "entities", "description": "a list", "inputSchema": schema, "annotations": READ_ONLY},
        {
            "name": "probe",
            "description": os.environ.get("DRIFT_DESCRIPTION", "the environment"),
            "inputSchema": schema,
            "annotations": READ_ONLY,
        },
    ]


def answer(tool: str) -> dict[str, Any]:
    """The result of a call of ``tool``."""
    if tool == "now":
        value = {
            "now": datetime.datetime.now(datetime.UTC).isoformat(),
            "id": str(uuid.uuid4()),
            "city": os.environ.get("DRIFT_CITY", "Paris"),
        }
        return {"content": [{"type": "text", "text": json.dumps(value)}]}
    if tool == "entities":
        names = [n for n in os.environ.get("DRIFT_ENTITIES", "alpha,beta,gamma").split(",") if n]
        entities: dict[str, Any] = {"entities": [{"name": n, "letters": len(n)} for n in names]}
        return {
            "content": [{"type": "text", "text": "x" * 300 + json.dumps(entities)}],
            "structuredContent": entities,
        }
    return {"content": [{"type": "text", "text": os.environ.get("DRIFT_PROBE", "<unset>")}]}


def build() -> Server[Any]:
    server: Server[Any] = Server("drift")

    async def on_list_tools(ctx: Any, params: PaginatedRequestParams | None) -> dict[str, Any]:
        return {"tools": tools()}

    async def on_call_tool(ctx: Any, params: CallToolRequestParams) -> dict[str, Any]:
        return answer(params.name)

    server.add_request_handler("tools/list", PaginatedRequestParams, on_list_tools)
    server.add_request_handler("tools/call", CallToolRequestParams, on_call_tool)
    return server


async def main() -> None:
    server = build()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
