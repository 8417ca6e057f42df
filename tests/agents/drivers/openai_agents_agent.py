"""The OpenAI Agents SDK: ``Agent`` + ``Runner.run_streamed`` with the Responses model (streamed SSE) and
``MCPServerStreamableHttp`` tools (``tests/agents/drivers/common.py`` has the task format)."""

from __future__ import annotations

from typing import Any

from agents import Agent, ModelSettings, OpenAIResponsesModel, Runner, set_tracing_disabled
from agents.mcp import MCPServerStreamableHttp
from common import INSTRUCTIONS, responses_items, run_all
from openai import AsyncOpenAI

set_tracing_disabled(True)


async def run_task(task: dict[str, Any]) -> str:
    client = AsyncOpenAI(base_url=task["model_url"], api_key="scripted", max_retries=0)
    async with MCPServerStreamableHttp(
        {"url": task["mcp_url"]}, name="finmcp", cache_tools_list=True, client_session_timeout_seconds=60
    ) as server:
        agent = Agent(
            name="finmcp",
            instructions=INSTRUCTIONS,
            model=OpenAIResponsesModel("finmcp-scripted", client),
            model_settings=ModelSettings(parallel_tool_calls=True),
            mcp_servers=[server],
        )
        result = Runner.run_streamed(
            agent, input=responses_items(task["messages"]), max_turns=task["max_steps"]
        )
        async for _ in result.stream_events():
            pass
        return str(result.final_output or "")


run_all(run_task)
