"""HTTP/1.1 pieces the proxy writes or filters itself: hop-by-hop headers, error answers, chunks."""

from __future__ import annotations

from typing import Any

from proxy.jsonrpc import error_message, parse_body
from proxy.security import TOKEN_HEADER
from proxy.tags import HEADER_KEYS

HOP_BY_HOP = frozenset(  # not forwarded upstream (Host and Content-Length are set anew)
    {
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"host",
        b"content-length",
        b"expect",
        TOKEN_HEADER,
        *HEADER_KEYS,
    }
)
REASONS = {
    200: b"OK",
    400: b"Bad Request",
    401: b"Unauthorized",
    403: b"Forbidden",
    404: b"Not Found",
    405: b"Method Not Allowed",
    413: b"Payload Too Large",
    421: b"Misdirected Request",
    431: b"Request Header Fields Too Large",
    502: b"Bad Gateway",
    504: b"Gateway Timeout",
}


def error_response(
    status: int, message: str, request_ids: list[Any] | None, close: bool = False
) -> tuple[bytes, bytes]:
    """A JSON-RPC error answer (one per request id; ``id: null`` when none) -> ``(whole response, body)``."""
    ids = request_ids or [None]
    bodies = [error_message(i, f"finmcp-proxy: {message}") for i in ids]
    body = bodies[0] if len(bodies) == 1 else b"[" + b",".join(bodies) + b"]"
    head = b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n" % (
        status,
        REASONS.get(status, b"Error"),
        len(body),
    )
    if close:
        head += b"connection: close\r\n"
    return head + b"\r\n" + body, body


def request_ids(body: bytes) -> list[Any] | None:
    """The ids of the JSON-RPC requests in a body (None when there are none)."""
    if not body:
        return None
    ids = [m.id for m in parse_body(body) if m.kind == "request"]
    return ids or None


def chunk(data: bytes) -> bytes:
    """``data`` as one HTTP/1.1 chunk (nothing for no data: an empty chunk would end the body)."""
    return b"%x\r\n%s\r\n" % (len(data), data) if data else b""
