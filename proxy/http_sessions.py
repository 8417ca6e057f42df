"""Which trace session an HTTP request belongs to (the HTTP side and its refusals share the rule)."""

from __future__ import annotations

from typing import Any

from finmcp.proxy.jsonrpc import PROTOCOL_VERSION_META, Message
from finmcp.proxy.tags import Tags
from finmcp.recordings.plumbing.protocol import is_stateless


def request_session_key(lookup: dict[bytes, bytes], meta: dict[str, Any], tags: Tags) -> str | None:
    """The trace session of an HTTP request: its ``Mcp-Session-Id``, a 2026 client key, or None (not yet known).

    ``meta`` is the request's ``params._meta`` (the 2026 era's client info and protocol version).
    """
    raw_sid, raw_version = lookup.get(b"mcp-session-id"), lookup.get(b"mcp-protocol-version")
    if raw_sid:
        return raw_sid.decode("latin-1")
    version = raw_version.decode("latin-1") if raw_version is not None else None
    if is_stateless(version) or is_stateless(meta.get(PROTOCOL_VERSION_META)):
        info = meta.get("io.modelcontextprotocol/clientInfo")
        name = info.get("name") if isinstance(info, dict) else None
        cversion = info.get("version") if isinstance(info, dict) else None
        return f"2026:{name or '?'}/{cversion or '?'}@{tags.run or '-'}/{tags.sample or '-'}/{tags.trial}"
    return None


def is_probe(messages: list[Message]) -> bool:
    """A body that is one ``server/discover`` request (a 2026-07-28 client's first, era-probing request)."""
    return len(messages) == 1 and messages[0].kind == "request" and messages[0].method == "server/discover"
