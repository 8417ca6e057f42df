"""pydantic-ai through finmcp-proxy: an ``Agent`` whose offline ``FunctionModel`` makes the calls (no LLM).

The model asks for one call of ``--calls`` per step, reads each tool return (an error answer comes
back as a return with ``outcome="retried"``), and ends with a text answer. pydantic-ai refuses a call to a tool the server did not list without sending
it (the model gets an "Unknown tool name" retry), so such a call is then made once more directly with
``MCPToolset.direct_call_tool``, to show what the wire does with it. The run/sample tags travel in the
``X-Finmcp-Run``/``X-Finmcp-Sample`` headers (``--header NAME=VALUE``), not the path.
"""

from __future__ import annotations

import asyncio
import sys

from common import emit, outcome, parse
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel


def _headers(argv: list[str]) -> tuple[dict[str, str], list[str]]:
    headers: dict[str, str] = {}
    rest: list[str] = []
    items = iter(argv)
    for item in items:
        if item == "--header":
            name, _, value = next(items).partition("=")
            headers[name] = value
        else:
            rest.append(item)
    return headers, rest


async def main() -> None:
    headers, argv = _headers(sys.argv[1:])
    args = parse(argv)
    assert args.url, "the pydantic-ai driver runs over Streamable HTTP"
    mode = "2026-07-28" if args.era == "stateless" else "legacy"
    client = Client(StreamableHttpTransport(args.url, headers=headers), mode=mode)
    toolset = MCPToolset(client, max_retries=len(args.calls))
    calls = list(args.calls)

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = sum(isinstance(m, ModelResponse) for m in messages)
        if step < len(calls):
            tool, arguments = calls[step]
            return ModelResponse(parts=[ToolCallPart(tool, arguments, tool_call_id=f"call-{step}")])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(model), toolsets=[toolset])
    async with toolset:
        tools = await toolset.list_tools()
        result = await agent.run("Search 红利 funds, then try the odd calls.")
        seen: dict[str, ToolReturnPart] = {}
        for message in result.all_messages():
            for part in getattr(message, "parts", []):
                if isinstance(part, ToolReturnPart):
                    seen[part.tool_call_id] = part
        outcomes = []
        listed = {tool.name for tool in tools}
        for step, (tool, arguments) in enumerate(calls):
            part = seen[f"call-{step}"]
            # an error answer comes back to the model as a retry (outcome "retried"), not a return
            failed = part.outcome != "success"
            text = str(part.content)
            if failed and tool not in listed:  # refused by pydantic-ai without sending: now send it directly
                try:
                    await toolset.direct_call_tool(tool, arguments)
                except ModelRetry as exc:
                    text = f"{text} | direct call: {exc}"
            outcomes.append(
                outcome(tool, failed, text if failed else None, raised=failed and tool not in listed)
            )
    emit(len(tools), outcomes, output=result.output)


asyncio.run(main())
