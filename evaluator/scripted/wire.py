"""OpenAI wire formats for the scripted model: requests in, replies out (JSON, or SSE chunks).

Chat Completions (``/v1/chat/completions``) and Responses (``/v1/responses``), as the openai SDK
sends and parses them. Usage is counted, not measured: a token is a run of word characters or one
other non-space character (``\\w+|[^\\w\\s]``); prompt tokens are those of the request's messages
(or input) and instructions as canonical JSON plus those of its tools as canonical JSON, completion tokens those of the reply's text and of each
call's name and arguments. Deterministic, and the same for every framework.
"""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Iterator
from typing import Any

from finmcp.evaluator.scripted.plan import Conversation, Entry, Reply, ScriptError

TOKEN = re.compile(r"\w+|[^\w\s]")
MODEL = "finmcp-scripted"


def count_tokens(text: str) -> int:
    """Tokens of ``text`` under the documented rule (``\\w+|[^\\w\\s]``)."""
    return sum(1 for _ in TOKEN.finditer(text))


@functools.lru_cache(maxsize=64)
def _cached_count(text: str) -> int:
    """:func:`count_tokens` of a text sent again and again (a request's tool list)."""
    return count_tokens(text)


def _text(content: Any) -> str:
    """The text of a message content: a string, or a list of parts (``text``/``input_text``/...)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return str(content)


def _tools(raw: Any, nested: bool) -> dict[str, dict[str, Any]]:
    """name -> parameters of the request's function tools (``nested``: Chat's ``{"function": {...}}``)."""
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise ScriptError("'tools' must be a list", code="invalid_tools")
    out: dict[str, dict[str, Any]] = {}
    for tool in raw:
        spec = tool.get("function") if nested and isinstance(tool, dict) else tool
        if isinstance(spec, dict) and isinstance(spec.get("name"), str):
            params = spec.get("parameters")
            out[spec["name"]] = params if isinstance(params, dict) else {}
    return out


def _require_object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ScriptError("the request body must be a JSON object", code="invalid_body")
    return body


def chat_conversation(body: Any) -> Conversation:
    """A Chat Completions request as a :class:`Conversation`."""
    body = _require_object(body)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ScriptError("'messages' must be a non-empty list", code="invalid_messages")
    entries = []
    for m in messages:
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise ScriptError("every message must be an object with a 'role'", code="invalid_messages")
        role = str(m["role"])
        role = {"developer": "system", "function": "tool"}.get(role, role)
        ids = [c.get("id", "") for c in m.get("tool_calls") or [] if isinstance(c, dict)]
        answers = m.get("tool_call_id")
        entries.append(
            Entry(role, _text(m.get("content")), ids, str(answers) if answers is not None else None)
        )
    return Conversation(entries, _tools(body.get("tools"), nested=True))


def responses_conversation(body: Any) -> Conversation:
    """A Responses request (``input`` string or items, ``instructions``) as a :class:`Conversation`."""
    body = _require_object(body)
    if body.get("previous_response_id"):
        raise ScriptError(
            "previous_response_id is not supported: the scripted model is stateless; send the whole input",
            code="unsupported_parameter",
        )
    raw = body.get("input")
    entries = [Entry("system", str(body["instructions"]))] if body.get("instructions") else []
    if isinstance(raw, str):
        entries.append(Entry("user", raw))
    elif isinstance(raw, list):
        for item in raw:
            if not isinstance(item, dict):
                raise ScriptError("every input item must be an object", code="invalid_input")
            kind = item.get("type", "message")
            if kind == "function_call":
                entries.append(Entry("assistant", "", [str(item.get("call_id", ""))]))
            elif kind == "function_call_output":
                entries.append(Entry("tool", _text(item.get("output")), [], str(item.get("call_id", ""))))
            elif kind == "message" or "role" in item:
                role = {"developer": "system"}.get(str(item.get("role")), str(item.get("role")))
                entries.append(Entry(role, _text(item.get("content"))))
    else:
        raise ScriptError("'input' must be a string or a list of items", code="invalid_input")
    if not entries:
        raise ScriptError("'input' is empty", code="invalid_input")
    return Conversation(entries, _tools(body.get("tools"), nested=False))


def usage_counts(body: dict[str, Any], reply: Reply) -> tuple[int, int]:
    """(prompt tokens, completion tokens) under the documented rule."""
    parts = {k: body.get(k) for k in ("messages", "input", "instructions") if body.get(k)}
    prompt = count_tokens(json.dumps(parts, ensure_ascii=False, sort_keys=True))
    if body.get("tools"):
        prompt += _cached_count(json.dumps(body["tools"], ensure_ascii=False, sort_keys=True))
    completion = count_tokens(reply.text if not reply.calls else "")
    completion += sum(count_tokens(c.name) + count_tokens(c.arguments) for c in reply.calls)
    return prompt, completion


def _ident(prefix: str, reply: Reply) -> str:
    return f"{prefix}_{reply.sample}_{reply.turn}_{len(reply.calls)}_{time.monotonic_ns()}"


# -- Chat Completions --------------------------------------------------------------------------------


def chat_message(reply: Reply) -> dict[str, Any]:
    """The assistant message of a reply."""
    if reply.calls:
        calls = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in reply.calls
        ]
        return {"role": "assistant", "content": None, "tool_calls": calls, "refusal": None}
    return {"role": "assistant", "content": reply.text, "refusal": None}


def chat_completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    """A whole ``chat.completion`` object."""
    prompt, completion = usage_counts(body, reply)
    return {
        "id": _ident("chatcmpl", reply),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(body.get("model") or MODEL),
        "choices": [
            {
                "index": 0,
                "message": chat_message(reply),
                "finish_reason": "tool_calls" if reply.calls else "stop",
                "logprobs": None,
            }
        ],
        "usage": _chat_usage(prompt, completion),
    }


def _chat_usage(prompt: int, completion: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


def chat_chunks(body: dict[str, Any], reply: Reply) -> Iterator[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects of a streamed reply (usage last when asked for)."""
    ident, created, model = _ident("chatcmpl", reply), int(time.time()), str(body.get("model") or MODEL)

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return {
            "id": ident,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [choice],
        }

    yield chunk({"role": "assistant", "content": "" if not reply.calls else None})
    for i, call in enumerate(reply.calls):
        head = {
            "index": i,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        yield chunk({"tool_calls": [head]})
        for piece in _pieces(call.arguments):
            yield chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
    if not reply.calls:
        for piece in _pieces(reply.text):
            yield chunk({"content": piece})
    yield chunk({}, "tool_calls" if reply.calls else "stop")
    options = body.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage"):
        prompt, completion = usage_counts(body, reply)
        yield {
            "id": ident,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [],
            "usage": _chat_usage(prompt, completion),
        }


def _pieces(text: str, size: int = 16) -> list[str]:
    """``text`` in pieces of ``size`` characters (a stream delivers it in several deltas)."""
    return [text[i : i + size] for i in range(0, len(text), size)]


# -- Responses ---------------------------------------------------------------------------------------


def _output_items(reply: Reply) -> list[dict[str, Any]]:
    if reply.calls:
        return [
            {
                "type": "function_call",
                "id": f"fc_{c.id}",
                "call_id": c.id,
                "name": c.name,
                "arguments": c.arguments,
                "status": "completed",
            }
            for c in reply.calls
        ]
    text = {"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}
    return [
        {
            "type": "message",
            "id": _ident("msg", reply),
            "status": "completed",
            "role": "assistant",
            "content": [text],
        }
    ]


def response_object(
    body: dict[str, Any], reply: Reply, status: str = "completed", output: list[Any] | None = None
) -> dict[str, Any]:
    """A ``response`` object (``status`` ``in_progress`` with no output while streaming starts)."""
    prompt, completion = usage_counts(body, reply)
    usage = {
        "input_tokens": prompt,
        "output_tokens": completion,
        "total_tokens": prompt + completion,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }
    return {
        "id": f"resp_{reply.sample}_{reply.turn}_{time.monotonic_ns()}",
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "metadata": {},
        "model": str(body.get("model") or MODEL),
        "output": _output_items(reply) if output is None else output,
        "parallel_tool_calls": True,
        "temperature": None,
        "tool_choice": body.get("tool_choice") or "auto",
        "tools": body.get("tools") or [],
        "top_p": None,
        "usage": usage if status == "completed" else None,
    }


def response_events(body: dict[str, Any], reply: Reply) -> Iterator[dict[str, Any]]:
    """The events of a streamed Responses reply, ``response.created`` to ``response.completed``."""
    final = response_object(body, reply)
    start = {**final, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": start},
        {"type": "response.in_progress", "response": start},
    ]
    for n, item in enumerate(final["output"]):
        if item["type"] == "function_call":
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": n,
                    "item": {**item, "arguments": "", "status": "in_progress"},
                }
            )
            for piece in _pieces(item["arguments"]):
                events.append(
                    {
                        "type": "response.function_call_arguments.delta",
                        "item_id": item["id"],
                        "output_index": n,
                        "delta": piece,
                    }
                )
            events.append(
                {
                    "type": "response.function_call_arguments.done",
                    "item_id": item["id"],
                    "output_index": n,
                    "arguments": item["arguments"],
                    "name": item["name"],
                }
            )
        else:
            part = item["content"][0]
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": n,
                    "item": {**item, "content": [], "status": "in_progress"},
                }
            )
            events.append(
                {
                    "type": "response.content_part.added",
                    "item_id": item["id"],
                    "output_index": n,
                    "content_index": 0,
                    "part": {**part, "text": ""},
                }
            )
            for piece in _pieces(part["text"]):
                events.append(
                    {
                        "type": "response.output_text.delta",
                        "item_id": item["id"],
                        "output_index": n,
                        "content_index": 0,
                        "delta": piece,
                        "logprobs": [],
                    }
                )
            events.append(
                {
                    "type": "response.output_text.done",
                    "item_id": item["id"],
                    "output_index": n,
                    "content_index": 0,
                    "text": part["text"],
                    "logprobs": [],
                }
            )
            events.append(
                {
                    "type": "response.content_part.done",
                    "item_id": item["id"],
                    "output_index": n,
                    "content_index": 0,
                    "part": part,
                }
            )
        events.append({"type": "response.output_item.done", "output_index": n, "item": item})
    events.append({"type": "response.completed", "response": final})
    for number, event in enumerate(events):
        yield {**event, "sequence_number": number}


def sse(events: Iterator[dict[str, Any]], named: bool, done: bool) -> Iterator[bytes]:
    """Server-sent events: ``event: TYPE`` lines when ``named`` (Responses), ``data: [DONE]`` at the end when ``done`` (Chat)."""
    for event in events:
        head = f"event: {event['type']}\n" if named else ""
        yield f"{head}data: {json.dumps(event, ensure_ascii=False)}\n\n".encode()
    if done:
        yield b"data: [DONE]\n\n"


def error_body(message: str, code: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    """An OpenAI-style error object."""
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}
