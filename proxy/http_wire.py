"""HTTP/1.1 pieces the proxy writes or filters itself: hop-by-hop headers, error answers, CORS, chunks."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Sequence
from typing import Any

from finmcp.proxy.jsonrpc import error_message, parse_body
from finmcp.proxy.security import TOKEN_HEADER
from finmcp.proxy.tags import HEADER_KEYS

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
    204: b"No Content",
    400: b"Bad Request",
    401: b"Unauthorized",
    403: b"Forbidden",
    404: b"Not Found",
    405: b"Method Not Allowed",
    408: b"Request Timeout",
    413: b"Payload Too Large",
    421: b"Misdirected Request",
    431: b"Request Header Fields Too Large",
    501: b"Not Implemented",
    502: b"Bad Gateway",
    503: b"Service Unavailable",
    504: b"Gateway Timeout",
}


def error_response(
    status: int,
    message: str,
    request_ids: list[Any] | None,
    close: bool = False,
    extra: Sequence[tuple[bytes, bytes]] = (),
) -> tuple[bytes, bytes]:
    """A JSON-RPC error answer (one per request id; ``id: null`` when none) -> ``(whole response, body)``.

    ``extra``: more response headers (the CORS headers of a request from a ``--cors-origin``).
    """
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
    return head + header_lines(extra) + b"\r\n" + body, body


def header_lines(headers: Sequence[tuple[bytes, bytes]]) -> bytes:
    """``name: value\\r\\n`` for each header."""
    return b"".join(b"%s: %s\r\n" % pair for pair in headers)


def empty_response(status: int, headers: Sequence[tuple[bytes, bytes]]) -> bytes:
    """A response without a body (a preflight's ``204``, or its ``403``/``421`` refusal)."""
    return b"HTTP/1.1 %d %s\r\n%scontent-length: 0\r\n\r\n" % (
        status,
        REASONS.get(status, b"Error"),
        header_lines(headers),
    )


def with_cors(head: bytes, cors: Sequence[tuple[bytes, bytes]]) -> bytes:
    """An upstream response head with the proxy's CORS headers (``cors``) in place of its own.

    The head's other lines are kept byte for byte; only ``Access-Control-*`` lines are dropped (two
    ``Access-Control-Allow-Origin`` values would make the browser refuse the response).
    """
    lines = head[:-4].split(b"\r\n")
    kept = [line for line in lines if not line[:15].lower().startswith(b"access-control-")]
    return b"\r\n".join(kept) + b"\r\n" + header_lines(cors) + b"\r\n"


def request_ids(body: bytes) -> list[Any] | None:
    """The ids of the JSON-RPC requests in a body (None when there are none)."""
    if not body:
        return None
    ids = [m.id for m in parse_body(body) if m.kind == "request"]
    return ids or None


def chunk(data: bytes) -> bytes:
    """``data`` as one HTTP/1.1 chunk (nothing for no data: an empty chunk would end the body)."""
    return b"%x\r\n%s\r\n" % (len(data), data) if data else b""


def socket_is_quiet(transport: asyncio.BaseTransport) -> bool:
    """Nothing waits to be read on the transport's socket, not even its end (peeked, never consumed).

    False when a byte or the peer's close is pending, or when there is no socket to ask.
    """
    sock = transport.get_extra_info("socket")
    if sock is None or sock.fileno() < 0:  # none, or closed already
        return False
    probe = socket.socket(fileno=sock.fileno())  # the same descriptor, detached below: never closed here
    try:
        probe.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        probe.detach()
    return False
