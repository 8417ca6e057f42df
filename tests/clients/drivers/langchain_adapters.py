"""langchain-mcp-adapters (on mcp 1.x) through finmcp-proxy: ``MultiServerMCPClient`` + ``load_mcp_tools``.

The LangChain tools are invoked directly with a tool call (no model), so each answer is a
``ToolMessage`` whose ``status`` says whether the MCP result was an error. A tool the server did not
list has no LangChain tool, so the driver converts an MCP ``Tool`` of that name itself
(``convert_mcp_tool_to_langchain_tool``), which is what a stale tool list would give an agent.
"""

from __future__ import annotations

import asyncio
from typing import Any

from common import emit, outcome, parse
from langchain_core.messages import ToolMessage
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import convert_mcp_tool_to_langchain_tool, load_mcp_tools
from mcp.shared.exceptions import McpError
from mcp.types import Tool


async def main() -> None:
    args = parse()
    connection: dict[str, Any]
    if args.url:
        connection = {"transport": "streamable_http", "url": args.url}
    else:
        connection = {"transport": "stdio", "command": args.stdio[0], "args": args.stdio[1:]}
    client = MultiServerMCPClient({"finmcp": connection})  # type: ignore[dict-item]
    outcomes = []
    async with client.session("finmcp") as session:
        tools = {tool.name: tool for tool in await load_mcp_tools(session)}
        for step, (name, arguments) in enumerate(args.calls):
            tool = tools.get(name)
            if tool is None:
                schema = {"type": "object", "properties": {key: {} for key in arguments}}
                tool = convert_mcp_tool_to_langchain_tool(session, Tool(name=name, inputSchema=schema))
            call = {"type": "tool_call", "name": name, "args": arguments, "id": f"call-{step}"}
            try:
                message = await tool.ainvoke(call)
            except McpError as exc:
                outcomes.append(outcome(name, True, str(exc), raised=True))
                continue
            assert isinstance(message, ToolMessage), message
            text = message.content if isinstance(message.content, str) else message.content[0]["text"]
            failed = message.status == "error"
            outcomes.append(outcome(name, failed, text if failed else None))
    emit(len(tools), outcomes)


asyncio.run(main())
