"""An MCP upstream whose one tool answers with a JSON body of any size (bench and tests; loopback only).

``with BigAnswerUpstream(answer_bytes=200 * 2**20) as upstream: upstream.url`` serves Streamable HTTP
(stateless, plain sockets, a thread per connection, keep-alive). ``tools/call`` of ``big_tool`` gets
a ``200 application/json`` answer of about ``answer_bytes`` bytes (``Content-Length``, or chunked with
``chunked=True``), written piece by piece so this process never holds it whole; any other request
gets a small JSON answer at once (``tools/call``: ``{"content": [{"type": "text", "text": "ok ID"}]}``),
so other clients can call e.g. ``echo`` through the same proxy. ``.big_calls`` counts big answers
started, ``.sent_bytes`` the big bodies' bytes written so far.
"""

from __future__ import annotations

import json
import socket
from typing import Any

from bench.socket_http import SocketPeer, read_json_request, send_json

PIECE = 1024 * 1024


class BigAnswerUpstream(SocketPeer):
    """See the module docstring."""

    def __init__(self, answer_bytes: int, *, big_tool: str = "big", chunked: bool = False) -> None:
        super().__init__()
        self.answer_bytes = answer_bytes
        self.big_tool = big_tool
        self.chunked = chunked
        self.big_calls = 0
        self.sent_bytes = 0

    def serve(self, conn: socket.socket, index: int) -> None:
        """Answer requests on one connection until the client closes it."""
        buffer = bytearray()
        while True:
            message = read_json_request(conn, buffer)
            if message is None:
                return
            found = message.get("params")
            params: dict[str, Any] = found if isinstance(found, dict) else {}
            method = message.get("method")
            if (method == "tools/call" and params.get("name") == self.big_tool) or method == "resources/read":
                self._big(conn, message.get("id"))
            elif "id" in message:
                send_json(conn, _small_answer(message))
            else:
                conn.sendall(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")

    def _big(self, conn: socket.socket, rid: Any) -> None:
        with self._lock:
            self.big_calls += 1
        head = (
            b'{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"'
            % json.dumps(rid).encode()
        )
        tail = b'"}],"isError":false}}'
        fill = max(0, self.answer_bytes - len(head) - len(tail))
        total = len(head) + fill + len(tail)
        framing = b"transfer-encoding: chunked" if self.chunked else b"content-length: %d" % total
        conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n" + framing + b"\r\n\r\n")
        block = b"x" * PIECE
        pieces = [head]
        left = fill
        while left:
            pieces.append(block if left >= PIECE else block[:left])
            left -= len(pieces[-1])
        pieces.append(tail)
        for piece in pieces:
            conn.sendall(b"%x\r\n%s\r\n" % (len(piece), piece) if self.chunked else piece)
            with self._lock:
                self.sent_bytes += len(piece)
        if self.chunked:
            conn.sendall(b"0\r\n\r\n")


def _small_answer(message: dict[str, Any]) -> dict[str, Any]:
    rid, method = message.get("id"), message.get("method")
    if method == "initialize":
        params = message.get("params") or {}
        result: dict[str, Any] = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "big-answer", "version": "0"},
        }
    elif method == "tools/list":
        schema = {"type": "object"}
        result = {"tools": [{"name": n, "inputSchema": schema} for n in ("big", "echo")]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": f"ok {rid}"}], "isError": False}
    else:
        result = {}
    return {"jsonrpc": "2.0", "id": rid, "result": result}
