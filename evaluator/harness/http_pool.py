"""A lean HTTP/1.1 client for the harness's hop: keep-alive connections on asyncio, strict framing.

Why not httpx2 here? Measured in ``bench/bench_demo.py``: on every request httpx2's pool (httpcore2
and anyio) inspects each idle pooled connection (``extra_attributes``, a ``getpeername`` system call
each), which made most of the harness's CPU. This client does one thing: POST a body and read the
whole response. Per (scheme, host, port) it keeps a list of idle keep-alive connections (an
``asyncio.Protocol`` each), writes a request in one write (head and body), and reads the response
with the proxy's framing rules (:mod:`recordings.plumbing.http1`: Content-Length, chunked, or read
until the server closes; anything RFC 9112 says to reject fails the request).

Rules it keeps:

- ``Connection: close`` (or an HTTP/1.0 answer) is honoured: that connection is not reused.
- A POST is not idempotent: a request is retried (once, on a fresh connection) only when it went out
  on a connection reused from idle and the server closed that connection before sending any byte of
  a response, which is how a keep-alive connection the server dropped while idle looks.
- ``timeout`` bounds the connect and any silence while waiting for the response's bytes; every
  failure (refused, reset, closed early, timed out, malformed) raises :class:`HttpTransportError`
  with a message naming it.
- https verifies the server like the httpx2 client did (the system's trust store, hostname checked);
  nothing is read from the environment (no proxies).
"""

from __future__ import annotations

import asyncio
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast
from urllib.parse import quote, urlsplit

from finmcp.recordings.plumbing import http1

DEFAULT_PORTS = {"http": 80, "https": 443}
_MAX_TARGETS = 4096
"""Parsed URLs kept (the harness tags one URL per sample and turn)."""


class HttpTransportError(Exception):
    """A request got no complete HTTP response: connect failure, reset, early close, timeout, bad bytes."""


class _StaleConnection(HttpTransportError):
    """A connection reused from idle closed before any byte of the response: nothing was processed."""


@dataclass(slots=True)
class HttpResponse:
    """A complete response: status, headers (lower-case names, repeats joined by ``, ``) and body."""

    status: int
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True, slots=True)
class _Target:
    scheme: str
    host: str
    port: int
    key: tuple[str, str, int]
    request_line_and_host: bytes
    """``POST <path> HTTP/1.1`` and the ``host`` header, ready to write."""


def parse_target(url: str) -> _Target:
    """The connection key and request line of an ``http``/``https`` URL (raises ``HttpTransportError``)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise HttpTransportError(f"bad URL {url!r}: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise HttpTransportError(f"bad URL {url!r}: the scheme must be http or https")
    host = parts.hostname
    if not host:
        raise HttpTransportError(f"bad URL {url!r}: no host")
    port = port or DEFAULT_PORTS[scheme]
    host_header = f"[{host}]" if ":" in host else host
    if port != DEFAULT_PORTS[scheme]:
        host_header += f":{port}"
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    if not path.isascii():
        path = quote(path, safe="/%:@!$&'()*+,;=?-._~")
    head = f"POST {path} HTTP/1.1\r\nhost: {host_header}\r\n".encode("ascii")
    return _Target(scheme, host, port, (scheme, host, port), head)


def default_ssl_context() -> ssl.SSLContext:
    """The system trust store with hostname checks, as httpx2 with ``trust_env=False`` builds it."""
    paths = ssl.get_default_verify_paths()
    cafile = paths.openssl_cafile if paths.openssl_cafile and os.path.isfile(paths.openssl_cafile) else None
    capath = paths.openssl_capath if paths.openssl_capath and os.path.isdir(paths.openssl_capath) else None
    context = ssl.create_default_context(cafile=cafile, capath=capath)
    context.set_alpn_protocols(["http/1.1"])
    return context


class _Connection(asyncio.Protocol):
    """One keep-alive connection: writes a request, reads its answer with :mod:`recordings.plumbing.http1`."""

    def __init__(self, loop: asyncio.AbstractEventLoop, key: tuple[str, str, int], label: str) -> None:
        self.loop = loop
        self.key = key
        self.label = label
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.body: http1.Body | None = None  # the current response's framing, once its head arrived
        self.keep_alive = False
        self.closed = False
        self.reusable = False
        """True once a response completed and the server allows another request."""
        self.waiter: asyncio.Future[HttpResponse] | None = None
        self.drained: asyncio.Future[None] | None = None
        self.paused = False
        self.received = False
        self.last_active = 0.0
        self.status = 0
        self.headers: dict[str, str] = {}
        self.chunks: list[bytes] = []
        self.until_eof = False

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if self.transport is transport:
            return
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports are not subclasses
        self.transport.set_write_buffer_limits(high=0)  # pause_writing whenever bytes wait in the buffer

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        if self.drained is not None and not self.drained.done():
            self.drained.set_result(None)

    def data_received(self, data: bytes) -> None:
        waiter = self.waiter
        if waiter is None or waiter.done():  # bytes nobody asked for: this connection is unusable
            self.reusable = False
            self.close()
            return
        self.received = True
        self.last_active = self.loop.time()
        self.buffer += data
        try:
            self._read()
        except http1.FramingError as exc:
            self._fail(HttpTransportError(f"{self.label}: malformed HTTP response: {exc.reason}"))

    def eof_received(self) -> bool | None:
        return False  # close our side too; connection_lost settles the waiter

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.reusable = False
        if self.drained is not None and not self.drained.done():
            self.drained.set_result(None)
        waiter = self.waiter
        if waiter is None or waiter.done():
            return
        if self.until_eof:  # a body delimited by the end of the connection is complete now
            waiter.set_result(HttpResponse(self.status, self.headers, b"".join(self.chunks)))
        elif not self.received:
            why = f" ({exc})" if exc else ""
            waiter.set_exception(_StaleConnection(f"{self.label}: the server closed the connection{why}"))
        else:
            why = f": {exc}" if exc else ""
            waiter.set_exception(
                HttpTransportError(
                    f"{self.label}: the connection closed before the response was complete{why}"
                )
            )

    # reading the response

    def _read(self) -> None:
        """Parse what arrived: heads (1xx skipped), then the body as its framing says."""
        buffer = self.buffer
        while True:
            if self.body is None:
                end = http1.head_end(buffer)
                if end < 0:
                    return
                head = http1.parse_response_head(buffer, end)
                del buffer[:end]
                if head.status == 101:
                    self._fail(HttpTransportError(f"{self.label}: the server switched protocols"))
                    return
                if head.status < 200:  # an interim 1xx answer: the real one follows
                    continue
                self._on_head(head)
            body = self.body
            assert body is not None
            if body.kind == "length":
                if len(buffer) < body.length:
                    return
                self.chunks.append(bytes(buffer[: body.length]))
                del buffer[: body.length]
            elif body.kind == "chunked":
                while (chunk := http1.next_chunk(buffer)) is not None and not chunk.last:
                    self.chunks.append(bytes(buffer[chunk.start : chunk.stop]))
                    del buffer[: chunk.end]
                if chunk is None:
                    return
                del buffer[: chunk.end]
            elif body.kind == "close":
                self.chunks.append(bytes(buffer))
                buffer.clear()
                return
            self._complete()
            return

    def _on_head(self, head: http1.ResponseHead) -> None:
        headers: dict[str, str] = {}
        for name, value in head.headers:
            key, text = name.decode("latin-1").lower(), value.decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        self.status = head.status
        self.headers = headers
        self.chunks = []
        self.body = http1.response_body(head.headers, head.status, b"POST")
        self.until_eof = self.body.kind == "close"
        self.keep_alive = not self.until_eof and http1.keep_alive(head.minor, head.headers)

    def _complete(self) -> None:
        """The response is whole: settle the waiter; the connection is reusable if nothing else came."""
        self.body = None
        self.until_eof = False
        self.reusable = self.keep_alive and not self.buffer
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            body = self.chunks[0] if len(self.chunks) == 1 else b"".join(self.chunks)
            waiter.set_result(HttpResponse(self.status, self.headers, body))

    # the request

    async def exchange(self, data: bytes, timeout: float, sent: asyncio.Event | None) -> HttpResponse:
        """Write one request, wait for its whole response (raises ``HttpTransportError``)."""
        assert self.transport is not None
        if self.closed:  # closed before anything was written: nothing of this request was processed
            raise _StaleConnection(f"{self.label}: the connection closed before the request was written")
        self.reusable = False
        self.received = False
        waiter = self.waiter = self.loop.create_future()
        self.last_active = self.loop.time()
        timer = self.loop.call_later(timeout, self._check_timeout, timeout)
        try:
            self.transport.write(data)
            if self.paused and not self.closed:
                self.drained = self.loop.create_future()
                await self.drained
            if sent is not None:
                sent.set()
            return await waiter
        finally:
            timer.cancel()
            self.drained = None
            if not waiter.done():  # cancelled: the connection's state is unknown
                waiter.cancel()
                self.reusable = False
            self.waiter = None

    def _check_timeout(self, timeout: float) -> None:
        waiter = self.waiter
        if waiter is None or waiter.done():
            return
        idle = self.loop.time() - self.last_active
        if idle < timeout:
            self.loop.call_later(timeout - idle, self._check_timeout, timeout)
            return
        self._fail(HttpTransportError(f"{self.label}: no response within {timeout:g} s"))

    def _fail(self, error: HttpTransportError) -> None:
        self.reusable = False
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)
        if self.drained is not None and not self.drained.done():
            self.drained.set_result(None)
        self.close()

    def close(self) -> None:
        """Close the transport (idempotent)."""
        self.reusable = False
        if self.transport is not None and not self.closed:
            self.closed = True
            self.transport.close()


class HttpPool:
    """POSTs over pooled keep-alive HTTP/1.1 connections, at most ``max_connections`` in flight."""

    def __init__(
        self, timeout: float = 120.0, max_connections: int = 64, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        if timeout <= 0 or max_connections < 1:
            raise ValueError("timeout must be > 0 and max_connections >= 1")
        self.timeout = timeout
        self.max_connections = max_connections
        self._ssl_context = ssl_context
        self._slots = asyncio.Semaphore(max_connections)
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._targets: dict[str, _Target] = {}
        self._closed = False

    async def aclose(self) -> None:
        """Close every idle connection; connections in use close when their request ends."""
        self._closed = True
        for connections in self._idle.values():
            for connection in connections:
                connection.close()
        self._idle.clear()

    async def post(
        self, url: str, body: bytes, headers: Mapping[str, str], sent: asyncio.Event | None = None
    ) -> HttpResponse:
        """POST ``body`` to ``url``; the whole response, or ``HttpTransportError``.

        ``sent`` is set once the request is written (or the request ended).
        """
        try:
            if self._closed:
                raise HttpTransportError("the client is closed")
            target = self._targets.get(url)
            if target is None:
                if len(self._targets) >= _MAX_TARGETS:
                    self._targets.clear()
                target = self._targets[url] = parse_target(url)
            try:
                lines = "".join(f"{name}: {value}\r\n" for name, value in headers.items()).encode("ascii")
            except UnicodeEncodeError as exc:
                raise HttpTransportError(
                    f"a header is not ASCII: {exc.object[exc.start : exc.end]!r}"
                ) from None
            data = b"%scontent-length: %d\r\n%s\r\n%s" % (
                target.request_line_and_host,
                len(body),
                lines,
                body,
            )
            async with self._slots:
                connection = self._take_idle(target.key)
                if connection is not None:
                    try:
                        return await self._exchange(connection, data, sent)
                    except _StaleConnection:
                        pass  # nothing of the request was processed: once more on a fresh connection
                connection = await self._connect(target)
                try:
                    return await self._exchange(connection, data, sent)
                except _StaleConnection as exc:
                    raise HttpTransportError(str(exc)) from None
        finally:
            if sent is not None:
                sent.set()

    async def _exchange(
        self, connection: _Connection, data: bytes, sent: asyncio.Event | None
    ) -> HttpResponse:
        try:
            return await connection.exchange(data, self.timeout, sent)
        finally:
            if connection.reusable and not connection.closed and not self._closed:
                idle = self._idle.setdefault(connection.key, [])
                if len(idle) < self.max_connections:
                    idle.append(connection)
                else:
                    connection.close()
            else:
                connection.close()

    def _take_idle(self, key: tuple[str, str, int]) -> _Connection | None:
        idle = self._idle.get(key)
        while idle:
            connection = idle.pop()
            if not connection.closed:
                return connection
        return None

    async def _connect(self, target: _Target) -> _Connection:
        loop = asyncio.get_running_loop()
        label = f"{target.scheme}://{target.host}:{target.port}"
        context: ssl.SSLContext | None = None
        if target.scheme == "https":
            if self._ssl_context is None:
                self._ssl_context = default_ssl_context()
            context = self._ssl_context
        try:
            transport, connection = await asyncio.wait_for(
                loop.create_connection(
                    lambda: _Connection(loop, target.key, label),
                    target.host,
                    target.port,
                    ssl=context,
                    server_hostname=target.host if context is not None else None,
                ),
                self.timeout,
            )
        except TimeoutError:
            raise HttpTransportError(f"{label}: connect timed out after {self.timeout:g} s") from None
        except ssl.SSLError as exc:
            raise HttpTransportError(f"{label}: TLS handshake failed: {exc}") from None
        except OSError as exc:
            raise HttpTransportError(f"{label}: cannot connect: {exc.strerror or exc}") from None
        connection.connection_made(transport)  # uvloop calls it only on a later loop iteration
        return connection
