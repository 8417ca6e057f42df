"""Raw JSON-RPC over HTTP, for tests that need bytes an SDK client would never send.

One builder for every era: the stateless 2026-07-28 era carries its protocol version, client info and
capabilities in ``params._meta`` and in ``MCP-Protocol-Version``/``Mcp-Method``/``Mcp-Name`` headers;
the handshake era (``initialize`` first) needs only :data:`JSON_HEADERS`.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2

MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
ACCEPT = "application/json, text/event-stream"
JSON_HEADERS = {"Content-Type": "application/json", "Accept": ACCEPT}


def modern_meta(client: str = "raw", version: str = "0") -> dict[str, Any]:
    """The ``_meta`` members a 2026-era request carries instead of a handshake."""
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": client, "version": version},
        "io.modelcontextprotocol/clientCapabilities": {},
    }


def modern_message(
    method: str, params: dict[str, Any] | None = None, rid: int | str = 1, *, client: str = "raw"
) -> dict[str, Any]:
    """A 2026-era request: ``params`` (copied) with the era's ``_meta``."""
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": method,
        "params": {**(params or {}), "_meta": modern_meta(client)},
    }


def tool_call(name: str, arguments: Any = None, rid: int | str = 1, *, client: str = "raw") -> dict[str, Any]:
    """A 2026-era ``tools/call`` request."""
    return modern_message(
        "tools/call", {"name": name, "arguments": {} if arguments is None else arguments}, rid, client=client
    )


def modern_headers(method: str = "tools/call", name: str | None = None) -> dict[str, str]:
    """The HTTP headers of a 2026-era POST (``Mcp-Name`` only when the request names a tool)."""
    return {
        **JSON_HEADERS,
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
        **({"Mcp-Name": name} if name is not None else {}),
    }


def headers_for(message: dict[str, Any]) -> dict[str, str]:
    """:func:`modern_headers` that agree with a request built by :func:`modern_message`."""
    return modern_headers(message["method"], (message.get("params") or {}).get("name"))


def modern_call(
    name: str, arguments: Any = None, rid: int | str = 1, *, client: str = "raw"
) -> tuple[bytes, dict[str, str]]:
    """A 2026-era ``tools/call`` as (body bytes, headers)."""
    return json.dumps(tool_call(name, arguments, rid, client=client)).encode(), modern_headers(
        "tools/call", name
    )


def modern_post(
    url: str, message: dict[str, Any], headers: dict[str, str] | None = None, *, timeout: float = 10
) -> httpx2.Response:
    """POST one 2026-era request (built by :func:`modern_message`), with extra or overriding headers."""
    with httpx2.Client(timeout=timeout) as http:
        return http.post(
            url, content=json.dumps(message), headers={**headers_for(message), **(headers or {})}
        )


def initialize(rid: int | str = 1, *, client: str = "raw", version: str = HANDSHAKE) -> dict[str, Any]:
    """A handshake-era ``initialize`` request."""
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": client, "version": "1"},
        },
    }


def sse_messages(raw: bytes) -> list[dict[str, Any]]:
    """The JSON messages of an SSE body, as a client parses it (``data:`` lines joined per event).

    An event whose data is not JSON comes back as ``{"unparseable": text}``.
    """
    out: list[dict[str, Any]] = []
    for block in raw.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = [line[5:].lstrip() for line in block.split(b"\n") if line.startswith(b"data:")]
        if data:
            joined = b"\n".join(data)
            try:
                out.append(json.loads(joined))
            except json.JSONDecodeError:
                out.append({"unparseable": joined.decode(errors="replace")})
    return out


def messages_of(content_type: str, raw: bytes) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a JSON or SSE response body."""
    if content_type.startswith("text/event-stream"):
        return sse_messages(raw)
    return [json.loads(raw)]


def answers_for(content_type: str, raw: bytes, rid: int | str) -> list[dict[str, Any]]:
    """The responses (result or error) for request ``rid`` in a JSON or SSE response body."""
    return [
        m for m in messages_of(content_type, raw) if m.get("id") == rid and ("result" in m or "error" in m)
    ]


def raw_request(method: str, target: str, headers: dict[str, str], body: bytes = b"") -> bytes:
    """An HTTP/1.1 request exactly as written here (header order and case kept; Content-Length added)."""
    lines = [f"{method} {target} HTTP/1.1", *(f"{k}: {v}" for k, v in headers.items())]
    if body or method == "POST":
        lines.append(f"content-length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
