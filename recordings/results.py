"""MCP tool results (``{content, structuredContent, isError}``) as stored in the database."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from finmcp.recordings.errors import InvalidValueError

_ALLOWED_KEYS = frozenset({"content", "structuredContent", "isError", "_meta"})
_SURROGATE = re.compile("[\ud800-\udfff]")


def dumps(value: Any) -> str:
    """Compact JSON text that keeps key order and non-ASCII text as is (for stored payloads)."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError as exc:  # NaN/Infinity
        raise InvalidValueError(f"value is not valid JSON: {exc}") from None
    except TypeError as exc:
        raise InvalidValueError(f"value is not JSON-serialisable: {exc}") from None


def escape_surrogates(text: str) -> str:
    """``text`` with each lone surrogate written as its JSON escape (``\\ud800``): valid UTF-8.

    A client may send ``"\\ud800"`` in JSON; decoded, that is a lone surrogate, which UTF-8 (and so
    SQLite text, and any UTF-8 file) cannot hold. In JSON text a raw character only occurs inside a
    string, so the escaped text decodes to exactly the same value: nothing is lost. In plain text
    (a tool name, a tag) the escape stays as six characters.
    """
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def utf8(text: str) -> bytes:
    """``text`` as UTF-8, lone surrogates written as JSON escapes (:func:`escape_surrogates`)."""
    try:
        return text.encode()
    except UnicodeEncodeError:
        return escape_surrogates(text).encode()


def normalize_result(result: Any, where: str = "result") -> dict[str, Any]:
    """Check an MCP ``CallToolResult`` dict and return ``{content, structuredContent, isError}``.

    ``content`` must be a list of content blocks (objects with a string ``type``),
    ``structuredContent`` an object or None, ``isError`` a bool (default False). ``_meta`` is
    dropped (provenance is attached on replay); any other key is an error.
    """
    if not isinstance(result, Mapping):
        raise InvalidValueError(f"{where}: expected an MCP result object, got {type(result).__name__}")
    unknown = sorted(set(result) - _ALLOWED_KEYS)
    if unknown:
        raise InvalidValueError(
            f"{where}: unknown keys {unknown}; expected content, structuredContent, isError"
        )
    if "content" not in result:
        raise InvalidValueError(f"{where}: 'content' is missing")
    content = result["content"]
    if not isinstance(content, list):
        raise InvalidValueError(f"{where}.content: expected a list of content blocks")
    for i, block in enumerate(content):
        if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
            raise InvalidValueError(f"{where}.content[{i}]: expected an object with a string 'type'")
    structured = result.get("structuredContent")
    if structured is not None and not isinstance(structured, Mapping):
        raise InvalidValueError(
            f"{where}.structuredContent: expected an object or null, got {type(structured).__name__}"
        )
    is_error = result.get("isError", False)
    if is_error is None:
        is_error = False
    if not isinstance(is_error, bool):
        raise InvalidValueError(f"{where}.isError: expected true or false, got {is_error!r}")
    return {"content": list(content), "structuredContent": structured, "isError": is_error}


def result_to_columns(result: Mapping[str, Any]) -> tuple[str, str | None, int]:
    """``(content, structured_content, is_error)`` column values of a normalised result."""
    structured = result["structuredContent"]
    return (
        dumps(result["content"]),
        None if structured is None else dumps(structured),
        int(result["isError"]),
    )


def result_from_columns(content: str, structured: str | None, is_error: int) -> dict[str, Any]:
    """The MCP result dict rebuilt from its stored columns (fresh objects on every call)."""
    return {
        "content": json.loads(content),
        "structuredContent": None if structured is None else json.loads(structured),
        "isError": bool(is_error),
    }


def loose_result(result: Any, where: str = "result") -> dict[str, Any]:
    """A traced upstream result as logged: never rejects odd but JSON-shaped upstream output.

    Keeps ``content`` and ``structuredContent`` exactly as sent and coerces ``isError`` to a bool;
    only a non-object result is an error. Used by the trace API, where nothing may be dropped.
    """
    if not isinstance(result, Mapping):
        raise InvalidValueError(f"{where}: expected a result object, got {type(result).__name__}")
    return {
        "content": result.get("content"),
        "structuredContent": result.get("structuredContent"),
        "isError": bool(result.get("isError", False)),
    }
