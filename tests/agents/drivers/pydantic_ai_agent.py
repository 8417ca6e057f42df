"""pydantic-ai: an ``Agent`` with ``OpenAIChatModel`` (Chat Completions, not streamed) and an ``MCPToolset``
over Streamable HTTP; the gold history goes in as ``message_history`` (``common.py`` has the task format)."""

from __future__ import annotations

from typing import Any

from common import INSTRUCTIONS, run_all, split
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.usage import UsageLimits


def history(messages: list[dict[str, Any]]) -> list[ModelMessage]:
    """Chat messages as pydantic-ai messages (a tool message's name comes from the call it answers)."""
    out: list[ModelMessage] = []
    names: dict[str, str] = {}
    for m in messages:
        if m["role"] == "user":
            out.append(ModelRequest(parts=[UserPromptPart(str(m["content"]))]))
        elif m["role"] == "assistant" and m.get("tool_calls"):
            parts = []
            for c in m["tool_calls"]:
                names[c["id"]] = c["function"]["name"]
                parts.append(
                    ToolCallPart(c["function"]["name"], c["function"]["arguments"], tool_call_id=c["id"])
                )
            out.append(ModelResponse(parts=parts))
        elif m["role"] == "tool":
            part = ToolReturnPart(
                names.get(m["tool_call_id"], ""), str(m.get("content") or ""), tool_call_id=m["tool_call_id"]
            )
            if (
                out
                and isinstance(out[-1], ModelRequest)
                and all(isinstance(p, ToolReturnPart) for p in out[-1].parts)
            ):
                out[-1].parts.append(part)
            else:
                out.append(ModelRequest(parts=[part]))
        elif m["role"] == "assistant":
            out.append(ModelResponse(parts=[TextPart(str(m.get("content") or ""))]))
    return out


async def run_task(task: dict[str, Any]) -> str:
    model = OpenAIChatModel(
        "finmcp-scripted", provider=OpenAIProvider(base_url=task["model_url"], api_key="scripted")
    )
    toolset = MCPToolset(task["mcp_url"])
    agent = Agent(model, toolsets=[toolset], instructions=INSTRUCTIONS)
    prior, user = split(task["messages"])
    async with agent:
        result = await agent.run(
            user, message_history=history(prior), usage_limits=UsageLimits(request_limit=task["max_steps"])
        )
    return str(result.output)


run_all(run_task)
