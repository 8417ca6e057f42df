"""A request body over ``--max-body``: read to its end and discarded, then answered and logged.

Answering while the client is still sending, then closing, makes the client's kernel reset the
connection: an HTTP client (the SDK's httpx) then sees an empty ``ReadError`` instead of the answer.
So a body whose ``Content-Length`` is over ``--max-body`` but within :data:`DRAIN_LIMIT` is read to its
end (nothing of it is held but its first :data:`PREFIX_BYTES` and a running SHA-256), then answered
``413`` with a JSON-RPC error (the request's id when the body's start names it) and
``connection: close``. The trace has the refusal: the request as far as it was kept (a
``finmcp_truncated`` body, as for answers over ``--max-answer``), the proxy's answer, and for a
``tools/call`` whose id and tool name the start holds, a call row ``rpc_error`` with the answer's error.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from finmcp.proxy.capture import Tracer
from finmcp.proxy.http_sessions import request_session_key
from finmcp.proxy.http_wire import error_response
from finmcp.proxy.jsonrpc import Message, parse_body
from finmcp.proxy.tags import Tags

PREFIX_BYTES = 64 * 1024
"""Bytes of a refused body kept (for its id, method, tool name and session; and its message row)."""
DRAIN_LIMIT = 64 * 1024 * 1024
"""A declared body longer than this is refused at its head and the connection closed (not read)."""


@dataclass(slots=True)
class Drain:
    """A refused body being read to its end."""

    target: bytes
    lookup: dict[bytes, bytes]
    total: int
    remaining: int
    prefix: bytearray = field(default_factory=bytearray)
    digest: Any = field(default_factory=hashlib.sha256)

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Take the body's bytes at the start of ``data`` (what follows the body is dropped: the
        connection closes after the answer)."""
        piece = memoryview(data)[: self.remaining]
        room = PREFIX_BYTES - len(self.prefix)
        if room > 0:
            self.prefix += piece[:room]
        self.digest.update(piece)
        self.remaining -= len(piece)

    @property
    def done(self) -> bool:
        return self.remaining <= 0


def read_prefix(prefix: bytes | bytearray) -> dict[str, Any]:
    """The members of a JSON-RPC request that are whole in the first bytes of its body.

    Top-level members are read one by one until one is cut; inside ``params`` the same (so ``name``
    and ``_meta`` are found when they come before a huge ``arguments``). Nothing is guessed.
    """
    text = bytes(prefix).decode("utf-8", errors="replace")
    return _members(text, 0, nested=True)[0]


def _members(text: str, pos: int, nested: bool) -> tuple[dict[str, Any], int]:
    decoder = json.JSONDecoder()
    out: dict[str, Any] = {}
    pos = _skip(text, pos)
    if not text.startswith("{", pos):
        return out, -1
    pos += 1
    while True:
        pos = _skip(text, pos)
        try:
            key, pos = decoder.raw_decode(text, pos)
            pos = _skip(text, pos)
            if not isinstance(key, str) or not text.startswith(":", pos):
                return out, -1
            pos = _skip(text, pos + 1)
            if nested and key == "params" and text.startswith("{", pos):
                inner, end = _members(text, pos, nested=False)
                out[key] = inner
                if end < 0:
                    return out, -1
                pos = end
            else:
                out[key], pos = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):  # cut here (or not JSON): stop with what is whole
            return out, -1
        pos = _skip(text, pos)
        if text.startswith(",", pos):
            pos += 1
            continue
        return out, (pos + 1 if text.startswith("}", pos) else -1)


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def refuse(tracer: Tracer, tags: Tags, drain: Drain, max_body: int, no_session: str) -> bytes:
    """Log a drained request's refusal and return the whole ``413`` response to write.

    ``no_session``: the session key of a ``tools/call`` that names no session (as the HTTP side keys
    a request the upstream answers without one).
    """
    found = read_prefix(drain.prefix)
    rid = found.get("id")
    rid = rid if isinstance(rid, int | str) and not isinstance(rid, bool) else None
    method = found.get("method")
    found_params = found.get("params")
    params: dict[str, Any] = found_params if isinstance(found_params, dict) else {}
    message = f"request body too large ({drain.total} bytes; over the proxy's limit of {max_body} bytes, --max-body)"
    whole, answer = error_response(413, message, [rid] if rid is not None else None, close=True)
    found_meta = params.get("_meta")
    meta: dict[str, Any] = found_meta if isinstance(found_meta, dict) else {}
    key = request_session_key(drain.lookup, meta, tags)
    if key is None and method == "tools/call":
        key = no_session
    session = tracer.session(key, "http", tags) if key is not None else None
    marker = {"bytes": drain.total, "stored": len(drain.prefix), "sha256": drain.digest.hexdigest()}
    text = bytes(drain.prefix).decode("utf-8", errors="backslashreplace")
    body = json.dumps({"finmcp_truncated": marker, "prefix": text}, ensure_ascii=False).encode()
    name = params.get("name")
    if session is not None and method == "tools/call" and rid is not None and isinstance(name, str):
        obj = {"jsonrpc": "2.0", "id": rid, "method": method, "params": {"name": name, "_meta": meta}}
        tracer.client_message(
            session, tags, Message(body, obj, "request", rid, method)
        )  # starts the call row
        for msg in parse_body(answer):
            tracer.server_message(session, tags, msg, method)  # finishes it: rpc_error
        if key == no_session:  # a session of this one request: it ends here
            tracer.end_session(key)
        return whole
    tracer.log(
        session, tags, "c2s", Message(body, None, "invalid", rid, method if isinstance(method, str) else None)
    )
    for msg in parse_body(answer):
        tracer.log(session, tags, "s2c", msg)
    return whole
