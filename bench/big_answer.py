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

import contextlib
import json
import socket
import threading
from typing import Any, Self

PIECE = 1024 * 1024


class BigAnswerUpstream:
    """See the module docstring."""

    def __init__(self, answer_bytes: int, *, big_tool: str = "big", chunked: bool = False) -> None:
        self.answer_bytes = answer_bytes
        self.big_tool = big_tool
        self.chunked = chunked
        self.big_calls = 0
        self.sent_bytes = 0
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._open: set[socket.socket] = set()
        self._stopping = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def __enter__(self) -> Self:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop accepting and shut every open connection."""
        self._stopping = True
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._lock:
            for conn in self._open:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)

    def _accept(self) -> None:
        while not self._stopping:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self._open.add(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buffer = bytearray()
        try:
            while True:
                message = _read_request(conn, buffer)
                if message is None:
                    return
                found = message.get("params")
                params: dict[str, Any] = found if isinstance(found, dict) else {}
                method = message.get("method")
                if (
                    method == "tools/call" and params.get("name") == self.big_tool
                ) or method == "resources/read":
                    self._big(conn, message.get("id"))
                elif "id" in message:
                    _send_json(conn, _small_answer(message))
                else:
                    conn.sendall(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")
        except OSError:
            return
        finally:
            with self._lock:
                self._open.discard(conn)
            conn.close()

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


def _send_json(conn: socket.socket, obj: dict[str, Any]) -> None:
    body = json.dumps(obj).encode()
    conn.sendall(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
        % (len(body), body)
    )


def _read_request(conn: socket.socket, buffer: bytearray) -> dict[str, Any] | None:
    """The next request's JSON body (``{}`` for a body that is not a JSON object); None at EOF."""
    while b"\r\n\r\n" not in buffer:
        data = conn.recv(65536)
        if not data:
            return None
        buffer += data
    end = buffer.index(b"\r\n\r\n") + 4
    length = 0
    for line in bytes(buffer[:end]).split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(buffer) < end + length:
        data = conn.recv(65536)
        if not data:
            return None
        buffer += data
    body = bytes(buffer[end : end + length])
    del buffer[: end + length]
    try:
        message = json.loads(body) if body else {}
    except ValueError:
        return {}
    return message if isinstance(message, dict) else {}
