"""Upstream HTTP/1.1 connections, driven by callbacks: a response is parsed as its bytes arrive.

An :class:`UpstreamConnection` is an ``asyncio.Protocol``. :meth:`UpstreamConnection.send` writes a
request and names a :class:`ResponseSink`; the connection then calls, from its ``data_received``,
``on_head`` once (``1xx`` interim responses are skipped), ``on_body`` for every piece of the body
exactly as framed on the wire (a whole chunk of a chunked body, or whatever bytes arrived of a
``Content-Length`` or read-until-close body; a chunk over :data:`SPLIT_CHUNK` is delivered as it
arrives, each piece framed as a chunk of its own), ``on_end`` when the body is complete (with the final
chunk and trailers of a chunked body), or ``on_failure`` when the upstream closes or sends garbage.
``on_batch_end`` follows every batch of bytes, so a sink can write what one batch produced at once.

**Re-sending** (RFC 9110 §9.2.2). A request is written to an idle pooled connection only after
:meth:`ConnectionPool.take_idle` has found it alive: not closed, idle for less than
:data:`IDLE_EXPIRY_S`, and with nothing to read on its socket (a zero-timeout poll; the upstream's
FIN or RST of an idle connection shows there before the loop has handled it). Such a dead
connection is closed unused, so a keep-alive race costs the request nothing. Once the request is
written, a connection that fails before any response byte (``on_failure(..., silent=True)`` on a
reused connection) leaves it unknown whether the upstream ran the request: it is sent again only
when the caller says it is safe to repeat (:func:`proxy.jsonrpc.safe_to_repeat`), never a
``tools/call``.

No task, no ``StreamReader`` and no loop iteration stands between the upstream's bytes and the
proxy's handling of them: on the response's critical path this saves the wake-ups and the async
generator machinery the stream client costs (``docs/proxy.md``, "Performance").

Coroutines (the stdio side's HTTP and SSE upstreams) use the same connections through
:meth:`ConnectionPool.send`, which returns a :class:`StreamedResponse`: a sink that queues the
pieces for an ``async for``.
"""

from __future__ import annotations

import asyncio
import contextlib
import select
import socket
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator
from typing import Protocol

from finmcp.proxy.upstream_http import Response, Target, UpstreamError, UpstreamTLSError, parse_head
from finmcp.proxy.upstream_tls import OnceLog, describe_tls_failure
from finmcp.recordings.plumbing import http1

_IDLE, _HEAD, _LENGTH, _CHUNKED, _CLOSE = range(5)
_BODY_STATES = {"length": _LENGTH, "chunked": _CHUNKED, "close": _CLOSE}
IDLE_EXPIRY_S = 4.0
"""A pooled connection idle for longer is closed, not reused: most servers close idle keep-alive
connections after 5 s (uvicorn, Node, Apache), and a connection they close while the proxy writes
on it leaves the request's fate unknown."""
NOT_RESENT = "not sent again, since the upstream may have run it"
"""Why a request whose connection failed after it was written gets an error rather than a retry."""
_POLL_IN = getattr(select, "POLLIN", 0) | getattr(select, "POLLPRI", 0)
SPLIT_CHUNK = 1024 * 1024
"""A chunk larger than this is not held whole: its data is delivered as it arrives, each piece framed
as a chunk of its own (the same payload; a hostile upstream's one 1 GiB chunk holds no more than a
read's worth of it in the proxy)."""


class ResponseSink(Protocol):
    """What receives one response from an :class:`UpstreamConnection`."""

    def on_head(self, response: Response) -> None: ...

    def on_body(self, raw: bytes, payload: bytes) -> None: ...

    def on_end(self, raw: bytes) -> None: ...

    def on_failure(self, error: UpstreamError, silent: bool) -> None:
        """``silent``: a reused connection failed after the request was written, before any response byte."""
        ...

    def on_batch_end(self) -> None: ...


class UpstreamConnection(asyncio.Protocol):
    """One keep-alive TCP connection to the upstream; one request at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.sink: ResponseSink | None = None
        self.method = b"POST"
        self.state = _IDLE
        self.remaining = 0
        self.split_left: int | None = None  # data bytes still to come of a chunk over SPLIT_CHUNK
        self.reused = False  # taken from the pool (it may have been closed by the upstream meanwhile)
        self.received = False  # a byte of the current response arrived
        self.closed = False
        self.reusable = True
        self.paused = False
        self.idle_since = 0.0  # time.monotonic() when it went back to the pool
        self._poller: select.poll | None = None
        self._fd = -1

    # ---------------------------------------------------------------- asyncio callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a stream connection gets an asyncio.Transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with contextlib.suppress(OSError, ValueError):
                self._fd = sock.fileno()
                if hasattr(select, "poll"):
                    self._poller = select.poll()
                    self._poller.register(self._fd, _POLL_IN)

    def data_received(self, data: bytes) -> None:
        sink = self.sink
        if sink is None:  # bytes nobody asked for: this connection cannot be trusted again
            self.close()
            return
        self.received = True
        self.buffer += data
        try:
            self._parse()
        except UpstreamError as exc:
            self._fail(exc)
        sink.on_batch_end()

    def eof_received(self) -> bool:
        return False  # close the transport; connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        sink = self.sink
        if sink is None:
            return
        if self.state == _CLOSE:  # a read-until-close body ends here
            self._end(b"")
        else:
            where = "" if not self.received else " mid-response" if self.state == _HEAD else " mid-body"
            reason = f"upstream closed the connection{where}"
            if exc is not None:
                reason = f"upstream connection failed{where}: {exc!r}"
            self._fail(UpstreamError(reason), silent=self.reused and not self.received)
        sink.on_batch_end()

    # ---------------------------------------------------------------- requests

    def send(self, head: bytes, body: bytes, method: bytes, sink: ResponseSink) -> None:
        """Write one request (in one write unless the body is large); its response goes to ``sink``."""
        assert self.transport is not None and self.sink is None
        self.sink = sink
        self.method = method
        self.state = _HEAD
        self.received = False
        if len(body) < 65536:
            self.transport.write(head + body)
        else:
            self.transport.write(head)
            self.transport.write(body)

    def pause(self) -> None:
        """Stop reading (the client cannot take more bytes yet)."""
        if self.transport is not None and not self.closed and not self.paused:
            self.paused = True
            with contextlib.suppress(RuntimeError):
                self.transport.pause_reading()

    def resume(self) -> None:
        """Read again after :meth:`pause`."""
        if self.transport is not None and not self.closed and self.paused:
            self.paused = False
            with contextlib.suppress(RuntimeError):
                self.transport.resume_reading()

    def close(self) -> None:
        """Close the connection; a response in progress is abandoned without callbacks."""
        self.sink = None
        self.state = _IDLE
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    @property
    def idle(self) -> bool:
        """Open, between responses, and fit to carry another request."""
        return self.sink is None and not self.closed and self.reusable and not self.buffer

    def peer_closed(self) -> bool:
        """True when the socket has something to read while idle: the upstream's FIN or RST (or stray bytes).

        One zero-timeout poll, before a request is written on a pooled connection: the event loop
        may not have handled the upstream's close yet.
        """
        if self.transport is None or self.transport.is_closing():
            return True
        try:
            if self._poller is not None:
                return bool(self._poller.poll(0))
            if self._fd >= 0:
                return bool(select.select([self._fd], [], [], 0)[0])
        except (OSError, ValueError):
            return True
        return False

    # ---------------------------------------------------------------- parsing

    def _parse(self) -> None:
        buffer = self.buffer
        while self.sink is not None and buffer:
            state = self.state
            if state == _LENGTH:
                size = min(len(buffer), self.remaining)
                piece = bytes(buffer[:size])
                del buffer[:size]
                self.remaining -= size
                self.sink.on_body(piece, piece)
                if not self.remaining:
                    self._end(b"")
            elif state == _HEAD:
                try:
                    end = http1.head_end(buffer)
                except http1.FramingError as exc:
                    raise UpstreamError(f"upstream sent a malformed response: {exc.reason}") from None
                if end < 0:
                    return
                head = bytes(buffer[:end])
                del buffer[:end]
                response = parse_head(head, self.method)
                if 100 <= response.status < 200:
                    continue
                self.state = _BODY_STATES.get(response.body_mode, _IDLE)
                self.remaining = response.length
                if not response.keep_alive:
                    self.reusable = False
                self.sink.on_head(response)
                if response.body_mode == "none" and self.sink is not None:
                    self._end(b"")
            elif state == _CHUNKED:
                if not self._chunk():
                    return
            elif state == _CLOSE:
                piece = bytes(buffer)
                buffer.clear()
                self.sink.on_body(piece, piece)
            else:  # pragma: no cover - _end resets the sink, so the loop has stopped
                return

    def _chunk(self) -> bool:
        """Deliver one complete chunk (or the final one and its trailers), or what arrived of a chunk over
        :data:`SPLIT_CHUNK` as a chunk of its own; False when more bytes are needed."""
        buffer = self.buffer
        if self.split_left is not None:
            return self._split_piece()
        try:
            head = http1.chunk_head(buffer)
            if head is not None and head[0] > SPLIT_CHUNK:
                self.split_left = head[0]
                del buffer[: head[1]]
                return True
            found = http1.next_chunk(buffer)
        except http1.FramingError as exc:
            raise UpstreamError(f"upstream sent a malformed chunked body: {exc.reason}") from None
        if found is None:
            return False
        raw = bytes(buffer[: found.end])
        del buffer[: found.end]
        if found.last:
            self._end(raw)
            return True
        assert self.sink is not None
        self.sink.on_body(raw, raw[found.start : found.stop])
        return True

    def _split_piece(self) -> bool:
        """The next arrived piece of a chunk over :data:`SPLIT_CHUNK`, delivered framed as a chunk."""
        buffer = self.buffer
        left = self.split_left
        assert left is not None and self.sink is not None
        if left:
            piece = bytes(buffer[:left])
            del buffer[: len(piece)]
            self.split_left = left - len(piece)
            self.sink.on_body(b"%x\r\n%s\r\n" % (len(piece), piece), piece)
            return True
        if len(buffer) < 2:
            return False
        if buffer[:2] != b"\r\n":
            raise UpstreamError("upstream sent a malformed chunked body: chunk data not followed by CRLF")
        del buffer[:2]
        self.split_left = None
        return True

    def _end(self, raw: bytes) -> None:
        sink = self.sink
        self.sink = None
        self.state = _IDLE
        self.split_left = None
        if self.buffer:  # bytes after the response: the framing is off, never reuse this connection
            self.reusable = False
            self.buffer.clear()
        assert sink is not None
        sink.on_end(raw)

    def _fail(self, error: UpstreamError, silent: bool = False) -> None:
        sink = self.sink
        self.close()
        if sink is not None:
            sink.on_failure(error, silent)


class StreamedResponse:
    """A :class:`ResponseSink` for coroutines: await the head, then ``async for`` the body pieces.

    Pieces wait in a queue until :meth:`body` takes them; once ``max_queued`` are waiting the
    connection stops reading until the consumer has drained them (GET and SSE streams can be long).
    """

    def __init__(self, conn: UpstreamConnection, max_queued: int = 64) -> None:
        self.conn = conn
        self.max_queued = max_queued
        self.response: Response | None = None
        self.error: UpstreamError | None = None
        self.silent = False  # a reused connection failed after the write, before any response byte
        self.complete = False
        self._pieces: deque[tuple[bytes, bytes]] = deque()
        self._waiter: asyncio.Future[None] | None = None

    async def request(self, head: bytes, body: bytes, method: bytes) -> Response:
        """Send a request on the connection and wait for the response head (closing the connection on failure)."""
        self.conn.send(head, body, method, self)
        try:
            while self.response is None:
                if self.error is not None:
                    raise self.error
                await self._wait()
        except BaseException:
            self.conn.close()
            raise
        return self.response

    async def body(self) -> AsyncIterator[tuple[bytes, bytes]]:
        """Yield ``(raw_wire_bytes, decoded_payload)`` pieces until the body ends; UpstreamError if it fails.

        A body left unfinished (cancelled, failed) closes the connection.
        """
        pieces = self._pieces
        try:
            while True:
                while pieces:
                    yield pieces.popleft()
                self.conn.resume()
                if self.error is not None:
                    raise self.error
                if self.complete:
                    return
                await self._wait()
        finally:
            if not self.complete:
                self.conn.close()

    async def _wait(self) -> None:
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    # ---------------------------------------------------------------- ResponseSink

    def on_head(self, response: Response) -> None:
        self.response = response

    def on_body(self, raw: bytes, payload: bytes) -> None:
        self._pieces.append((raw, payload))
        if len(self._pieces) >= self.max_queued:
            self.conn.pause()

    def on_end(self, raw: bytes) -> None:
        if raw:  # the last chunk and trailers of a chunked body
            self._pieces.append((raw, b""))
        self.complete = True

    def on_failure(self, error: UpstreamError, silent: bool) -> None:
        self.error = error
        self.silent = silent

    def on_batch_end(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


IDEMPOTENT_HTTP_METHODS = frozenset({b"GET", b"HEAD", b"OPTIONS", b"TRACE", b"PUT", b"DELETE"})
"""HTTP methods whose repetition has the effect of one request (RFC 9110 §9.2.2); MCP posts are judged by body."""


class ConnectionPool:
    """Idle keep-alive :class:`UpstreamConnection` s to one upstream host, opened on demand (no upper bound).

    ``stats`` counts what happened to requests on pooled connections (``/healthz`` shows it):
    ``opened`` and ``reused`` connections; ``closed_before_write``: pooled connections found closed
    by the upstream before a request was written on them (closed unused, the request went on another
    one); ``expired``: pooled connections idle longer than ``idle_expiry``, closed unused;
    ``lost_after_write``: reused connections that failed after the write and before any response
    byte, of which ``resent`` were safe to repeat and went out again, and ``not_resent`` were answered
    with an error.
    """

    def __init__(
        self,
        target: Target,
        connect_timeout: float = 5.0,
        max_idle: int = 64,
        idle_expiry: float = IDLE_EXPIRY_S,
    ) -> None:
        self.target = target
        self.connect_timeout = connect_timeout
        self.max_idle = max_idle
        self.idle_expiry = idle_expiry
        self._idle: list[UpstreamConnection] = []
        self._tls_log = OnceLog()
        self.stats = dict.fromkeys(
            (
                "opened",
                "reused",
                "closed_before_write",
                "expired",
                "lost_after_write",
                "resent",
                "not_resent",
            ),
            0,
        )

    def take_idle(self) -> UpstreamConnection | None:
        """An idle connection known alive (marked reused), or None; dead or expired ones are closed on the way."""
        stats = self.stats
        now = time.monotonic()
        while self._idle:
            conn = self._idle.pop()
            if not conn.idle or conn.peer_closed():
                stats["closed_before_write"] += 1
            elif now - conn.idle_since > self.idle_expiry:
                stats["expired"] += 1
            else:
                conn.reused = True
                stats["reused"] += 1
                return conn
            conn.close()
        return None

    async def connect(self) -> UpstreamConnection:
        """A fresh connection (``TCP_NODELAY``); over TLS for an ``https`` target, never without it.

        A TLS failure (certificate expired, unknown CA, hostname mismatch, not TLS at all) is an
        :class:`UpstreamError` naming the host and the reason, logged once per reason.
        """
        loop = asyncio.get_running_loop()
        target = self.target
        try:
            if target.tls is not None:  # SNI and the certificate check use the URL's host name
                opening = loop.create_connection(
                    UpstreamConnection,
                    target.host,
                    target.port,
                    ssl=target.tls,
                    server_hostname=target.host,
                    ssl_handshake_timeout=self.connect_timeout,
                )
            else:
                opening = loop.create_connection(UpstreamConnection, target.host, target.port)
            _, conn = await asyncio.wait_for(opening, self.connect_timeout)
        except TimeoutError:
            raise UpstreamError(
                f"upstream {target.url} did not accept a connection within {self.connect_timeout} s"
            ) from None
        except ssl.SSLError as exc:  # includes SSLCertVerificationError
            message = describe_tls_failure(exc, target.host, target.port)
            self._tls_log.error(message)
            raise UpstreamTLSError(message) from None
        except ConnectionResetError as exc:
            if target.tls is not None:  # reset during the handshake: say it was TLS that failed
                message = describe_tls_failure(exc, target.host, target.port)
                self._tls_log.error(message)
                raise UpstreamTLSError(message) from None
            raise UpstreamError(f"upstream {target.url} unreachable: {exc.strerror or exc}") from None
        except OSError as exc:
            raise UpstreamError(f"upstream {target.url} unreachable: {exc.strerror or exc}") from None
        self.stats["opened"] += 1
        return conn

    def release(self, conn: UpstreamConnection, keep_alive: bool) -> None:
        """Return a connection whose response was fully read (else close it)."""
        if keep_alive and conn.idle and len(self._idle) < self.max_idle:
            conn.resume()
            conn.idle_since = time.monotonic()
            self._idle.append(conn)
        else:
            conn.close()

    def lost_after_write(self, error: UpstreamError, method: bytes, replayable: bool) -> UpstreamError | None:
        """A reused connection failed after the request was written and before any response byte.

        The upstream may or may not have run the request. None: it is safe to repeat (an idempotent
        HTTP method, or ``replayable``: every JSON-RPC request in the body is, see
        :func:`proxy.jsonrpc.safe_to_repeat`), send it again on a fresh connection. Otherwise the
        error to answer with.
        """
        stats = self.stats
        stats["lost_after_write"] += 1
        if replayable or method in IDEMPOTENT_HTTP_METHODS:
            stats["resent"] += 1
            return None
        stats["not_resent"] += 1
        return UpstreamError(f"{error} before answering; {NOT_RESENT}")

    async def send(
        self, head: bytes, body: bytes, method: bytes, replayable: bool = False
    ) -> tuple[StreamedResponse, Response]:
        """Send a request on an idle or new connection; the response's stream and head.

        A reused connection that failed after the write and before any response byte is tried again
        on a fresh one only when the request is safe to repeat (:meth:`lost_after_write`).
        """
        conn = self.take_idle()
        if conn is not None:
            stream = StreamedResponse(conn)
            try:
                return stream, await stream.request(head, body, method)
            except UpstreamError as exc:
                if not stream.silent:
                    raise
                refusal = self.lost_after_write(exc, method, replayable)
                if refusal is not None:
                    raise refusal from None
        stream = StreamedResponse(await self.connect())
        return stream, await stream.request(head, body, method)

    def close(self) -> None:
        """Close every idle connection."""
        for conn in self._idle:
            conn.close()
        self._idle.clear()
