"""A client that exercises every feature of ``@modelcontextprotocol/server-everything``, as a transcript.

:func:`exercise` connects (Streamable HTTP URL or a stdio command), answers the server's sampling,
elicitation and roots requests with fixed values, receives progress and log notifications, lists and
reads resources and templates, subscribes, gets prompts, asks for completions and calls the tools
whose answers do not depend on the process (no environment, no network, no randomness). It returns
what the client saw, as JSON values, in order, so a run direct and a run through the proxy compare
equal when the proxy is transparent. :data:`CALLED_TOOLS` names the ``tools/call`` requests it makes.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from typing import Any

from mcp.client import Client
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import StdioServerParameters
from mcp_types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    ListRootsResult,
    LoggingMessageNotificationParams,
    PromptReference,
    Root,
    TextContent,
)

SAMPLED = "a sampled answer from the test client"
ELICITED: dict[str, str | int | float | list[str]] = {
    "name": "Ada Lovelace",
    "check": True,
    "integer": 7,
    "petType": "pet-2",
}
ROOT = "file:///tmp/finmcp-conformance-root"
# tools/call requests made, in order (toggle-simulated-logging twice: on, then off again)
CALLED_TOOLS = (
    "echo",
    "get-sum",
    "get-tiny-image",
    "get-annotated-message",
    "get-structured-content",
    "get-resource-reference",
    "get-resource-links",
    "get-roots-list",
    "trigger-long-running-operation",
    "trigger-sampling-request",
    "trigger-elicitation-request",
    "toggle-simulated-logging",
    "toggle-subscriber-updates",
    "toggle-subscriber-updates",
    "toggle-simulated-logging",
)


_CLOCK = re.compile(r"\b\d{1,2}:\d\d:\d\d(?: ?[AP]M)?")  # dynamic resources say when they were made
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")  # session ids


def _json(value: Any) -> Any:
    """A result as JSON values; the times of day and session ids server-everything writes are masked.

    A ``blob`` is decoded first (its text holds a time too).
    """
    dump: Callable[..., Any] | None = getattr(value, "model_dump", None)
    return _masked(dump(mode="json", by_alias=True, exclude_none=True) if dump else value)


def _masked(value: Any) -> Any:
    if isinstance(value, str):
        return _UUID.sub("<session>", _CLOCK.sub("<time>", value))
    if isinstance(value, list):
        return [_masked(v) for v in value]
    if isinstance(value, dict):
        return {
            k: _masked(base64.b64decode(v).decode(errors="replace") if k == "blob" else v)
            for k, v in value.items()
        }
    return value


class Answers:
    """The client's side of server→client requests, and what the server sent it."""

    def __init__(self) -> None:
        self.sampled: list[Any] = []
        self.elicited: list[Any] = []
        self.roots_asked = 0
        self.logs: list[LoggingMessageNotificationParams] = []
        self.progress: list[tuple[float, float | None]] = []

    async def sample(
        self, context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult:
        self.sampled.append([_json(m) for m in params.messages])
        return CreateMessageResult(
            role="assistant", content=TextContent(type="text", text=SAMPLED), model="finmcp-test-model"
        )

    async def elicit(self, context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        self.elicited.append(getattr(params, "message", None))
        return ElicitResult(action="accept", content=dict(ELICITED))

    async def roots(self, context: ClientRequestContext) -> ListRootsResult:
        self.roots_asked += 1
        return ListRootsResult(roots=[Root(uri=ROOT, name="conformance")])  # type: ignore[arg-type]

    async def log(self, params: LoggingMessageNotificationParams) -> None:
        self.logs.append(params)

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append((progress, total))


async def exercise(server: str | StdioServerParameters) -> dict[str, Any]:
    """Use every feature of server-everything once; the transcript of what the client saw."""
    answers = Answers()
    seen: dict[str, Any] = {}
    async with Client(
        server,
        mode="legacy",
        sampling_callback=answers.sample,
        elicitation_callback=answers.elicit,
        list_roots_callback=answers.roots,
        logging_callback=answers.log,
    ) as client:
        seen["ping"] = _json(await client.send_ping())
        await client.set_logging_level("debug")
        seen["tools"] = sorted(tool.name for tool in (await client.list_tools()).tools)
        seen["resources"] = [r.uri for r in (await client.list_resources()).resources]
        seen["templates"] = [
            t.uri_template for t in (await client.list_resource_templates()).resource_templates
        ]
        first = seen["resources"][0]
        seen["read"] = _json(await client.read_resource(first))
        seen["read-template"] = _json(await client.read_resource("demo://resource/dynamic/text/2"))
        seen["prompts"] = [p.name for p in (await client.list_prompts()).prompts]
        seen["prompt-simple"] = _json(await client.get_prompt("simple-prompt"))
        seen["prompt-args"] = _json(await client.get_prompt("args-prompt", {"city": "Paris", "state": "IDF"}))
        seen["prompt-resource"] = _json(
            await client.get_prompt("resource-prompt", {"resourceType": "Text", "resourceId": "1"})
        )
        seen["complete"] = _json(
            await client.complete(
                PromptReference(type="ref/prompt", name="completable-prompt"),
                {"name": "department", "value": "E"},
            )
        )
        calls: list[Any] = []
        for tool, arguments in (
            ("echo", {"message": "hello through finmcp"}),
            ("get-sum", {"a": 2, "b": 40}),
            ("get-tiny-image", {}),
            ("get-annotated-message", {"messageType": "success", "includeImage": True}),
            ("get-structured-content", {"location": "Chicago"}),
            ("get-resource-reference", {"resourceType": "Blob", "resourceId": 3}),
            ("get-resource-links", {"count": 2}),
            ("get-roots-list", {}),
        ):
            calls.append(_json(await client.call_tool(tool, arguments)))
        long_run = await client.call_tool(
            "trigger-long-running-operation",
            {"duration": 0.3, "steps": 3},
            progress_callback=answers.on_progress,
        )
        calls.append(_json(long_run))
        calls.append(
            _json(await client.call_tool("trigger-sampling-request", {"prompt": "Say hi", "maxTokens": 20}))
        )
        calls.append(_json(await client.call_tool("trigger-elicitation-request", {})))
        calls.append(
            _json(await client.call_tool("toggle-simulated-logging", {}))
        )  # logs one message at once
        await client.subscribe_resource(first)
        calls.append(_json(await client.call_tool("toggle-subscriber-updates", {})))
        calls.append(_json(await client.call_tool("toggle-subscriber-updates", {})))
        await client.unsubscribe_resource(first)
        calls.append(_json(await client.call_tool("toggle-simulated-logging", {})))
        seen["calls"] = calls
    seen["sampled"] = answers.sampled
    seen["elicited"] = answers.elicited
    seen["progress"] = answers.progress
    seen["roots-asked"] = answers.roots_asked > 0
    # the simulated logger picks a random level and text: that some arrived is what must match
    seen["logs"] = sorted(
        {(log.logger or "") for log in answers.logs if "Roots updated" not in str(log.data)}
    )
    seen["roots-log"] = any("Roots updated: 1 root(s)" in str(log.data) for log in answers.logs)
    return seen
