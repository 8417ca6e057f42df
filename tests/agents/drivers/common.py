"""What every agent driver of the agent matrix shares (standard library only: each runs in its framework's venv).

A driver is ``python DRIVER.py TASKS.json``. ``TASKS.json`` is a list of tasks, one per (sample, turn):
``{"sample", "turn", "trial", "messages", "mcp_url", "model_url", "max_steps"}`` where ``messages`` is
the gold history in OpenAI chat format ending with the turn's user message (what finmcp's own agent
gets), ``mcp_url`` the task's tagged MCP URL (through finmcp-proxy) and ``model_url`` the task's
tagged model base URL (``.../v1``). The driver runs its framework's own agent loop once per task —
the turns of a sample in order, samples a few at a time — and prints one JSON line per task:
``{"sample", "turn", "answer", "error"}``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

CONCURRENCY = 4
INSTRUCTIONS = "You are a financial assistant. Use the tools to answer the user's question."


def load_tasks() -> list[dict[str, Any]]:
    """The tasks of the file named on the command line."""
    with open(sys.argv[1], encoding="utf-8") as fh:
        return list(json.load(fh))


def split(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """(gold history before the turn, the turn's user message)."""
    *history, last = messages
    assert last["role"] == "user", "a task's messages end with the user message"
    return history, str(last["content"])


def responses_items(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages as Responses input items (calls and outputs as ``function_call``/``function_call_output``)."""
    items: list[dict[str, Any]] = []
    for m in messages:
        if m["role"] == "assistant" and m.get("tool_calls"):
            for c in m["tool_calls"]:
                fn = c["function"]
                items.append(
                    {
                        "type": "function_call",
                        "call_id": c["id"],
                        "name": fn["name"],
                        "arguments": fn["arguments"],
                    }
                )
        elif m["role"] == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": m["tool_call_id"],
                    "output": str(m.get("content") or ""),
                }
            )
        else:
            items.append({"role": m["role"], "content": str(m.get("content") or "")})
    return items


def emit(task: dict[str, Any], answer: str | None, error: str | None) -> None:
    """Print one task's line."""
    line = {"sample": task["sample"], "turn": task["turn"], "answer": answer, "error": error}
    print(json.dumps(line, ensure_ascii=False), flush=True)


def run_all(run_task: Callable[[dict[str, Any]], Awaitable[str]]) -> None:
    """Run every task (a sample's turns in order, ``CONCURRENCY`` samples at a time) and print the lines."""
    tasks = load_tasks()
    by_sample: dict[str, list[dict[str, Any]]] = {}
    for task in tasks:
        by_sample.setdefault(task["sample"], []).append(task)

    async def sample(gate: asyncio.Semaphore, turns: list[dict[str, Any]]) -> None:
        async with gate:
            for task in sorted(turns, key=lambda t: t["turn"]):
                try:
                    emit(task, await run_task(task), None)
                except Exception as exc:  # the line says what failed; the other tasks go on
                    detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
                    emit(task, None, detail[-2000:])

    async def main() -> None:
        gate = asyncio.Semaphore(CONCURRENCY)
        await asyncio.gather(*(sample(gate, turns) for turns in by_sample.values()))

    asyncio.run(main())
