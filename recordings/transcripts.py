"""How a tool call reads in an agent's transcript: the observation text, and OpenAI-style chat messages.

The one representation of a call's outcome that the proxy's exports, the trace-store reader and the
agents' history all use (the proxy and the evaluator may not import each other; both import this).

:func:`observation` writes what an agent of each benchmark's released code sees for one call:

- ``finmcp`` (FinMCP-Bench inference, ``DianJin-TIR/infer/inference_api.py``): the MCP SDK returns an
  ``isError`` result like any other, and the script keeps its text (``content[0].text``), so a tool error
  reads as its plain text. A call that raised (a JSON-RPC error, a transport failure, a timeout) becomes
  ``"[error] <message>"``.
- ``fintoolbench`` (FinToolBench's agent, ``code_bench/agent/financial_agent.py``): a tool that raised is
  stored, and shown to the model, as the JSON string ``{"error": "<message>"}``. An MCP tool's exception
  is an ``isError`` result, so ``isError`` results and calls that raised both read ``{"error": message}``;
  the message is never empty (an empty one would not count as an error to FinToolBench's evaluator).

:func:`chat_messages` writes turns as the FinMCP-Bench files hold them: per turn a user message, one
assistant message with ``tool_calls`` per group of parallel calls, one ``tool`` message per call, then
the reply when it is known.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

STYLES = ("finmcp", "fintoolbench")
"""Observation conventions: FinMCP-Bench's inference script, FinToolBench's agent."""
RAISED_STATUSES = frozenset({"rpc_error", "transport_error", "cancelled", "pending"})
"""Trace statuses of a call that got no tool result (the client saw an exception)."""


def result_text(result: Any) -> str:
    """The text blocks of an MCP tool result, joined by newlines; without any, its ``structuredContent``
    as JSON (2-space indent, non-ASCII kept); else ``""``."""
    if not isinstance(result, Mapping):
        return ""
    blocks = result.get("content")
    texts = [
        block["text"]
        for block in (blocks if isinstance(blocks, list) else [])
        if isinstance(block, Mapping)
        and block.get("type", "text") == "text"
        and isinstance(block.get("text"), str)
    ]
    if texts:
        return "\n".join(texts)
    if result.get("structuredContent") is not None:
        return json.dumps(result["structuredContent"], ensure_ascii=False, indent=2)
    return ""


def failure(result: Any, error: Any = None, status: str | None = None) -> tuple[str, str] | None:
    """None for a normal result; else ``(kind, message)``.

    ``kind`` is ``"raised"`` when the call got no tool result (``error`` is the JSON-RPC error object or an
    exception's text, or ``status`` is one of :data:`RAISED_STATUSES`), or ``"tool_error"`` for an
    ``isError`` result. The message is never empty: the error's message, the tool's text, or the status.
    """
    if error is not None or status in RAISED_STATUSES:
        message = error.get("message") if isinstance(error, Mapping) else error
        if message is not None and not isinstance(message, str):
            message = json.dumps(message, ensure_ascii=False)
        return "raised", message or status or "error"
    if (isinstance(result, Mapping) and result.get("isError")) or status == "tool_error":
        return "tool_error", result_text(result) or "tool error"
    return None


def observation(result: Any, error: Any = None, status: str | None = None, *, style: str) -> str:
    """What an agent of ``style`` (:data:`STYLES`) sees for one call (see the module docstring)."""
    if style not in STYLES:
        raise ValueError(f"unknown observation style {style!r}; choose from {', '.join(STYLES)}")
    failed = failure(result, error, status)
    if failed is None:
        return result_text(result)
    kind, message = failed
    if style == "fintoolbench":
        return json.dumps({"error": message}, ensure_ascii=False)
    return result_text(result) if kind == "tool_error" else f"[error] {message}"


def call_id(*parts: object) -> str:
    """A stable ``call_<22 hex>`` id (the shape of the official files) from the parts that name a call."""
    digest = hashlib.sha256("/".join(str(p) for p in parts).encode()).hexdigest()
    return f"call_{digest[:22]}"


@dataclass(slots=True)
class ChatCall:
    """One call of a transcript: its id, tool, arguments and the observation its ``tool`` message holds."""

    id: str
    tool: str
    arguments: Any
    output: str = ""


@dataclass(slots=True)
class ChatTurn:
    """One turn of a transcript: the user text, the groups of parallel calls, the reply when known."""

    user: str
    groups: list[list[ChatCall]] = field(default_factory=list)
    reply: str | None = None


def assistant_message(calls: Sequence[ChatCall], *, index: bool = False) -> dict[str, Any]:
    """An assistant message with one ``tool_calls`` entry per call (``arguments`` as a JSON string);
    ``index`` adds each entry's position, as the official inference writes it."""
    entries = []
    for position, call in enumerate(calls):
        entry: dict[str, Any] = {"id": call.id, "type": "function"}
        if index:
            entry["index"] = position
        entry["function"] = {"name": call.tool, "arguments": json.dumps(call.arguments, ensure_ascii=False)}
        entries.append(entry)
    return {"role": "assistant", "content": "", "tool_calls": entries}


def tool_message(call: ChatCall) -> dict[str, Any]:
    """The ``tool`` message answering ``call``."""
    return {"role": "tool", "tool_call_id": call.id, "content": call.output}


def chat_messages(turns: Iterable[ChatTurn], *, index: bool = False) -> list[dict[str, Any]]:
    """OpenAI-style messages of ``turns``: user, then per group the assistant message and the tool
    messages, then the reply (when not None)."""
    messages: list[dict[str, Any]] = []
    for turn in turns:
        messages.append({"role": "user", "content": turn.user})
        for group in turn.groups:
            messages.append(assistant_message(group, index=index))
            messages.extend(tool_message(call) for call in group)
        if turn.reply is not None:
            messages.append({"role": "assistant", "content": turn.reply})
    return messages
