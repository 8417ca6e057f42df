"""A command-line agent: the openai SDK (Chat Completions) + the mcp SDK's ``Client``, as a program.

It reads one task as JSON on stdin (``finmcp-task/1`` as ``finmcp-eval run --agent cmd:`` writes it, or
``common.py``'s format), takes the model's base URL from
``OPENAI_BASE_URL`` and the MCP URL from ``FINMCP_MCP_URL`` (the task's own are the fallbacks),
runs the usual loop — ask the model, run every tool call it asked for concurrently, send the results
back — and prints the final answer on stdout as ``{"answer": TEXT}`` (so an empty reply is an answer). Run once per task, as ``--agent cmd:`` runs a program.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from mcp import Client
from openai import AsyncOpenAI


def text_of(result: Any) -> str:
    """The text parts of an MCP tool result."""
    return "\n".join(getattr(part, "text", "") for part in result.content)


async def main() -> None:
    task = json.load(sys.stdin)
    model = AsyncOpenAI(
        base_url=os.environ.get("OPENAI_BASE_URL") or task["model_url"], api_key="scripted", max_retries=0
    )
    messages: list[dict[str, Any]] = list(task["messages"])
    max_steps = int((task.get("limits") or {}).get("max_steps") or task.get("max_steps") or 12)
    async with Client(os.environ.get("FINMCP_MCP_URL") or task["mcp_url"]) as mcp:
        listed = await mcp.list_tools()
        tools = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description or "",
                    "parameters": t.input_schema,
                },
            }
            for t in listed.tools
        ]
        for _ in range(max_steps):
            reply = (
                (await model.chat.completions.create(model="finmcp-scripted", messages=messages, tools=tools))
                .choices[0]
                .message
            )
            messages.append(reply.model_dump(exclude_none=True))
            if not reply.tool_calls:  # as JSON: an empty reply is an answer too (a closing turn's)
                print(json.dumps({"answer": reply.content or ""}, ensure_ascii=False))
                return
            results = await asyncio.gather(
                *(
                    mcp.call_tool(c.function.name, json.loads(c.function.arguments or "{}"))
                    for c in reply.tool_calls
                )
            )
            for call, result in zip(reply.tool_calls, results, strict=True):
                messages.append({"role": "tool", "tool_call_id": call.id, "content": text_of(result)})
    print(f"stopped after {max_steps} steps", file=sys.stderr)
    sys.exit(3)


asyncio.run(main())
