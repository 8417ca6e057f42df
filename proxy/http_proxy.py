"""The HTTP side: a byte-level HTTP/1.1 reverse proxy for Streamable HTTP MCP servers.

Each client connection is an ``asyncio.Protocol``. A request is read whole (MCP request bodies are
small), its body copy is parsed for the trace, and the request is sent to the upstream over a pooled
keep-alive connection with the same method, headers and body (``X-Finmcp-*`` tag headers and
hop-by-hop headers removed, ``Host`` set to the upstream's). The upstream's response head and body
bytes are forwarded exactly as they arrive (chunked framing included), so SSE streams pass through
event by event; GET streams and DELETE are forwarded the same way.

The one pause: a body piece that completes the response to a ``tools/call`` is forwarded only after
that call's row is committed. The proxy answers by itself only when it must (its own checks, an
unreachable or silent upstream) and then with a JSON-RPC error the SDK client surfaces.

Why not an ASGI app under uvicorn: the ASGI layer re-frames every response (the byte-level promise
would be broken) and, with an ``httpx2`` upstream client, costs more per call than the proxy's
whole budget; see ``docs/proxy.md`` for the measurements.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote_plus

from proxy.capture import PendingCall, Session, Tracer
from proxy.eventloop import loop_name
from proxy.jsonrpc import MODERN_VERSION, PROTOCOL_VERSION_META, Message, error_message, parse_body
from proxy.security import TOKEN_HEADER, Policy
from proxy.sse import SSEParser, encode_event
from proxy.tags import HEADER_KEYS, TagError, Tags, header_tags, split_path
from proxy.upstream_http import Response, Target, UpstreamError, UpstreamPool, build_request
from recordings.redact import REDACTED, SECRET_KEYS

log = logging.getLogger("finmcp.proxy.http")

MAX_HEAD = 64 * 1024
DEFAULT_MAX_BODY = 4 * 1024 * 1024
HOLD_LIMIT = 1024 * 1024
PATH_CACHE = 1024
HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"host",
        b"content-length",
        b"expect",
        TOKEN_HEADER,
        *HEADER_KEYS,
    }
)
_REASONS = {
    400: b"Bad Request",
    401: b"Unauthorized",
    403: b"Forbidden",
    404: b"Not Found",
    413: b"Payload Too Large",
    421: b"Misdirected Request",
    431: b"Request Header Fields Too Large",
    502: b"Bad Gateway",
    504: b"Gateway Timeout",
    200: b"OK",
}


@dataclass(slots=True)
class Settings:
    """Everything the HTTP side needs."""

    target: Target
    tracer: Tracer
    policy: Policy
    defaults: Tags = field(default_factory=Tags)
    timeout: float = 120.0
    max_body: int = DEFAULT_MAX_BODY
    upstream_headers: list[tuple[bytes, bytes]] = field(default_factory=list)


@dataclass(slots=True)
class Request:
    """One parsed client request."""

    method: bytes
    target: str
    headers: list[tuple[bytes, bytes]]  # lower-case names
    raw_headers: list[tuple[bytes, bytes]]  # names as sent
    body: bytes
    keep_alive: bool
    lookup: dict[bytes, bytes]  # lower-case name -> value (the last one, where a name repeats)


class ProxyServer:
    """Shared state of the HTTP listener: settings, the upstream pool, counters."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.pool = UpstreamPool(settings.target)
        self.requests = 0
        self.provisional = 0
        self.connections: set[ClientProtocol] = set()
        self._path_tags: dict[str, tuple[Tags, str]] = {}

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
        return ClientProtocol(self)

    def close(self) -> None:
        self.pool.close()
        for conn in list(self.connections):
            conn.abort()


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket; ``IPPROTO_TCP`` so asyncio sets ``TCP_NODELAY`` on accepted sockets."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError:
        sock.close()
        raise
    sock.listen(2048)
    sock.setblocking(False)
    return sock


async def serve(server: ProxyServer, sock: socket.socket) -> asyncio.Server:
    """Start accepting on ``sock``."""
    loop = asyncio.get_running_loop()
    return await loop.create_server(server.protocol, sock=sock)


class ClientProtocol(asyncio.Protocol):
    """One client connection: parses requests in order and runs one handler task at a time."""

    def __init__(self, server: ProxyServer) -> None:
        self.server = server
        self.settings = server.settings
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.task: asyncio.Task[None] | None = None
        self.closed = False
        self._writable = asyncio.Event()
        self._writable.set()
        self._continue_sent = False

    # ---------------------------------------------------------------- asyncio callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.server.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.server.connections.discard(self)
        self._writable.set()
        if self.task is not None and not self.task.done():
            self.task.cancel()

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if self.task is None:
            self._next_request()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    # ---------------------------------------------------------------- parsing

    def _next_request(self) -> None:
        """Start a handler when the buffer holds a complete request (else wait for more bytes)."""
        try:
            request = self._parse()
        except _Reject as reject:
            self._reject_now(reject)
            return
        if request is not None:
            self.task = asyncio.get_running_loop().create_task(self._run(request))

    def _parse(self) -> Request | None:
        buffer = self.buffer
        end = buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(buffer) > MAX_HEAD:
                raise _Reject(431, "request head too large", close=True)
            return None
        lines = bytes(buffer[:end]).split(b"\r\n")
        parts = lines[0].split(b" ")
        if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
            raise _Reject(400, f"bad request line {lines[0][:80]!r}", close=True)
        method, target, version = parts
        headers: list[tuple[bytes, bytes]] = []
        raw_headers: list[tuple[bytes, bytes]] = []
        length = 0
        chunked = False
        keep_alive = version == b"HTTP/1.1"
        expect = False
        for line in lines[1:]:
            name, sep, value = line.partition(b":")
            if not sep:
                raise _Reject(400, f"bad header line {line[:80]!r}", close=True)
            raw = name.strip()
            key = raw.lower()
            value = value.strip()
            headers.append((key, value))
            raw_headers.append((raw, value))
            if key == b"content-length":
                try:
                    length = int(value)
                except ValueError:
                    raise _Reject(400, "invalid Content-Length", close=True) from None
            elif key == b"transfer-encoding":
                chunked = b"chunked" in value.lower()
            elif key == b"connection":
                token = value.lower()
                keep_alive = b"close" not in token and (keep_alive or b"keep-alive" in token)
            elif key == b"expect" and value.lower() == b"100-continue":
                expect = True
        start = end + 4
        max_body = self.settings.max_body
        if chunked:
            decoded = _dechunk(buffer, start, max_body)
            if decoded is None:
                return None
            body, consumed = decoded
        else:
            if length > max_body:
                raise _Reject(413, f"request body too large ({length} bytes; limit {max_body})", close=True)
            if len(buffer) - start < length:
                if expect and not self._continue_sent and self.transport is not None:
                    self._continue_sent = True
                    self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                return None
            body = bytes(buffer[start : start + length])
            consumed = start + length
        del buffer[:consumed]
        self._continue_sent = False
        return Request(
            method, target.decode("latin-1"), headers, raw_headers, body, keep_alive, dict(headers)
        )

    def _reject_now(self, reject: _Reject) -> None:
        self.buffer.clear()
        self._write_error(reject.status, reject.message, None, close=True)
        log.warning("rejected a request: %s", reject.message)

    # ---------------------------------------------------------------- writing

    def write(self, data: bytes) -> None:
        if not self.closed and self.transport is not None:
            self.transport.write(data)

    async def drain(self) -> None:
        if not self._writable.is_set():
            await self._writable.wait()

    def _write_error(
        self, status: int, message: str, request_ids: list[Any] | None, close: bool = False
    ) -> bytes:
        """Answer with a JSON-RPC error (one per request id; ``id: null`` when none); returns the body."""
        ids = request_ids or [None]
        bodies = [error_message(i, f"finmcp-proxy: {message}") for i in ids]
        body = bodies[0] if len(bodies) == 1 else b"[" + b",".join(bodies) + b"]"
        head = b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n" % (
            status,
            _REASONS.get(status, b"Error"),
            len(body),
        )
        if close:
            head += b"connection: close\r\n"
        self.write(head + b"\r\n" + body)
        if close and self.transport is not None:
            self.transport.close()
        return body

    # ---------------------------------------------------------------- handling

    async def _run(self, request: Request) -> None:
        keep = False
        try:
            keep = await self._handle(request)
        except asyncio.CancelledError:
            keep = False
        except Exception as exc:  # a bug must cost one request, never the listener
            log.exception("proxy failed on %s %s", request.method, request.target)
            if not self.closed:
                self._write_error(502, f"internal proxy error: {exc!r}", None, close=True)
        finally:
            self.task = None
        if self.closed:
            return
        if not (keep and request.keep_alive):
            if self.transport is not None:
                self.transport.close()
            return
        if self.buffer:
            self._next_request()

    async def _handle(self, request: Request) -> bool:
        """Handle one request; returns whether the connection may be kept alive."""
        settings = self.settings
        self.server.requests += 1
        path, _, query = request.target.partition("?")
        denied = settings.policy.check(request.lookup, path)
        if denied is not None:
            self._write_error(denied[0], denied[1], _request_ids(request.body))
            return True
        if path == "/healthz" and request.method == b"GET":
            self._health()
            return True
        try:
            tags, rest = self.server.path_tags(path)
            tags = header_tags(tags, request.lookup)
        except TagError as exc:
            self._write_error(400, str(exc), _request_ids(request.body))
            return True
        if rest in ("", "/", "/mcp"):
            target = settings.target
            if query:
                sep = "&" if "?" in target.path else "?"
                target = target.resolve(target.path + sep + query)
        else:
            target = settings.target.resolve(rest + ("?" + query if query else ""))
        return await Exchange(self, request, tags, target).run()

    def _health(self) -> None:
        tracer = self.settings.tracer
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
                "loop": loop_name(),
            }
        ).encode()
        self.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
            % (len(body), body)
        )


class _Reject(Exception):
    def __init__(self, status: int, message: str, close: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.close = close


def _dechunk(buffer: bytearray, start: int, limit: int) -> tuple[bytes, int] | None:
    """Decode a complete chunked body from ``buffer[start:]`` -> ``(body, end offset)``, or None."""
    body = bytearray()
    pos = start
    while True:
        eol = buffer.find(b"\r\n", pos)
        if eol < 0:
            return None
        try:
            size = int(bytes(buffer[pos:eol]).split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise _Reject(400, "bad chunk size in request body", close=True) from None
        pos = eol + 2
        if size == 0:
            end = buffer.find(b"\r\n\r\n", pos - 2)
            if end < 0:
                return None
            return bytes(body), end + 4
        if len(body) + size > limit:
            raise _Reject(413, f"request body too large (limit {limit} bytes)", close=True)
        if len(buffer) < pos + size + 2:
            return None
        body += buffer[pos : pos + size]
        pos += size + 2


def redact_target(target: str) -> str:
    """The request target with the values of secret-named query parameters replaced (stored copy only)."""
    path, sep, query = target.partition("?")
    if not sep:
        return target
    parts = []
    for item in query.split("&"):
        name, eq, _value = item.partition("=")
        if eq and unquote_plus(name).lower() in SECRET_KEYS:
            item = f"{name}={REDACTED}"
        parts.append(item)
    return path + "?" + "&".join(parts)


def _request_ids(body: bytes) -> list[Any] | None:
    if not body:
        return None
    ids = [m.id for m in parse_body(body) if m.kind == "request"]
    return ids or None


class Exchange:
    """One forwarded request/response pair and its trace bookkeeping."""

    def __init__(self, conn: ClientProtocol, request: Request, tags: Tags, target: Target) -> None:
        self.conn = conn
        self.settings = conn.settings
        self.tracer = conn.settings.tracer
        self.request = request
        self.tags = tags
        self.target = target
        self.session: Session | None = None
        self.messages: list[Message] = []
        self.calls: dict[str, PendingCall] = {}
        self.request_ids: list[Any] = []
        self.methods: dict[str, str] = {}  # id text -> method of this POST's requests
        self.deferred = False
        self.head_sent = False
        self.response: Response | None = None
        self.answered: set[str] = set()
        self.sse_parser: SSEParser | None = None  # set while an SSE response body is forwarded
        self.traced = False

    # ---------------------------------------------------------------- client side

    def _session_for_request(self) -> None:
        """Pick the session key: ``Mcp-Session-Id``, a 2026 client key, or defer until the response."""
        lookup = self.request.lookup
        raw_sid, raw_version = lookup.get(b"mcp-session-id"), lookup.get(b"mcp-protocol-version")
        sid = raw_sid.decode("latin-1") if raw_sid is not None else None
        version = raw_version.decode("latin-1") if raw_version is not None else None
        transport = "http"
        if sid:
            self.session = self.tracer.session(sid, transport, self.tags)
            return
        meta = self.messages[0].meta if self.messages else {}
        if version == MODERN_VERSION or meta.get(PROTOCOL_VERSION_META) == MODERN_VERSION:
            info = meta.get("io.modelcontextprotocol/clientInfo")
            name = info.get("name") if isinstance(info, dict) else None
            cversion = info.get("version") if isinstance(info, dict) else None
            t = self.tags
            key = f"2026:{name or '?'}/{cversion or '?'}@{t.run or '-'}/{t.sample or '-'}/{t.trial}"
            self.session = self.tracer.session(key, transport, self.tags)
            return
        self.deferred = True  # initialize (or something without a session): the response names it

    def _log_client(self) -> None:
        session = self.session
        assert session is not None
        request = self.request
        pseudo = [(b":method", request.method), (b":path", redact_target(request.target).encode("latin-1"))]
        headers: list[tuple[bytes, bytes]] | None = pseudo + request.raw_headers
        for msg in self.messages:
            call = self.tracer.client_message(session, self.tags, msg, headers)
            headers = None  # headers are stored once per HTTP request
            if call is not None:
                self.calls[call.id_text] = call

    # ---------------------------------------------------------------- the exchange

    def _trace_request(self) -> None:
        """Parse the request body and log it (once; called as soon as the request is on its way)."""
        if self.traced:
            return
        self.traced = True
        request = self.request
        if request.body:
            self.messages = parse_body(request.body)
            for msg in self.messages:
                if msg.kind == "request":
                    self.request_ids.append(msg.id)
                    self.methods[msg.id_text or "null"] = msg.method or ""
        self._session_for_request()
        if not self.deferred:
            self._log_client()

    async def run(self) -> bool:
        """Forward the request, trace it while the upstream works, forward the response."""
        request = self.request
        pairs = zip(request.raw_headers, request.headers, strict=True)  # the same headers, two spellings
        headers = [raw for raw, low in pairs if low[0] not in HOP_BY_HOP]
        headers += self.settings.upstream_headers
        head = build_request(request.method, self.target, headers, request.body)
        pool = self.conn.server.pool
        upstream = None
        response: Response | None = None
        timeout = None if request.method == b"GET" else self.settings.timeout
        try:
            async with asyncio.timeout(timeout) as deadline:
                upstream, response = await pool.send(head, request.body, request.method, self._trace_request)
                self.response = response
                if self.deferred:
                    self._adopt_session(response)
                if request.method == b"DELETE" and response.status < 300 and self.session is not None:
                    self.tracer.end_session(self.session.key)
                await self._forward_body(upstream, response, deadline, timeout)
            pool.release(upstream, response)
            upstream = None
            await self._fail_unanswered("transport_error", "upstream response ended without an answer")
            return response.keep_alive
        except TimeoutError:
            self._trace_request()
            reason = f"upstream {self.target.url} did not answer within {timeout} s"
            return await self._upstream_failed(reason, 504)
        except UpstreamError as exc:
            self._trace_request()
            return await self._upstream_failed(str(exc), 502)
        except asyncio.CancelledError:  # the client went away: abandon the upstream request too
            self._trace_request()
            if self.deferred and self.session is None:
                self._adopt_session(None)
            for call in list(self.calls.values()):
                if not call.done:
                    _consume(self.tracer.fail(call, "cancelled", "client disconnected before the response"))
            raise
        finally:
            if upstream is not None:
                upstream.close()

    def _adopt_session(self, response: Response | None) -> None:
        sid = response.header(b"mcp-session-id") if response is not None else None
        if sid:
            key = sid.decode("latin-1")
        else:
            self.conn.server.provisional += 1
            key = f"http:nosession:{time.monotonic_ns()}:{self.conn.server.provisional}"
        self.session = self.tracer.session(key, "http", self.tags)
        self.deferred = False
        self._log_client()

    async def _forward_body(
        self, upstream: Any, response: Response, deadline: asyncio.Timeout, timeout: float | None
    ) -> None:
        """Forward head and body, holding back what completes a call's response until it is committed."""
        conn = self.conn
        mode = response.body_mode
        head = response.head
        if mode == "none":
            await self._commit(self._parse_whole(b"", response))
            conn.write(head)
            self.head_sent = True
            return
        is_sse = response.content_type.startswith(b"text/event-stream")
        # a small JSON body goes out with its head in one write (and only after any call row it completes)
        hold = not is_sse and (bool(self.calls) or (mode == "length" and response.length <= HOLD_LIMIT))
        # a POST's SSE head waits for the first event, so both leave in one write; GET streams start at once
        pending_head = head if is_sse and self.request.method == b"POST" else b""
        loop = asyncio.get_running_loop()
        if not hold and not pending_head:
            conn.write(head)
            self.head_sent = True
        held: list[bytes] = [head] if hold else []
        copy: list[bytes] = []
        parser = self.sse_parser = SSEParser() if is_sse else None
        pieces = upstream.body(response)
        async for raw, payload in pieces:
            # push the deadline back only when it moved by a tenth of the timeout (at most 1 s): each
            # reschedule costs a timer, and an SSE response comes in several pieces
            if timeout is not None and deadline.when() - loop.time() < timeout - min(1.0, timeout / 10):
                deadline.reschedule(loop.time() + timeout)
            if parser is not None:
                end = b""  # the final chunk, when this piece is or brings it
                if not payload:
                    raw, end = b"", raw
                else:
                    waits = self._sse_events(parser.feed(payload))
                    if waits:
                        await self._commit(waits)
                        # the stream's end often arrives while the row commits: send both in one write
                        if mode == "chunked":
                            end = upstream.take_buffered_end() or b""
                if end and self._unanswered():  # requests still unanswered get an error before the end
                    end = _chunk(await self._end_without_answer()) + end
                raw += end
                if pending_head:
                    raw, pending_head = pending_head + raw, b""
                    self.head_sent = True
                conn.write(raw)
                await conn.drain()
                if end:
                    await pieces.aclose()
                    break
            elif hold:
                held.append(raw)
                copy.append(payload)
            else:
                copy.append(payload)
                conn.write(raw)
                await conn.drain()
        if pending_head:  # an SSE body without any piece
            conn.write(pending_head)
            self.head_sent = True
        if parser is not None and mode == "close" and self._unanswered():  # the client reads until close
            conn.write(await self._end_without_answer())
        if parser is None:
            waits = self._parse_whole(b"".join(copy), response)
            # a call this body did not answer fails now, so its row too is committed before the bytes go
            waits += self._fail_calls("transport_error", "upstream response ended without an answer")
            await self._commit(waits)
            if hold:
                conn.write(b"".join(held))
                self.head_sent = True

    def _parse_whole(self, body: bytes, response: Response) -> list[Awaitable[Any]]:
        """Log a non-SSE response body; futures of the calls it completes."""
        if not body:
            return []
        session = self.session
        if not response.content_type.startswith(b"application/json") and not self.calls:
            return []
        waits: list[Awaitable[Any]] = []
        if self.calls or self.methods:
            for msg in parse_body(body):
                future = self.tracer.server_message(session, self.tags, msg, self._method_of(msg))
                if future is not None:
                    waits.append(future)
        else:
            self.tracer.log_raw(session, self.tags, "s2c", body)
        return waits

    def _method_of(self, msg: Message) -> str | None:
        return self.methods.get(msg.id_text or "null") if msg.id is not None else None

    def _sse_events(self, events: list[Any]) -> list[Awaitable[Any]]:
        waits: list[Awaitable[Any]] = []
        session = self.session
        for event in events:
            if not event.data:
                continue
            if not self.calls and not self.methods:  # a GET stream: parse when the row is written
                self.tracer.log_raw(session, self.tags, "s2c", event.data)
                continue
            for msg in parse_body(event.data):
                if msg.kind in ("response", "error"):
                    self.answered.add(msg.id_text or "null")
                future = self.tracer.server_message(session, self.tags, msg, self._method_of(msg))
                if future is not None:
                    waits.append(future)
        return waits

    async def _commit(self, waits: list[Awaitable[Any]]) -> None:
        """Wait until the given call rows are committed (a failed write is logged, not fatal)."""
        for future in waits:
            try:
                await future
            except Exception as exc:
                log.error("call row not committed before forwarding: %s", exc)

    def _unanswered(self) -> bool:
        """True while a request of this POST has had no response or error event yet."""
        answered = self.answered
        return any(id_text not in answered for id_text in self.methods)

    def _sse_errors(self, reason: str) -> bytes:
        """SSE error events (logged) for this POST's requests still unanswered; ``b""`` when none.

        A partial upstream event is ended first, or the client would read it and the first error
        as one unparseable event.
        """
        unanswered = [i for i in self.request_ids if json.dumps(i, ensure_ascii=False) not in self.answered]
        if not unanswered:
            return b""
        injected = [error_message(i, f"finmcp-proxy: {reason}") for i in unanswered]
        for body in injected:
            for msg in parse_body(body):
                self.tracer.log(self.session, self.tags, "s2c", msg)
        self.answered.update(json.dumps(i, ensure_ascii=False) for i in unanswered)
        parser = self.sse_parser
        lead = b"\r\n\r\n" if parser is not None and parser.pending else b""
        return lead + b"".join(encode_event(body) for body in injected)

    async def _end_without_answer(self) -> bytes:
        """An SSE stream ended cleanly: fail (and commit) its unanswered calls; their error events."""
        reason = "upstream response ended without an answer"
        await self._fail_unanswered("transport_error", reason)
        return self._sse_errors(reason)

    def _fail_calls(self, status: str, reason: str) -> list[Awaitable[Any]]:
        """Finish this request's unanswered calls as failed; the futures of their committed rows."""
        waits: list[Awaitable[Any]] = []
        for call in self.calls.values():
            if not call.done:
                future = self.tracer.fail(call, status, reason)
                if future is not None:
                    waits.append(future)
        return waits

    async def _fail_unanswered(self, status: str, reason: str) -> None:
        waits = self._fail_calls(status, reason)
        if waits:
            await self._commit(waits)

    async def _upstream_failed(self, reason: str, status: int) -> bool:
        """Answer the client with a JSON-RPC error for every request still unanswered; log the failure."""
        log.warning("%s %s: %s", self.request.method.decode(), self.target.url, reason)
        if self.deferred:
            self._adopt_session(None)
        await self._fail_unanswered("transport_error", reason)
        conn = self.conn
        if not self.head_sent:
            body = conn._write_error(status, reason, self.request_ids or None)
            for msg in parse_body(body):
                self.tracer.log(self.session, self.tags, "s2c", msg)
            return True
        # the head (and maybe part of an SSE stream) already went out: end the stream with the errors
        response = self.response
        streaming_sse = (
            response is not None
            and response.body_mode == "chunked"
            and response.content_type.startswith(b"text/event-stream")
        )
        events = self._sse_errors(reason) if streaming_sse else b""
        if events:
            conn.write(_chunk(events) + b"0\r\n\r\n")
            return True
        if conn.transport is not None:
            conn.transport.close()
        return False


def _chunk(data: bytes) -> bytes:
    """``data`` as one HTTP/1.1 chunk (nothing for no data: an empty chunk would end the body)."""
    return b"%x\r\n%s\r\n" % (len(data), data) if data else b""


def _consume(future: asyncio.Future[Any] | None) -> None:
    if future is not None:
        future.add_done_callback(lambda f: f.cancelled() or f.exception())
