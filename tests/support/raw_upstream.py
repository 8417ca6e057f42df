"""A scripted HTTP/1.1 upstream on plain sockets, for the failures a real server never shows on demand.

:class:`RawUpstream` listens on 127.0.0.1 and serves each connection on a thread of its own, so it
runs whatever the test's event loop does (a test may block its loop and still see the upstream act).
On every connection it answers the first ``answers`` requests with a JSON-RPC result, then either
reads the next request and closes without answering (``after="drop"``: the upstream may have run
it) or closes the idle connection at once (``after="close"``), optionally only once ``close_gate``
is set. Every request it read is in :attr:`RawUpstream.seen`.
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import threading
from dataclasses import dataclass
from typing import Any, Literal, Self


@dataclass(frozen=True)
class Seen:
    """One request the upstream read: its connection (0, 1, ...), JSON-RPC id and method."""

    connection: int
    id: Any
    method: str | None


class RawUpstream:
    """``with RawUpstream(answers=1) as upstream: upstream.url``; see the module docstring."""

    def __init__(
        self,
        answers: int = 1,
        after: Literal["drop", "close"] = "drop",
        close_gate: threading.Event | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.tls = tls  # a server context: the upstream speaks HTTPS (url is https://)
        self.answers = answers
        self.after = after
        self.close_gate = close_gate
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        self._connections = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._threads: list[threading.Thread] = []
        self._open: set[socket.socket] = set()
        self._stopping = False

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}/mcp"

    def ids(self) -> list[Any]:
        """The JSON-RPC ids of every request read, in order of arrival."""
        with self._lock:
            return [s.id for s in self.seen]

    def __enter__(self) -> Self:
        thread = threading.Thread(target=self._accept, daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping = True
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept()
        self._listener.close()
        if self.close_gate is not None:
            self.close_gate.set()
        with self._lock:
            for conn in self._open:  # connections the client keeps open: their threads stop reading
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
        for thread in self._threads:
            thread.join(5)

    def _accept(self) -> None:
        while not self._stopping:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                index = self._connections
                self._connections += 1
                self._open.add(conn)
            thread = threading.Thread(target=self._serve, args=(conn, index), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _serve(self, conn: socket.socket, index: int) -> None:
        buffer = bytearray()
        try:
            if self.tls is not None:
                plain = conn
                conn = self.tls.wrap_socket(conn, server_side=True)
                with self._lock:
                    self._open.discard(plain)
                    self._open.add(conn)
            for _ in range(self.answers):
                message = self._read(conn, buffer, index)
                if message is None:
                    return
                conn.sendall(_answer(message))
            if self.after == "drop":
                self._read(conn, buffer, index)  # read (the upstream may act on it), never answer
            elif self.close_gate is not None:
                self.close_gate.wait(10)
        except OSError:
            pass
        finally:
            with self._lock:
                self._open.discard(conn)
            conn.close()

    def _read(self, conn: socket.socket, buffer: bytearray, index: int) -> dict[str, Any] | None:
        """The next request's JSON body (recorded in :attr:`seen`), or None when the client closed."""
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
                length = int(value)
        while len(buffer) < end + length:
            data = conn.recv(65536)
            if not data:
                return None
            buffer += data
        body = bytes(buffer[end : end + length])
        del buffer[: end + length]
        message = json.loads(body) if body else {}
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
