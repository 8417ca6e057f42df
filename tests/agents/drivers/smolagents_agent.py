"""smolagents: a ``ToolCallingAgent`` with ``OpenAIServerModel`` (Chat Completions, not streamed) and the
tools of ``MCPClient`` over Streamable HTTP; it answers through its ``final_answer`` tool. smolagents has
no chat-history input: each turn of a multi-turn sample is a fresh task with the turn's user message,
without the gold history (``common.py`` has the task format).

mcpadapt (0.1.19) hands smolagents a tool's ``properties`` as its inputs without saying which are
optional, and smolagents refuses a call that leaves any input out ("Argument X is required") before it
reaches the server; nearly every gold call leaves optional arguments out. The driver marks every input
``nullable`` (the server still validates the arguments) — the one change it makes to the framework,
named in the matrix table."""

from __future__ import annotations

import asyncio
from typing import Any

from common import run_all, split
from smolagents import MCPClient, OpenAIServerModel, ToolCallingAgent


def run_sync(task: dict[str, Any]) -> str:
    _, user = split(task["messages"])
    with MCPClient(
        {"url": task["mcp_url"], "transport": "streamable-http"}, structured_output=False
    ) as tools:
        for tool in tools:
            for spec in tool.inputs.values():
                spec["nullable"] = True
        model = OpenAIServerModel("finmcp-scripted", api_base=task["model_url"], api_key="scripted")
        agent = ToolCallingAgent(tools=tools, model=model, max_steps=task["max_steps"], verbosity_level=0)
        return str(agent.run(user))


async def run_task(task: dict[str, Any]) -> str:
    return await asyncio.to_thread(run_sync, task)


run_all(run_task)
