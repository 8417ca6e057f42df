"""LangGraph: ``create_react_agent`` with ``ChatOpenAI`` (Chat Completions, streamed) and the tools of
langchain-mcp-adapters (``load_mcp_tools`` on one ``MultiServerMCPClient`` session per task) over
Streamable HTTP; the gold history is the graph's
``messages`` (``common.py`` has the task format)."""

from __future__ import annotations

import json
import warnings
from typing import Any

from common import INSTRUCTIONS, run_all
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent  # langchain.agents.create_agent needs langchain itself

warnings.filterwarnings("ignore", message="create_react_agent has been moved")


def history(messages: list[dict[str, Any]]) -> list[BaseMessage]:
    """Chat messages as LangChain messages."""
    out: list[BaseMessage] = [SystemMessage(INSTRUCTIONS)]
    for m in messages:
        content = str(m.get("content") or "")
        if m["role"] == "user":
            out.append(HumanMessage(content))
        elif m["role"] == "assistant" and m.get("tool_calls"):
            calls = [
                {
                    "name": c["function"]["name"],
                    "args": json.loads(c["function"]["arguments"] or "{}"),
                    "id": c["id"],
                }
                for c in m["tool_calls"]
            ]
            out.append(AIMessage(content, tool_calls=calls))
        elif m["role"] == "tool":
            out.append(ToolMessage(content, tool_call_id=m["tool_call_id"]))
        elif m["role"] == "assistant":
            out.append(AIMessage(content))
    return out


async def run_task(task: dict[str, Any]) -> str:
    client = MultiServerMCPClient({"finmcp": {"url": task["mcp_url"], "transport": "streamable_http"}})
    # stream_usage: langchain-openai asks a stream for its usage only at OpenAI's own URL; at any other
    # base URL (the proxy's model door) the stream carries none and the door logs null tokens
    model = ChatOpenAI(
        model="finmcp-scripted",
        base_url=task["model_url"],
        api_key="scripted",
        streaming=True,
        stream_usage=True,
        max_retries=0,
    )
    # one MCP session for the task (client.get_tools() alone would open a new session per tool call)
    async with client.session("finmcp") as session:
        agent = create_react_agent(model, await load_mcp_tools(session))
        result = await agent.ainvoke(
            {"messages": history(task["messages"])}, {"recursion_limit": 2 * task["max_steps"] + 1}
        )
    return str(result["messages"][-1].content)


run_all(run_task)
