"""The HTTP side: a byte-level HTTP/1.1 reverse proxy for Streamable HTTP MCP servers.

Each client connection is an ``asyncio.Protocol``. A request is read whole (MCP request bodies are
small) and handed to an :class:`proxy.http_exchange.Exchange`, which sends it to the upstream over a
pooled keep-alive connection with the same method, headers and body (``X-Finmcp-*`` tag headers and
hop-by-hop headers removed, ``Host`` set to the upstream's) and parses its body copy for the trace.
The upstream's response head and body bytes are forwarded exactly as they arrive (chunked framing
included), so SSE streams pass through event by event; GET streams and DELETE are forwarded the
same way. Everything runs in the connections' callbacks: no task per request.

The one pause: a body piece that completes the response to a ``tools/call`` is forwarded only after
that call's row is committed. The proxy answers by itself only when it must (its own checks, an
unreachable or silent upstream) and then with a JSON-RPC error the SDK client surfaces.

Why not an ASGI app under uvicorn: the ASGI layer re-frames every response (the byte-level promise
would be broken) and, with an ``httpx2`` upstream client, costs more per call than the proxy's
whole budget; see ``docs/proxy.md`` for the measurements.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import ssl
import time
from dataclasses import dataclass

from finmcp.proxy.body_refusal import DRAIN_LIMIT, Drain, refuse
from finmcp.proxy.http_exchange import Exchange
from finmcp.proxy.http_types import Request, Settings
from finmcp.proxy.http_wire import HOP_BY_HOP, empty_response, error_response, request_ids, socket_is_quiet
from finmcp.proxy.jsonrpc import parse_body
from finmcp.proxy.model_door import ModelExchange, door_exchange, is_model_path
from finmcp.proxy.routing import ENDPOINT_PATHS, is_mcp_path, route
from finmcp.proxy.tags import TagError, Tags, header_tags, split_path
from finmcp.proxy.upstream_conn import ConnectionPool
from finmcp.proxy.upstream_http import UpstreamError
from finmcp.recordings.plumbing import http1
from finmcp.recordings.plumbing.eventloop import loop_name
from finmcp.recordings.plumbing.listener import PUBLIC_PATHS

log = logging.getLogger("finmcp.proxy.http")

PATH_CACHE = 1024
REFUSED_LINGER = 1.0
"""Seconds a refused connection (408/503 written, our side shut for writing) may take to close itself
before it is aborted: long enough for the client to read the answer instead of a reset."""
REFUSAL_LOG_EVERY = 1.0
"""Seconds between log lines about connections refused over ``--max-connections`` (a flood is one line a second)."""


@dataclass(slots=True)
class _Head:
    """A parsed request head whose body has not fully arrived yet."""

    method: bytes
    target: bytes
    raw_headers: list[tuple[bytes, bytes]]
    forward: list[tuple[bytes, bytes]]
    lookup: dict[bytes, bytes]
    keep_alive: bool
    length: int
    chunked: bool
    expect: bool
    start: int  # where the body begins in the buffer


class ProxyServer:
    """Shared state of the HTTP listener: settings, the upstream pool, counters."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.pool = ConnectionPool(settings.target)
        self.requests = 0
        self.provisional = 0
        self.accepted = 0  # client connections accepted so far (each one's ClientProtocol.order)
        self.connections: set[ClientProtocol] = set()
        self._path_tags: dict[str, tuple[Tags, str]] = {}
        self.limits = limits = settings.limits
        self.waits = {"head": limits.head_timeout, "body": limits.body_timeout, "idle": limits.idle_timeout}
        """Seconds each phase of a client connection may last (``ClientProtocol.phase``)."""
        self.buffered = 0
        """Request bytes held across client connections: unparsed input, and bodies of requests in flight."""
        self.lingering: dict[asyncio.Transport, float] = {}  # refused connections -> when to abort them
        self._sweeper: asyncio.TimerHandle | None = None
        self._refused = 0  # over --max-connections since the last log line
        self._refusal_logged = 0.0
        self.upstream_path = settings.target.path.partition("?")[0]  # its MCP endpoint (proxy/routing.py)
        self.exchange_type: type[Exchange] = Exchange
        if settings.faults is not None:  # --fault-schedule: calls may be faulted (proxy/http_faults.py)
            from finmcp.proxy.http_faults import FaultExchange

            self.exchange_type = FaultExchange

    def path_tags(self, path: str) -> tuple[Tags, str]:
        """``split_path`` of a request path, remembered (clients send the same tagged path again and again)."""
        known = self._path_tags.get(path)
        if known is None:
            known = split_path(path, self.settings.defaults)  # raises TagError (never remembered)
            if len(self._path_tags) >= PATH_CACHE:
                self._path_tags.clear()
            self._path_tags[path] = known
        return known

    def protocol(self) -> ClientProtocol:
        if self._sweeper is None:
            self._sweep()
        return ClientProtocol(self)

    def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
        self.pool.close()
        if self.settings.model_door is not None:
            self.settings.model_door.close()
        for conn in list(self.connections):
            conn.abort()
        for transport in list(self.lingering):
            transport.abort()

    def _sweep(self) -> None:
        """Expire client connections past their deadline; abort refused ones that linger. Runs every
        quarter of the shortest timeout (between 50 ms and 1 s): no timer per request."""
        limits = self.limits
        now = time.monotonic()
        for conn in list(self.connections):
            if conn.deadline and now >= conn.deadline:
                conn.expire()
        for transport, until in list(self.lingering.items()):
            if now >= until:
                del self.lingering[transport]
                transport.abort()
        every = min(limits.head_timeout, limits.body_timeout, limits.idle_timeout) / 4
        self._sweeper = asyncio.get_running_loop().call_later(min(1.0, max(0.05, every)), self._sweep)

    def linger(self, transport: asyncio.Transport) -> None:
        """A refusal was written: shut our side for writing and abort the connection if the client keeps it."""
        if transport.can_write_eof():
            transport.write_eof()
            self.lingering[transport] = time.monotonic() + REFUSED_LINGER
        else:
            transport.close()

    def refused_connection(self) -> None:
        """Count a connection refused over ``--max-connections``; log at most one line a second."""
        self._refused += 1
        now = time.monotonic()
        if now - self._refusal_logged >= REFUSAL_LOG_EVERY:
            log.warning(
                "refused a client connection: %d open (--max-connections); %d refused since the last line",
                len(self.connections),
                self._refused,
            )
            self._refused, self._refusal_logged = 0, now


async def serve(
    server: ProxyServer, sock: socket.socket, tls: ssl.SSLContext | None = None
) -> asyncio.Server:
    """Start accepting on ``sock`` (over TLS with a server context: ``--tls-cert/--tls-key``)."""
    loop = asyncio.get_running_loop()
    return await loop.create_server(server.protocol, sock=sock, ssl=tls)


class ClientProtocol(asyncio.Protocol):
    """One client connection: parses requests in order and forwards one at a time."""

    def __init__(self, server: ProxyServer) -> None:
        self.server = server
        self.settings = server.settings
        self.pool = server.pool
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.exchange: Exchange | ModelExchange | None = None
        self.closed = False
        self.paused = False  # the client reads slower than the upstream sends: the upstream waits
        self._head: _Head | None = None  # parsed once, however many reads its body takes
        self._chunks: _Dechunked | None = None  # a chunked body decoded so far
        self._continue_sent = False
        self._drain: Drain | None = None  # a body over --max-body being read to its end (then a 413)
        # When the client started the next request: its connection's accept for the first request, else
        # the arrival of its first byte (a pipelined one: earlier). The sequence group rule compares it
        # with when earlier answers left; a parallel burst on fresh connections started before them.
        self.arrived_ns = time.monotonic_ns()
        server.accepted += 1
        self.order = server.accepted  # its number on the listener (the connection group rule)
        self.served = False  # a request was read on this connection
        self.requests = 0  # how many
        self.refused = False  # answered 408/503 and shut: what the client still sends is dropped
        self.counted = 0  # this connection's share of ProxyServer.buffered
        self.in_flight = 0  # of which: the body of the request being forwarded
        self.phase = "head"  # what the client owes: head | body | idle (between requests) | "" (nothing)
        self.deadline = time.monotonic() + server.limits.head_timeout  # when that phase expires (0: never)

    # ---------------------------------------------------------------- asyncio callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        stream: asyncio.Transport = transport  # type: ignore[assignment]  # a stream connection's transport
        self.transport = stream
        server = self.server
        if len(server.connections) >= server.limits.max_connections:
            self.refused = True
            self.deadline = 0.0
            message = f"proxy busy: {len(server.connections)} client connections open (--max-connections)"
            stream.write(error_response(503, message, None, close=True)[0])
            server.linger(stream)
            server.refused_connection()
            return
        server.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.deadline = 0.0
        server = self.server
        server.connections.discard(self)
        if self.transport is not None:
            server.lingering.pop(self.transport, None)
        self.buffer.clear()
        self._chunks = None
        self.in_flight = 0
        self._account()
        exchange, self.exchange = self.exchange, None
        if exchange is not None:
            exchange.abort()

    def pause_writing(self) -> None:
        self.paused = True
        if self.exchange is not None and self.exchange.upstream is not None:
            self.exchange.upstream.pause()

    def resume_writing(self) -> None:
        self.paused = False
        if self.exchange is not None and self.exchange.upstream is not None:
            self.exchange.upstream.resume()

    def data_received(self, data: bytes) -> None:
        if self.refused:
            return
        if self._drain is not None:  # a refused body: counted, never held
            self._drain.feed(data)
            if self._drain.done:
                self._answer_drained()
            return
        if not self.buffer and self.served:
            self.arrived_ns = time.monotonic_ns()
        self.buffer += data
        server = self.server
        server.buffered += len(data)
        self.counted += len(data)
        if server.buffered > server.limits.max_buffered:
            self._over_buffered()
            return
        if self.exchange is None:
            self._next_request()
        self._account()
        self._rearm()

    # ---------------------------------------------------------------- limits

    def _account(self) -> None:
        """Bring ``ProxyServer.buffered`` up to date with what this connection holds now."""
        chunks = self._chunks
        held = len(self.buffer) + self.in_flight + (len(chunks.body) if chunks is not None else 0)
        self.server.buffered += held - self.counted
        self.counted = held

    def _rearm(self) -> None:
        """Set the deadline of what the client owes now (a head, a body, the next request, or nothing).

        A deadline is set when the phase changes, never pushed back by more bytes of the same phase.
        """
        if self.exchange is not None or self.closed or self.refused:
            self.phase, self.deadline = "", 0.0
            return
        if self._head is not None or self._drain is not None:
            phase = "body"
        elif self.buffer or not self.served:
            phase = "head"
        else:
            phase = "idle"
        if phase != self.phase:
            self.phase, self.deadline = phase, time.monotonic() + self.server.waits[phase]

    def expire(self) -> None:
        """The phase's deadline passed: a kept-alive idle connection closes; a slow head or body gets a 408."""
        phase, self.deadline = self.phase, 0.0
        if phase == "idle":
            log.info(
                "closed a client connection idle for %s s (--idle-timeout)", self.server.limits.idle_timeout
            )
            self._close()
            return
        limits = self.server.limits
        wait = limits.head_timeout if phase == "head" else limits.body_timeout
        self._refuse(_Reject(408, f"request {phase} not complete within {wait} s (--{phase}-timeout)"))

    def _over_buffered(self) -> None:
        """This connection's bytes took the buffered total past ``--max-buffered``: 503 (or abort mid-answer)."""
        limit = self.server.limits.max_buffered
        message = (
            f"proxy busy: over {limit} request bytes buffered across client connections (--max-buffered)"
        )
        if self.exchange is not None:  # its response is on its way: no room for a 503
            log.warning("aborted a client connection mid-request: %s", message)
            self.buffer.clear()
            self._account()
            self.abort()
            return
        self._refuse(_Reject(503, message))

    def _refuse(self, reject: _Reject) -> None:
        """:meth:`_reject_now`, then drop what the client still sends until it closes (or is aborted)."""
        self._reject_now(reject, linger=True)
        self.refused = True
        self.phase, self.deadline = "", 0.0
        self.server.connections.discard(self)

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def mark(self) -> int:
        """The number of requests read on this connection so far (the ``connection`` group rule)."""
        return self.requests

    def quiet(self, mark: int) -> bool:
        """No request since ``mark``, open and idle, and no byte or end from the client waiting (peeked)."""
        if mark != self.requests or self.closed or self.exchange is not None or self.buffer:
            return False
        return self.transport is not None and socket_is_quiet(self.transport)

    def next_provisional(self) -> int:
        """A number unique in this listener (session keys before the upstream names a session)."""
        self.server.provisional += 1
        return self.server.provisional

    # ---------------------------------------------------------------- parsing

    def _next_request(self) -> None:
        """Handle the complete requests in the buffer, up to the first that is forwarded upstream."""
        while self.exchange is None and not self.closed:
            try:
                request = self._parse()
            except _Reject as reject:
                self._reject_now(reject)
                return
            if request is None:
                return
            self.served = True
            self.requests += 1
            try:
                keep = self._handle(request)
            except Exception as exc:  # a bug must cost one request, never the listener
                self.exchange = None
                log.exception("proxy failed on %s %s", request.method, request.target)
                self._write_error(502, f"internal proxy error: {exc!r}", None, close=True)
                return
            if self.exchange is None and not (keep and request.keep_alive):
                self._close()
                return

    def _parse(self) -> Request | None:
        """The next complete request in the buffer, or None until its last byte has arrived."""
        buffer = self.buffer
        head = self._head
        if head is None:
            head = _parse_head(buffer, self.settings.max_body)
            if head is None:
                return None
            if not head.chunked and head.length > self.settings.max_body:
                self._start_drain(head)
                return None
            self._head = head
        start = head.start
        if head.chunked:
            chunks = self._chunks
            if chunks is None:
                chunks = self._chunks = _Dechunked(start, bytearray())
            consumed = _dechunk(buffer, chunks, self.settings.max_body)
            if consumed < 0:
                return None
            body = bytes(chunks.body)
            self._chunks = None
        else:
            length = head.length
            if len(buffer) - start < length:
                if head.expect and not self._continue_sent and self.transport is not None:
                    self._continue_sent = True
                    self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                return None
            body = bytes(buffer[start : start + length])
            consumed = start + length
        del buffer[:consumed]
        self._head = None
        self._continue_sent = False
        return Request(
            head.method,
            head.target.decode("latin-1"),
            head.raw_headers,
            head.forward,
            body,
            head.keep_alive,
            head.lookup,
        )

    def _start_drain(self, head: _Head) -> None:
        """A body over ``--max-body`` (within ``DRAIN_LIMIT``): read it to its end, then answer 413.

        Answering before the client has sent it all would reset the connection under the client
        (proxy/body_refusal.py); its bytes are counted and dropped, never buffered.
        """
        drain = self._drain = Drain(head.target, head.lookup, head.length, head.length)
        drain.feed(memoryview(self.buffer)[head.start :])
        self.buffer.clear()
        self._account()
        # a client awaiting "100 Continue" sends no body: it gets the 413 instead (RFC 9110 §10.1.1)
        if drain.done or (head.expect and not drain.prefix):
            self._answer_drained()

    def _answer_drained(self) -> None:
        """The refused body has been read: answer 413 (a JSON-RPC error), log the refusal, end the connection."""
        drain, self._drain = self._drain, None
        assert drain is not None
        self.served = True
        max_body = self.settings.max_body
        log.warning("refused a request body of %d bytes (over --max-body %d)", drain.total, max_body)
        tags = self._tags_of(drain.target)
        with contextlib.suppress(TagError):
            tags = header_tags(tags, drain.lookup)
        no_session = f"http:nosession:{time.monotonic_ns()}:{self.next_provisional()}"
        self.write(refuse(self.settings.tracer, tags, drain, max_body, no_session))
        if self.transport is not None:
            self.server.linger(self.transport)
        self.refused = True
        self.phase, self.deadline = "", 0.0
        self.server.connections.discard(self)

    def _reject_now(self, reject: _Reject, linger: bool = False) -> None:
        """Refuse a malformed request (nothing is forwarded): answer, trace the answer, close.

        ``linger``: shut only our side and let the client read the answer before the connection ends.
        """
        target = reject.target or (self._head.target if self._head is not None else None)
        self._drain = None
        self.buffer.clear()
        self._head = None
        self._chunks = None
        self._account()
        whole, body = error_response(reject.status, reject.message, None, close=True)
        self.write(whole)
        if linger and self.transport is not None:
            self.server.linger(self.transport)
        else:
            self._close()
        log.warning("rejected a request: %s", reject.message)
        tracer, tags = self.settings.tracer, self._tags_of(target)
        for msg in parse_body(body):  # a message row without a session: the trace says why
            tracer.log(None, tags, "s2c", msg)

    def _tags_of(self, target: bytes | None) -> Tags:
        """The path tags of a refused request's target (the defaults when there are none to read)."""
        if target is not None:
            try:
                return self.server.path_tags(target.decode("latin-1").partition("?")[0])[0]
            except TagError:
                pass
        return self.settings.defaults

    # ---------------------------------------------------------------- writing

    def write(self, data: bytes) -> None:
        if not self.closed and self.transport is not None:
            self.transport.write(data)

    def _close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def _write_error(
        self,
        status: int,
        message: str,
        ids: list[object] | None,
        close: bool = False,
        cors: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        """Answer with a JSON-RPC error (one per request id; ``id: null`` when none)."""
        self.write(error_response(status, message, ids, close, cors or ())[0])
        if close:
            self._close()

    # ---------------------------------------------------------------- handling

    def exchange_done(self, exchange: Exchange | ModelExchange, keep: bool) -> None:
        """An exchange wrote its last byte: read the next request, or close."""
        if self.exchange is not exchange:
            return
        self.exchange = None
        self.in_flight = 0
        self._account()
        if self.closed:
            return
        if not (keep and exchange.request.keep_alive):
            self._close()
            return
        if self.buffer:
            self._next_request()
            self._account()
        self._rearm()

    def internal_error(self, exchange: Exchange | ModelExchange, exc: Exception, answered: bool) -> None:
        """A bug while forwarding: this request gets a 502 (unless its head went out) and the connection closes."""
        if self.exchange is exchange:
            self.exchange = None
            self.in_flight = 0
            self._account()
        if self.closed:
            return
        if not answered:
            self._write_error(502, f"internal proxy error: {exc!r}", None, close=True)
        else:
            self._close()

    def _handle(self, request: Request) -> bool:
        """Answer or start forwarding one request; returns whether the connection may be kept alive."""
        settings = self.settings
        self.server.requests += 1
        path, _, query = request.target.partition("?")
        policy = settings.policy
        preflight = policy.preflight(request.method, request.lookup)  # with --cors-origin: never forwarded
        if preflight is not None:
            self.write(empty_response(*preflight))
            return True
        cors = policy.cors_headers(request.lookup) if policy.cors_origins else None
        denied = policy.check(request.lookup, path)
        if denied is not None:
            log.warning("refused %s %r: %s", request.method.decode("latin-1"), path[:200], denied[1])
            self._write_error(denied[0], denied[1], request_ids(request.body), cors=cors)
            return True
        if path in PUBLIC_PATHS:  # the proxy's own endpoint, open without the token: never forwarded
            if request.method == b"GET":
                self._health()
            else:
                self._write_error(405, f"{path} answers GET only", request_ids(request.body), cors=cors)
            return True
        try:
            tags, rest = self.server.path_tags(path)
            tags = header_tags(tags, request.lookup)
        except TagError as exc:
            self._write_error(400, str(exc), request_ids(request.body), cors=cors)
            return True
        if is_model_path(rest) and not is_mcp_path(rest, self.server.upstream_path):  # proxy/model_door.py
            model = self.exchange = door_exchange(self, request, tags, rest, query)
            if model is not None:
                self.in_flight = len(request.body)
                model.start()
            return True
        refusal = route(request.method, rest, request.lookup, self.server.upstream_path)
        if refusal is not None:  # not what an MCP client sends: never forwarded (proxy/routing.py)
            log.warning("refused %s %r: %s", request.method.decode("latin-1"), path[:200], refusal.reason)
            extra = [*refusal.headers, *(cors or ())]
            head_only = request.method == b"HEAD"  # an answer to HEAD has no body: close after it
            self._write_error(refusal.status, refusal.reason, request_ids(request.body), head_only, extra)
            return True
        try:
            if rest in ENDPOINT_PATHS:
                target = settings.target
                if query:
                    sep = "&" if "?" in target.path else "?"
                    target = target.resolve(target.path + sep + query)
            else:
                target = settings.target.resolve(rest + ("?" + query if query else ""))
        except UpstreamError as exc:  # an absolute-form target naming another server (or plain http)
            self._write_error(400, str(exc), request_ids(request.body), cors=cors)
            return True
        exchange = self.exchange = self.server.exchange_type(self, request, tags, target)
        self.in_flight = len(request.body)
        if cors:
            exchange.cors = cors
        exchange.start()
        return True

    def _health(self) -> None:
        self._account()  # this request's own bytes are read: not counted as buffered
        tracer = self.settings.tracer
        extra = self.settings.health() if self.settings.health is not None else {}
        body = json.dumps(
            {
                "status": "ok",
                "role": "finmcp-proxy",
                "upstream": self.settings.target.url,
                "requests": self.server.requests,
                "calls": tracer.calls_seen,
                "pending": len(tracer.pending),
                "rows_written": tracer.writer.written,
                "commits": tracer.writer.commits,
                "write_failures": tracer.writer.failures,
                "client_connections": len(self.server.connections),
                "buffered_request_bytes": self.server.buffered,
                "upstream_connections": self.pool.stats,
                "loop": loop_name(),
                **extra,
            }
        ).encode()
        self.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
            % (len(body), body)
        )


class _Reject(Exception):
    """A request refused before anything was forwarded: ``status``, the reason the client reads, and
    the request target when its head could be read (its path tags go on the trace row)."""

    def __init__(self, status: int, message: str, target: bytes | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.target = target


def _parse_head(buffer: bytearray, max_body: int) -> _Head | None:
    """The request head at the start of ``buffer`` (None while incomplete); :class:`_Reject` if malformed.

    Framing is checked by :mod:`recordings.plumbing.http1` (RFC 9112, strictly).
    """
    try:
        end = http1.head_end(buffer)
        if end < 0:
            return None
        head = http1.parse_request_head(buffer, end)
    except http1.FramingError as exc:
        raise _Reject(exc.status, exc.reason) from None
    try:
        body = http1.request_body(head.headers)
    except http1.FramingError as exc:
        raise _Reject(exc.status, exc.reason, head.target) from None
    forward: list[tuple[bytes, bytes]] = []
    lookup: dict[bytes, bytes] = {}
    expect = False
    for pair in head.headers:
        key = pair[0].lower()
        lookup[key] = pair[1]
        if key not in HOP_BY_HOP:
            forward.append(pair)
        elif key == b"expect" and pair[1].lower() == b"100-continue":
            expect = True
    if body.length > max(max_body, DRAIN_LIMIT):  # too long to read through: refused at once, closed
        raise _Reject(413, f"request body too large ({body.length} bytes; limit {max_body})", head.target)
    return _Head(
        head.method,
        head.target,
        head.headers,
        forward,
        lookup,
        http1.keep_alive(head.minor, head.headers),
        body.length,
        body.kind == "chunked",
        expect,
        end,
    )


@dataclass(slots=True)
class _Dechunked:
    """A chunked request body decoded so far (kept between reads, so each byte is looked at once)."""

    pos: int
    body: bytearray


def _dechunk(buffer: bytearray, state: _Dechunked, limit: int) -> int:
    """Decode the chunks that have arrived into ``state.body``; the body's end offset, or -1 while incomplete."""
    try:
        while True:
            chunk = http1.next_chunk(buffer, state.pos, limit - len(state.body))
            if chunk is None:
                return -1
            state.pos = chunk.end
            if chunk.last:
                return chunk.end
            state.body += buffer[chunk.start : chunk.stop]
    except http1.FramingError as exc:
        if exc.status == 413:
            raise _Reject(413, f"request body too large (limit {limit} bytes)") from None
        raise _Reject(exc.status, f"{exc.reason} in the request body") from None
