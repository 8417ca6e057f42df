"""A hostile Streamable HTTP upstream on 127.0.0.1 whose SSE answers never behave (benchmarks and tests).

``with HostileSseUpstream(mode="oversized", event_bytes=80 * 2**20) as upstream: upstream.url`` serves
an MCP endpoint on plain sockets, one thread per connection, so it keeps sending whatever the
caller's event loop does. ``initialize``, notifications, ``tools/list`` and every ``tools/call`` of a
tool other than ``hostile_tool`` get a small JSON answer at once: "other clients" are served
normally. A ``tools/call`` of ``hostile_tool`` gets ``200 text/event-stream`` (chunked) and then,
by ``mode``:

- ``"oversized"``: one event carrying the answer, ``event_bytes`` long with its blank line, written in
  chunks of ``piece_bytes`` as fast as the socket takes them; then the stream ends.
- ``"unterminated"``: the start of an answer event, then ``piece_bytes`` of filler every
  ``interval_ms``, never a blank line, until the peer closes or ``total_bytes`` were sent (then the
  stream ends without an answer).
- ``"progress"``: a ``notifications/progress`` event for the call every ``interval_ms``, never the
  answer, until the peer closes or ``total_bytes`` were sent.

``start_hostile_sse_upstream(mode, **params)`` returns ``(url, stop)`` for callers without a ``with``.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from typing import Any, Literal

from bench.socket_http import SocketPeer, read_json_request

Mode = Literal["oversized", "unterminated", "progress"]
MODES: tuple[Mode, ...] = ("oversized", "unterminated", "progress")
MiB = 1024 * 1024


class HostileSseUpstream(SocketPeer):
    """See the module docstring; ``sent_bytes`` counts the hostile bodies' bytes written so far."""

    def __init__(
        self,
        mode: Mode,
        *,
        hostile_tool: str = "hostile",
        event_bytes: int = 80 * MiB,
        piece_bytes: int = MiB,
        interval_ms: float = 10.0,
        total_bytes: int | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode {mode!r}: expected one of {', '.join(MODES)}")
        super().__init__()
        self.mode = mode
        self.hostile_tool = hostile_tool
        self.event_bytes = event_bytes
        self.piece_bytes = max(1, piece_bytes)
        self.interval_s = interval_ms / 1000
        self.total_bytes = total_bytes
        self.sent_bytes = 0
        self.hostile_calls = 0

    def serve(self, conn: socket.socket, index: int) -> None:
        """Answer requests on one connection; a call of the hostile tool ends it after its stream."""
        buffer = bytearray()
        while not self._stopping.is_set():
            message = read_json_request(conn, buffer)
            if message is None:
                return
            params = message.get("params")
            name = params.get("name") if isinstance(params, dict) else None
            if message.get("method") == "tools/call" and name == self.hostile_tool:
                with self._lock:
                    self.hostile_calls += 1
                self._hostile(conn, message)
                return  # the stream ended (or the peer left): this connection is done
            conn.sendall(_json_answer(message))

    def _hostile(self, conn: socket.socket, message: dict[str, Any]) -> None:
        head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        conn.sendall(head)
        rid = json.dumps(message.get("id"))
        if self.mode == "oversized":
            start = (
                b'data: {"jsonrpc":"2.0","id":'
                + rid.encode()
                + b',"result":{"content":[{"type":"text","text":"'
            )
            end = b'"}],"isError":false}}\n\n'
            filler = max(0, self.event_bytes - len(start) - len(end))
            self._send(conn, start)
            piece = b"x" * self.piece_bytes
            while filler > 0:
                size = min(filler, self.piece_bytes)
                self._send(conn, piece if size == len(piece) else piece[:size])
                filler -= size
            self._send(conn, end)
        elif self.mode == "unterminated":
            self._send(conn, b'data: {"jsonrpc":"2.0","id":' + rid.encode() + b',"result":{"content":"')
            piece = b"x" * self.piece_bytes
            while not self._stopping.is_set() and not self._spent():
                self._send(conn, piece)
                time.sleep(self.interval_s)
        else:
            meta = message.get("params", {}).get("_meta")
            token = meta.get("progressToken") if isinstance(meta, dict) else None
            token = token if token is not None else f"hostile-{rid}"
            n = 0
            while not self._stopping.is_set() and not self._spent():
                n += 1
                note = {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": n, "message": "still working"},
                }
                self._send(conn, b"event: message\ndata: " + json.dumps(note).encode() + b"\n\n")
                time.sleep(self.interval_s)
        conn.sendall(b"0\r\n\r\n")

    def _send(self, conn: socket.socket, data: bytes) -> None:
        """One chunk (no copy of a large ``data``)."""
        if len(data) < 65536:
            conn.sendall(b"%x\r\n" % len(data) + data + b"\r\n")
        else:
            conn.sendall(b"%x\r\n" % len(data))
            conn.sendall(data)
            conn.sendall(b"\r\n")
        with self._lock:
            self.sent_bytes += len(data)

    def _spent(self) -> bool:
        return self.total_bytes is not None and self.sent_bytes >= self.total_bytes


def start_hostile_sse_upstream(mode: Mode, **params: Any) -> tuple[str, Callable[[], None]]:
    """A started :class:`HostileSseUpstream`: its URL and the callable that stops it."""
    upstream = HostileSseUpstream(mode, **params).start()
    return upstream.url, upstream.close


def _json_answer(message: dict[str, Any]) -> bytes:
    """A keep-alive answer: 202 for a notification, else a small JSON-RPC result for the request's id."""
    if "id" not in message:
        return b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n"
    method = message.get("method")
    result: dict[str, Any]
    if method == "initialize":
        result = {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile-sse", "version": "0"},
        }
    elif method == "tools/list":
        result = {"tools": []}
    else:
        result = {"content": [{"type": "text", "text": f"ok {message.get('id')}"}], "isError": False}
    body = json.dumps({"jsonrpc": "2.0", "id": message.get("id"), "result": result}).encode()
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body)
    return head + body
