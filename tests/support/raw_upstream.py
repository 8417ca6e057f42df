"""A scripted HTTP/1.1 upstream on plain sockets, for the failures a real server never shows on demand.

:class:`RawUpstream` listens on 127.0.0.1 and serves each connection on a thread of its own, so it
runs whatever the test's event loop does (a test may block its loop and still see the upstream act).
On every connection it answers the first ``answers`` requests with a JSON-RPC result, then either
reads the next request and closes without answering (``after="drop"``: the upstream may have run
it) or closes the idle connection at once (``after="close"``), optionally only once ``close_gate``
is set. Every request it read is in :attr:`RawUpstream.seen`.
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
from dataclasses import dataclass
from typing import Any, Literal

from bench.socket_http import SocketPeer, read_json_request


@dataclass(frozen=True)
class Seen:
    """One request the upstream read: its connection (0, 1, ...), JSON-RPC id and method."""

    connection: int
    id: Any
    method: str | None


class RawUpstream(SocketPeer):
    """``with RawUpstream(answers=1) as upstream: upstream.url``; see the module docstring."""

    def __init__(
        self,
        answers: int = 1,
        after: Literal["drop", "close"] = "drop",
        close_gate: threading.Event | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        super().__init__()
        self.tls = tls  # a server context: the upstream speaks HTTPS (url is https://)
        self.scheme = "https" if tls else "http"
        self.answers = answers
        self.after = after
        self.close_gate = close_gate
        self.seen: list[Seen] = []

    def ids(self) -> list[Any]:
        """The JSON-RPC ids of every request read, in order of arrival."""
        with self._lock:
            return [s.id for s in self.seen]

    def close(self) -> None:
        """Stop: the gated connections close too (``after="close"``)."""
        if self.close_gate is not None:
            self.close_gate.set()
        super().close()

    def serve(self, conn: socket.socket, index: int) -> None:
        """Answer ``answers`` requests, then drop the next one or close (see the module docstring)."""
        buffer = bytearray()
        if self.tls is not None:
            conn = self.tls.wrap_socket(conn, server_side=True)
            self.replace_connection(index, conn)
        for _ in range(self.answers):
            message = self._read(conn, buffer, index)
            if message is None:
                return
            conn.sendall(_answer(message))
        if self.after == "drop":
            self._read(conn, buffer, index)  # read (the upstream may act on it), never answer
        elif self.close_gate is not None:
            self.close_gate.wait(10)

    def _read(self, conn: socket.socket, buffer: bytearray, index: int) -> dict[str, Any] | None:
        """The next request's JSON body (recorded in :attr:`seen`), or None when the client closed."""
        message = read_json_request(conn, buffer)
        if message is None:
            return None
        with self._lock:
            self.seen.append(Seen(index, message.get("id"), message.get("method")))
        return message


def _answer(message: dict[str, Any]) -> bytes:
    """A keep-alive JSON answer to one request: a tool result naming its id, or an empty list."""
    if message.get("method") == "tools/list":
        result: dict[str, Any] = {"tools": []}
    else:
        text = f"answer to {message.get('id')}"
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    body = json.dumps({"jsonrpc": "2.0", "id": message.get("id"), "result": result}).encode()
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body)
    return head + body
