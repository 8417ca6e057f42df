"""A small SDK server (``MCPServer``, Streamable HTTP) whose tools span several wire requests.

``python -m tests.support.logical_server PORT`` serves, on 127.0.0.1:PORT/mcp (``... stdio``: on
stdin/stdout):

- ``ask_twice(x)``: asks for input in two rounds (2026-07-28 ``input_required``, the SDK seals its
  ``requestState``); each round sleeps :data:`ROUND_S` first; the final text is ``"x:a:b"`` with the
  two answers ``v`` the client gave.
- ``ask_stateless(x)``: asks once with no ``requestState``; answers ``"x:a"`` (>= 2 rounds' sleep).
- ``slow_task(x)``: run as a task (the Tasks extension, ``io.modelcontextprotocol/tasks``): the
  ``tools/call`` answers a task handle (``resultType: "task"`` from 2026-07-28, a 2025-11-25
  ``CreateTaskResult`` before), ``tasks/get`` reports ``working`` until the :data:`POLLS`-th poll
  says ``completed``; each poll sleeps :data:`POLL_S`; ``tasks/result`` answers ``"done x"``;
  ``tasks/cancel`` cancels it.
- ``plain(x)``: answers ``"plain x"`` at once (one wire request).
- ``touch_tools()``: publishes a tools-list-changed event (``subscriptions/listen`` streams get it).

Built-in delays make a logical call's end-to-end latency at least :data:`ASK_MIN_MS` /
:data:`TASK_MIN_MS`, whatever the client does between hops.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from typing import Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import (
    CallToolRequestParams,
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    InputRequests,
    InputRequiredResult,
    RequestParams,
    TextContent,
)

ROUND_S = 0.15
POLLS = 5
POLL_S = 0.1
ASK_MIN_MS = 3 * ROUND_S * 1000
TASK_MIN_MS = POLLS * POLL_S * 1000
TASKS_EXT = "io.modelcontextprotocol/tasks"


def _ask(key: str, message: str) -> InputRequests:
    schema = {"type": "object", "properties": {"v": {"type": "string"}}, "required": ["v"]}
    return {key: ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))}


def _answer(ctx: Context, key: str) -> str:
    responses = ctx.input_responses or {}
    response: Any = responses.get(key)
    content = getattr(response, "content", None) or (response or {}).get("content") or {}
    return str(content.get("v"))


class TaskParams(RequestParams):
    """``tasks/get`` / ``tasks/result`` / ``tasks/cancel`` params."""

    task_id: str


class Tasks(Extension):
    """A minimal Tasks extension: ``slow_task`` becomes a polled task."""

    identifier = TASKS_EXT

    def __init__(self) -> None:
        self.tasks: dict[str, dict[str, Any]] = {}

    def _view(self, task_id: str) -> dict[str, Any]:
        task = self.tasks[task_id]
        now = datetime.now(UTC).isoformat()
        return {
            "taskId": task_id,
            "status": task["status"],
            "createdAt": task["created"],
            "lastUpdatedAt": now,
            "ttl": 60000,
            "pollInterval": 10,
        }

    async def intercept_tool_call(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if params.name != "slow_task":
            return await call_next(ctx)
        task_id = f"task-{len(self.tasks) + 1}"
        x = (params.arguments or {}).get("x")
        self.tasks[task_id] = {
            "status": "working",
            "polls": 0,
            "x": x,
            "created": datetime.now(UTC).isoformat(),
        }
        handle: dict[str, Any] = {"task": self._view(task_id)}
        if ctx.protocol_version and ctx.protocol_version >= "2026":
            handle["resultType"] = "task"
        return handle

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> HandlerResult:
        await anyio.sleep(POLL_S)
        task = self.tasks[params.task_id]
        if task["status"] == "working":
            task["polls"] += 1
            if task["polls"] >= POLLS:
                task["status"] = "completed"
        return self._view(params.task_id)

    async def _result(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> HandlerResult:
        task = self.tasks[params.task_id]
        text = f"done {task['x']}"
        return {
            "content": [{"type": "text", "text": text}],
            "isError": False,
            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": params.task_id}},
        }

    async def _cancel(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> HandlerResult:
        self.tasks[params.task_id]["status"] = "cancelled"
        return self._view(params.task_id)

    def methods(self) -> list[MethodBinding]:
        return [
            MethodBinding("tasks/get", TaskParams, self._get),
            MethodBinding("tasks/result", TaskParams, self._result),
            MethodBinding("tasks/cancel", TaskParams, self._cancel),
        ]


def build() -> MCPServer:
    """The server (not started)."""
    server = MCPServer("logical", extensions=[Tasks()])

    @server.tool()
    async def ask_twice(x: int, ctx: Context) -> CallToolResult | InputRequiredResult:
        """Ask two questions, then answer."""
        await anyio.sleep(ROUND_S)
        state = ctx.request_state
        if state is None:
            return InputRequiredResult(input_requests=_ask("a", "first?"), request_state="round1")
        if state == "round1":
            first = _answer(ctx, "a")
            return InputRequiredResult(input_requests=_ask("b", "second?"), request_state=f"round2:{first}")
        first = state.removeprefix("round2:")
        text = f"{x}:{first}:{_answer(ctx, 'b')}"
        return CallToolResult(content=[TextContent(text=text)])

    @server.tool()
    async def ask_stateless(x: int, ctx: Context) -> CallToolResult | InputRequiredResult:
        """Ask once with no requestState (the retry is known by its tool and arguments only)."""
        await anyio.sleep(ROUND_S)
        if not ctx.input_responses:
            return InputRequiredResult(input_requests=_ask("a", "first?"))
        return CallToolResult(content=[TextContent(text=f"{x}:{_answer(ctx, 'a')}")])

    @server.tool()
    async def slow_task(x: int) -> str:
        """Run as a task (the extension answers instead)."""
        return f"done {x}"

    @server.tool()
    async def touch_tools(ctx: Context) -> str:
        """Publish a tools-list-changed event to ``subscriptions/listen`` streams."""
        await ctx.notify_tools_changed()
        return "touched"

    @server.tool()
    async def plain(x: int) -> str:
        """Answer at once."""
        return f"plain {x}"

    return server


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        build().run("stdio")
    else:
        build().run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
