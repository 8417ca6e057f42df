"""The ``openai`` agent: any OpenAI-compatible chat endpoint with tool calling, through the proxy.

Per turn: the gold prefix (FinMCP protocol) goes to the model with the tools as OpenAI function
tools; every assistant message with ``tool_calls`` is one step whose calls run concurrently through
the session, and each result comes back as a ``tool`` message written as the benchmark's own agent
writes it (``recordings.transcripts.observation``): on FinMCP-Bench a tool error is its text and a call
that raised reads ``[error] ...``; on FinToolBench both read ``{"error": ...}``.
The loop ends when the model answers without tool calls, or at a cap:

- ``max_calls`` (default 20, FinMCP-Bench's ``max_tool_num``): calls beyond the budget are not made;
- ``max_steps`` (e.g. 5, FinToolBench's rounds).

After a cap, one more request without tools asks for the reply (as FinToolBench's agent does).

What a real model does wrong is kept as the turn's events (:mod:`evaluator.agents.checks`): argument
text that is not a JSON object is sent as written (the trace keeps it, the server's error reaches the
model), arguments that do not fit the tool's schema, tools never offered, identical calls in a row
(a stop at the cap says ``repeated identical call ×N``), and a final reply that looks like a tool
call but is not one (:mod:`evaluator.agents.text_calls`).
Every model request carries the turn's tags as ``X-Finmcp-Run/Sample/Trial/Turn`` headers (when the
run id is known and the values are ASCII), so an ``--llm-url`` pointing at finmcp-proxy's model door
(``http://proxy/v1``) logs each exchange under its sample and turn; other endpoints ignore them.
With ``top_k``, only the K tools BM25 ranks best for the user message are offered (FATR-style);
``inject_tags`` appends each tool's finance tags to its description and adds a system note.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from finmcp.evaluator.agents.base import ToolCall, TurnContext, TurnResult
from finmcp.evaluator.agents.bm25 import ToolRetriever
from finmcp.evaluator.agents.checks import CallChecker, read_arguments
from finmcp.evaluator.agents.text_calls import text_tool_call
from finmcp.evaluator.llm import ChatClient, LlmError
from finmcp.recordings.transcripts import ChatCall, assistant_message, call_id, tool_message

TAGS_SYSTEM_NOTE = (
    "Each tool lists financial_tags: how fresh its data is (timeliness), what it does (intent_type) "
    "and which markets it covers (regulatory_domains). Prefer tools whose freshness, intent and "
    "domain fit the question."
)


def openai_tool(tool: dict[str, Any], inject_tags: bool = False) -> dict[str, Any]:
    """An MCP tool as an OpenAI function tool (optionally with its finance tags in the description)."""
    description = str(tool.get("description") or "")
    if inject_tags:
        tags = ((tool.get("_meta") or {}).get("io.finmcp/tags")) or {}
        picked = {k: tags[k] for k in ("timeliness", "intent_type", "regulatory_domains") if k in tags}
        if picked:
            description += "\nfinancial_tags: " + json.dumps(picked, ensure_ascii=False)
    return {
        "type": "function",
        "function": {
            "name": tool["name"],
            "description": description,
            "parameters": tool.get("inputSchema") or {"type": "object", "properties": {}},
        },
    }


def tag_headers(ctx: TurnContext) -> dict[str, str] | None:
    """The turn's ``X-Finmcp-*`` tag headers (the model door files the exchange under them), or None
    without a run id or when a value is not ASCII (it would not fit an HTTP header as is)."""
    if not ctx.run:
        return None
    values = {"Run": ctx.run, "Sample": ctx.sample.id, "Trial": str(ctx.trial), "Turn": str(ctx.turn)}
    if not all(v.isascii() and v.isprintable() for v in values.values()):
        return None
    return {f"X-Finmcp-{k}": v for k, v in values.items()}


def parse_arguments(text: Any) -> dict[str, Any]:
    """The model's argument string as an object; unparsable or non-object arguments become ``{}``."""
    return read_arguments(text)[0]


@dataclass
class OpenAIAgent:
    """Chat-completions tool loop (see the module docstring)."""

    chat: ChatClient
    max_calls: int = 20
    max_steps: int | None = None
    top_k: int | None = None
    inject_tags: bool = False
    name: str = "openai"
    _retriever: tuple[int, ToolRetriever] | None = field(default=None, init=False, repr=False)

    def offered_tools(self, tools: list[dict[str, Any]], query: str) -> list[dict[str, Any]]:
        """All tools, or the BM25 top-K for ``query`` when ``top_k`` is set and smaller than the list."""
        if not self.top_k or len(tools) <= self.top_k:
            return tools
        if self._retriever is None or self._retriever[0] != id(tools):
            self._retriever = (id(tools), ToolRetriever(tools))
        return self._retriever[1].top(query, self.top_k)

    async def run_turn(self, ctx: TurnContext) -> TurnResult:
        """The tool loop for one turn."""
        query = str(ctx.messages[-1].get("content") or "") if ctx.messages else ""
        offered = self.offered_tools(ctx.tools, query)
        functions = [openai_tool(t, self.inject_tags) for t in offered]
        checker = CallChecker({str(t["name"]): t.get("inputSchema") or {} for t in offered})
        messages = list(ctx.messages)
        if self.inject_tags:
            messages.insert(0, {"role": "system", "content": TAGS_SYSTEM_NOTE})
        calls = steps = 0
        tags = tag_headers(ctx)
        while True:
            if self.max_steps is not None and steps >= self.max_steps:
                return self._stop(checker, await self._final(messages, tags), steps, "max_steps")
            message = await self.chat.complete(messages, functions, tags)
            requested = message.get("tool_calls") or []
            if not requested:
                return self._stop(checker, str(message.get("content") or ""), steps, "done")
            budget = self.max_calls - calls
            ids, step = [], []
            for index, entry in enumerate(requested[: max(budget, 0)]):
                function = (entry or {}).get("function") or {}
                ids.append(entry.get("id") or call_id(ctx.sample.id, ctx.turn, 1000 + steps, index))
                tool = str(function.get("name") or "")
                arguments, raw = checker.check(steps, tool, function.get("arguments"))
                step.append(ToolCall(tool, arguments, raw))
            chat_calls = [ChatCall(cid, c.tool, c.arguments) for cid, c in zip(ids, step, strict=True)]
            assistant = {**assistant_message(chat_calls), "content": message.get("content") or ""}
            for entry, call in zip(assistant["tool_calls"], step, strict=True):
                if call.raw_arguments is not None:  # the history shows what the model wrote
                    entry["function"]["arguments"] = call.raw_arguments
            messages.append(assistant)
            outcomes = await ctx.session.call_group(step)
            for chat_call, outcome in zip(chat_calls, outcomes, strict=True):
                chat_call.output = outcome.text(ctx.sample.source)
                messages.append(tool_message(chat_call))
            calls += len(step)
            steps += 1
            if len(requested) > len(step) or calls >= self.max_calls:
                return self._stop(checker, await self._final(messages, tags), steps, "max_calls", calls)

    def _stop(
        self, checker: CallChecker, answer: str, steps: int, reason: str, calls: int | None = None
    ) -> TurnResult:
        """The turn's result with its events: the stop (at a cap, with its repeat note) and a reply
        that looks like a tool call."""
        events = checker.finish()
        if reason != "done":
            stop: dict[str, Any] = {"kind": "stop", "reason": reason, "steps": steps}
            if calls is not None:
                stop["calls"] = calls
            note = checker.repeat_note()
            if note:
                stop["detail"] = note
            events.append(stop)
        found = text_tool_call(answer, checker.schemas)
        if found:
            events.append({"kind": "text_tool_call", **found})
        return TurnResult(answer, steps, reason, events)

    async def _final(self, messages: list[dict[str, Any]], tags: dict[str, str] | None = None) -> str:
        """The reply after a cap: one request without tools; '' if it fails."""
        try:
            message = await self.chat.complete(messages, [], tags)
        except LlmError:
            return ""
        return str(message.get("content") or "")

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self.chat.aclose()
