"""Blocking HTTP/1.1 on a plain socket, for the scripted hostile upstreams (bench and tests).

Just enough of the protocol for a peer that reads ``Content-Length`` JSON requests and writes its
own answers byte by byte: :func:`read_json_request`, :func:`send_json`, and :class:`SocketPeer`, the
listener whose subclasses serve each connection on a thread.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable
from typing import Any, Self


def read_json_request(conn: socket.socket, buffer: bytearray) -> dict[str, Any] | None:
    """The next request's JSON body (``{}`` when it has none or is no JSON object); None at EOF.

    ``buffer`` carries bytes read past one request over to the next.
    """
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


def send_json(conn: socket.socket, obj: dict[str, Any]) -> None:
    """Write ``obj`` as one ``200 application/json`` answer with its ``Content-Length``."""
    body = json.dumps(obj).encode()
    conn.sendall(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
        % (len(body), body)
    )


class SocketPeer:
    """A loopback listener serving each connection on a thread of its own (blocking sockets).

    Subclasses write :meth:`serve` (one connection, its index 0, 1, ...); the base accepts, tracks the
    open connections, and on :meth:`close` stops accepting, shuts every connection and joins the
    threads (bounded). ``with Peer(...) as peer: peer.url``.
    """

    scheme = "http"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._threads: list[threading.Thread] = []
        self._open: dict[int, socket.socket] = {}  # connection index -> its socket (TLS-wrapped, if so)
        self._connections = 0
        self._stopping = threading.Event()

    @property
    def url(self) -> str:
        """The peer's MCP endpoint."""
        return f"{self.scheme}://127.0.0.1:{self.port}/mcp"

    def start(self) -> Self:
        """Start accepting connections (``__enter__`` does it)."""
        self._spawn(self._accept)
        return self

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop accepting, shut every open connection (their threads stop reading), join the threads."""
        self._stopping.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept()
        self._listener.close()
        with self._lock:
            for conn in self._open.values():
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
        for thread in list(self._threads):
            thread.join(5)

    def serve(self, conn: socket.socket, index: int) -> None:
        """Serve one connection until it is done (the base closes it afterwards)."""
        raise NotImplementedError

    def replace_connection(self, index: int, new: socket.socket) -> None:
        """Track ``new`` (say, connection ``index`` wrapped in TLS) as that connection's socket."""
        with self._lock:
            self._open[index] = new

    def _spawn(self, target: Callable[..., None], *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                index = self._connections
                self._connections += 1
                self._open[index] = conn
            self._spawn(self._run, conn, index)

    def _run(self, conn: socket.socket, index: int) -> None:
        try:
            self.serve(conn, index)
        except OSError:
            pass
        finally:
            with self._lock:
                current = self._open.pop(index, conn)
            for sock in {current, conn}:
                with contextlib.suppress(OSError):
                    sock.close()
