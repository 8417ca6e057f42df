"""The stdio side's own answers to lines that are not JSON-RPC messages (JSON-RPC 2.0 §5.1, §6).

A stdio line is one message in UTF-8 JSON. A line that is not JSON (truncated, not JSON at all, or not
UTF-8: RFC 8259 §8.1) gets a ``-32700`` parse error; a JSON value that is not a JSON-RPC message (a
number, a string, ``null``, ``[]``, an object with neither ``method`` nor ``result``/``error``) gets
``-32600``; a batch holding one gets an array of answers (``-32600`` for each member that is not a
message, and for each request refused with it; notifications and responses get none). Such a line is
not forwarded: the upstream would have to guess (an SDK server decodes invalid UTF-8 with
replacement characters and runs the call it reads), and the trace could not tell the same story.

The id of an answer is the line's when it can be read: a line that is JSON once its invalid bytes are
replaced keeps its id, so the client's request is answered, not left waiting. Else ``null``.
"""

from __future__ import annotations

import json
from typing import Any

from finmcp.proxy.jsonrpc import Message, classify, error_message

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
NOT_FORWARDED = "not forwarded to the upstream"


def refusal(raw: bytes, messages: list[Message]) -> bytes | None:
    """The proxy's answer to a line that must not be forwarded, or None when the line is forwarded.

    ``messages`` is :func:`proxy.jsonrpc.parse_body` of ``raw``; only a line holding an ``invalid``
    message is looked at again, so a well-formed line costs nothing more.
    """
    if all(msg.kind != "invalid" for msg in messages):
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = raw[exc.start : exc.start + 1].hex()
        reason = (
            f"parse error: the line is not valid UTF-8 (byte 0x{bad} at offset {exc.start}); {NOT_FORWARDED}"
        )
        return _error(_lossy_id(raw), reason, PARSE_ERROR)
    try:
        value = json.loads(text)
    except RecursionError:  # nested deeper than the parser goes: forwarded as before, logged as invalid
        return None
    except ValueError as exc:
        return _error(None, f"parse error: the line is not JSON ({exc}); {NOT_FORWARDED}", PARSE_ERROR)
    if isinstance(value, list) and value:
        return _batch(value)
    return _error(_id_of(value), f"invalid request: {_what(value)}; {NOT_FORWARDED}", INVALID_REQUEST)


def _batch(items: list[Any]) -> bytes:
    answers = []
    for index, item in enumerate(items):
        msg = classify(item, b"")
        if msg.kind == "invalid":
            reason = f"invalid request: batch member {index} is {_what(item)}; the batch is {NOT_FORWARDED}"
        elif msg.kind == "request":
            reason = f"invalid request: refused with its batch (a member is not a JSON-RPC message); {NOT_FORWARDED}"
        else:
            continue
        answers.append(error_message(_id_of(item), f"finmcp-proxy: {reason}", INVALID_REQUEST))
    return b"[" + b",".join(answers) + b"]"


def _error(request_id: Any, reason: str, code: int) -> bytes:
    return error_message(request_id, f"finmcp-proxy: {reason}", code)


def _what(value: Any) -> str:
    """What a JSON value that is not a JSON-RPC message is, in a few words."""
    if isinstance(value, dict):
        return "an object with no method, result or error"
    if value == []:
        return "an empty batch"
    kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )
    return f"{kind}, not a JSON-RPC object"


def _id_of(value: Any) -> Any:
    """The request id of a JSON value, when it is one a JSON-RPC answer may carry (else None)."""
    if not isinstance(value, dict):
        return None
    rid = value.get("id")
    return rid if isinstance(rid, int | str) and not isinstance(rid, bool) else None


def _lossy_id(raw: bytes) -> Any:
    """The id of a line that is not UTF-8, read with its invalid bytes replaced (None when unreadable)."""
    try:
        return _id_of(json.loads(raw.decode("utf-8", errors="replace")))
    except (ValueError, RecursionError):
        return None
