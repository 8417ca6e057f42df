"""What a model answer says: model, usage, finish reason, tool calls, final text; streams assembled.

Pure functions over bytes, for the model door (:mod:`proxy.model_door`): :func:`api_of` names the
API of a request path, :func:`summarize` reads an answer, whole (JSON) or streamed (SSE events), in
the three wire formats the door understands: OpenAI Chat Completions, OpenAI Responses and Anthropic
Messages. Token counts are taken only from what the upstream reported; when it reported none, the
counts are None and ``usage_note`` says why.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from finmcp.recordings.plumbing.sse import parse_events

PATHS = {"/v1/chat/completions": "chat", "/v1/responses": "responses", "/v1/messages": "messages"}


def api_of(rest: str) -> str:
    """``chat`` | ``responses`` | ``messages`` for the three model APIs (path after the tags), else ``other``."""
    return PATHS.get(rest.rstrip("/"), "other")


@dataclass(slots=True)
class Summary:
    """What the door stores of one answer (see ``recordings.model_schema``)."""

    answer: Any = None  # the JSON answer (a stream: assembled); None when unreadable (then ``raw``)
    raw: str | None = None  # the body as text when it was not what the API promises
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    usage_note: str | None = None
    finish_reason: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    text: str | None = None
    error: str | None = None


def request_facts(body: bytes) -> tuple[Any, str | None, bool]:
    """``(parsed JSON or None, model, stream)`` of a request body."""
    try:
        parsed = json.loads(body) if body else None
    except ValueError:
        return None, None, False
    if not isinstance(parsed, dict):
        return parsed, None, False
    model = parsed.get("model")
    return parsed, model if isinstance(model, str) else None, parsed.get("stream") is True


def summarize(api: str, body: bytes, event_stream: bool, complete: bool) -> Summary:
    """Read an answer body (``event_stream``: SSE); ``complete`` False for a stream cut short."""
    text = body.decode("utf-8", errors="replace")
    if api == "other":
        return Summary(raw=text)
    try:
        if event_stream:
            summary = _stream(api, body)
        else:
            answer = json.loads(body)
            if not isinstance(answer, dict):
                raise ValueError("not a JSON object")
            summary = _whole(api, answer)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        return Summary(raw=text, usage_note="answer unreadable", error=f"malformed model answer: {exc}")
    if summary.input_tokens is None and summary.output_tokens is None and summary.usage_note is None:
        summary.usage_note = _no_usage(api, event_stream, complete)
    return summary


def _no_usage(api: str, event_stream: bool, complete: bool) -> str:
    if not complete:
        return "stream cut before the upstream reported usage"
    if api == "chat" and event_stream:
        return "stream without a usage chunk (the request did not ask stream_options.include_usage)"
    return "the upstream's answer holds no usage"


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _usage(summary: Summary, usage: Any, api: str) -> None:
    if not isinstance(usage, dict):
        return
    if api == "chat":
        summary.input_tokens = _int(usage.get("prompt_tokens"))
        summary.output_tokens = _int(usage.get("completion_tokens"))
        details = usage.get("prompt_tokens_details")
    else:
        summary.input_tokens = _int(usage.get("input_tokens"))
        summary.output_tokens = _int(usage.get("output_tokens"))
        details = usage.get("input_tokens_details")
    if api == "messages":
        summary.cached_tokens = _int(usage.get("cache_read_input_tokens"))
    elif isinstance(details, dict):
        summary.cached_tokens = _int(details.get("cached_tokens"))


def _error(summary: Summary, answer: dict[str, Any]) -> bool:
    error = answer.get("error")
    if isinstance(error, dict) and ("message" in error or "type" in error):
        summary.error = str(error.get("message") or error.get("type"))
        summary.usage_note = "the upstream answered with an error"
        return True
    return False


def _whole(api: str, answer: dict[str, Any]) -> Summary:
    summary = Summary(answer=answer)
    if _error(summary, answer):
        return summary
    model = answer.get("model")
    summary.model = model if isinstance(model, str) else None
    _usage(summary, answer.get("usage"), api)
    if api == "chat":
        choice = (answer.get("choices") or [{}])[0]
        message = choice.get("message") or {}
        summary.finish_reason = choice.get("finish_reason")
        for call in message.get("tool_calls") or []:
            fn = call.get("function") or {}
            summary.tool_calls.append(
                {"id": call.get("id"), "name": fn.get("name"), "arguments": fn.get("arguments")}
            )
        content = message.get("content")
        summary.text = content if isinstance(content, str) else None
    elif api == "responses":
        _responses_output(summary, answer)
    else:
        summary.finish_reason = answer.get("stop_reason")
        texts = []
        for block in answer.get("content") or []:
            if block.get("type") == "text":
                texts.append(block.get("text") or "")
            elif block.get("type") == "tool_use":
                summary.tool_calls.append(
                    {"id": block.get("id"), "name": block.get("name"), "arguments": block.get("input")}
                )
        summary.text = "".join(texts) if texts else None
    if summary.tool_calls:
        summary.text = None  # a turn's final text is an answer that asked for no tool
    return summary


def _responses_output(summary: Summary, answer: dict[str, Any]) -> None:
    status = answer.get("status")
    incomplete = answer.get("incomplete_details")
    if isinstance(incomplete, dict) and incomplete.get("reason"):
        summary.finish_reason = str(incomplete["reason"])
    else:
        summary.finish_reason = status if isinstance(status, str) else None
    texts = []
    for item in answer.get("output") or []:
        kind = item.get("type")
        if kind == "message":
            for part in item.get("content") or []:
                if part.get("type") == "output_text":
                    texts.append(part.get("text") or "")
        elif kind == "function_call":
            summary.tool_calls.append(
                {"id": item.get("call_id"), "name": item.get("name"), "arguments": item.get("arguments")}
            )
    summary.text = "".join(texts) if texts else None


def _stream(api: str, body: bytes) -> Summary:
    events = [e for e in parse_events(body) if e.data]
    datas = []
    for event in events:
        if event.data.strip() == b"[DONE]":
            continue
        datas.append(json.loads(event.data))
    if api == "chat":
        return _chat_stream(datas)
    if api == "responses":
        return _responses_stream(datas)
    return _messages_stream(datas)


def _chat_stream(chunks: list[dict[str, Any]]) -> Summary:
    summary = Summary()
    texts: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    head: dict[str, Any] = {}
    for item in chunks:
        if _error(summary, item):
            return summary
        head = head or {k: item.get(k) for k in ("id", "object", "created", "model")}
        if isinstance(item.get("model"), str):
            summary.model = item["model"]
        if item.get("usage"):
            _usage(summary, item["usage"], "chat")
        for choice in item.get("choices") or []:
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                texts.append(delta["content"])
            for call in delta.get("tool_calls") or []:
                slot = calls.setdefault(call.get("index", 0), {"id": None, "name": None, "arguments": ""})
                fn = call.get("function") or {}
                slot["id"] = call.get("id") or slot["id"]
                slot["name"] = fn.get("name") or slot["name"]
                slot["arguments"] += fn.get("arguments") or ""
            if choice.get("finish_reason"):
                summary.finish_reason = choice["finish_reason"]
    summary.tool_calls = [calls[i] for i in sorted(calls)]
    text = "".join(texts) if texts else None
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if summary.tool_calls:
        message["tool_calls"] = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in summary.tool_calls
        ]
    summary.answer = {
        **head,
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": summary.finish_reason}],
        "usage": None
        if summary.input_tokens is None
        else {"prompt_tokens": summary.input_tokens, "completion_tokens": summary.output_tokens},
    }
    summary.text = None if summary.tool_calls else text
    return summary


def _responses_stream(events: list[dict[str, Any]]) -> Summary:
    final: dict[str, Any] | None = None
    texts: list[str] = []
    for item in events:
        kind = item.get("type")
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            final = item.get("response")
        elif kind == "response.output_text.delta":
            texts.append(item.get("delta") or "")
        elif kind == "error":
            summary = Summary(answer=item, error=str(item.get("message") or item.get("code")))
            summary.usage_note = "the upstream answered with an error"
            return summary
    if isinstance(final, dict):
        return _whole("responses", final)
    summary = Summary(answer={"object": "response", "status": "incomplete", "output_text": "".join(texts)})
    summary.text = "".join(texts) if texts else None
    for item in events:
        response = item.get("response")
        if isinstance(response, dict) and isinstance(response.get("model"), str):
            summary.model = response["model"]
    return summary


def _messages_stream(events: list[dict[str, Any]]) -> Summary:
    summary = Summary()
    message: dict[str, Any] = {}
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, str] = {}
    usage: dict[str, Any] = {}
    for item in events:
        kind = item.get("type")
        if kind == "error":
            summary.answer = item
            summary.error = str((item.get("error") or {}).get("message") or "error event")
            summary.usage_note = "the upstream answered with an error"
            return summary
        if kind == "message_start":
            message = dict(item.get("message") or {})
            usage.update(message.get("usage") or {})
        elif kind == "content_block_start":
            blocks[item.get("index", 0)] = dict(item.get("content_block") or {})
        elif kind == "content_block_delta":
            index = item.get("index", 0)
            delta = item.get("delta") or {}
            block = blocks.setdefault(index, {"type": "text", "text": ""})
            if delta.get("type") == "text_delta":
                block["text"] = (block.get("text") or "") + (delta.get("text") or "")
            elif delta.get("type") == "input_json_delta":
                partial[index] = partial.get(index, "") + (delta.get("partial_json") or "")
        elif kind == "message_delta":
            message.update({k: v for k, v in (item.get("delta") or {}).items() if v is not None})
            usage.update({k: v for k, v in (item.get("usage") or {}).items() if v is not None})
    for index, text in partial.items():
        try:
            blocks[index]["input"] = json.loads(text) if text else {}
        except ValueError:
            blocks[index]["input"] = text  # kept as sent: the agent got the same
    message["content"] = [blocks[i] for i in sorted(blocks)]
    if usage:
        message["usage"] = usage
    return _whole("messages", message)
