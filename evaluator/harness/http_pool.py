"""A lean HTTP/1.1 client for the harness's hop: keep-alive connections on asyncio, httptools parsing.

Why not httpx2 here? Measured in ``bench/bench_demo.py``: on every request httpx2's pool (httpcore2
and anyio) inspects each idle pooled connection (``extra_attributes``, a ``getpeername`` system call
each), which made most of the harness's CPU. This client does one thing: POST a body and read the
whole response. Per (scheme, host, port) it keeps a list of idle keep-alive connections (an
``asyncio.Protocol`` each), writes a request in one write (head and body), and parses the response
with ``httptools.HttpResponseParser`` (Content-Length, chunked, or read until the server closes).

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

import httptools

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
    """One keep-alive connection: writes a request, feeds the answer's bytes to httptools."""

    def __init__(self, loop: asyncio.AbstractEventLoop, key: tuple[str, str, int], label: str) -> None:
        self.loop = loop
        self.key = key
        self.label = label
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
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
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(HttpTransportError(f"{self.label}: the server switched protocols"))
        except httptools.HttpParserError as exc:
            self._fail(HttpTransportError(f"{self.label}: malformed HTTP response: {exc}"))

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

    # httptools callbacks

    def on_message_begin(self) -> None:
        if self.waiter is None or self.waiter.done():
            raise HttpTransportError("a second response arrived")
        self.status = 0
        self.headers = {}
        self.chunks = []
        self.until_eof = False

    def on_header(self, name: bytes, value: bytes) -> None:
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        self.headers[key] = f"{self.headers[key]}, {text}" if key in self.headers else text

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        self.until_eof = (
            self.status >= 200
            and self.status not in (204, 304)
            and "content-length" not in self.headers
            and "chunked" not in self.headers.get("transfer-encoding", "").lower()
        )

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)

    def on_message_complete(self) -> None:
        if self.status < 200:  # an interim 1xx answer: the real one follows
            return
        self.until_eof = False
        self.reusable = bool(self.parser.should_keep_alive())
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
