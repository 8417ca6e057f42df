"""One forwarded HTTP request and its response, driven by the upstream connection's callbacks.

:meth:`Exchange.start` sends the request upstream (on a pooled connection when one is idle, else
after a task opens one) and traces it while the upstream works. The response then arrives through
the :class:`proxy.upstream_conn.ResponseSink` callbacks and is forwarded as it comes, with one
pause: bytes that complete a ``tools/call`` wait behind a *barrier* until that call's row is
committed. Output is queued in order (bytes and barriers) and written in one ``write`` per batch of
upstream bytes, so an SSE answer and its stream's end that arrive together leave together.

When the exchange is over (response forwarded, or failed and answered) it tells its client
connection, which closes or reads the next request.

Its lifecycle is one :class:`Phase`; :data:`NEXT` is the transition table and a move it does not
list raises :class:`IllegalTransition` (which costs the request a 502, never the listener).
"""

from __future__ import annotations

import asyncio
import enum
import json
import logging
import time
from typing import Any, Protocol

from finmcp.proxy.answer_overflow import Overflow, too_large
from finmcp.proxy.capture import PendingCall, Session
from finmcp.proxy.http_sessions import is_probe, request_session_key
from finmcp.proxy.http_types import Request, Settings
from finmcp.proxy.http_wire import chunk, error_response, with_cors
from finmcp.proxy.jsonrpc import Message, error_message, parse_body, safe_to_repeat
from finmcp.proxy.ordered_output import OrderedOutput
from finmcp.proxy.tags import Tags
from finmcp.proxy.upstream_conn import ConnectionPool, UpstreamConnection
from finmcp.proxy.upstream_http import Response, Target, UpstreamError, build_request
from finmcp.recordings.plumbing.sse import Event, EventTooLarge, SSEParser, encode_event
from finmcp.recordings.redact import redact_url

log = logging.getLogger("finmcp.proxy.http")

HOLD_LIMIT = 1024 * 1024
NO_ANSWER = "upstream response ended without an answer"


class Phase(enum.Enum):
    """Where an exchange is in its life."""

    CONNECTING = "connecting"  # waiting for a new upstream connection
    SENT = "sent"  # the request is written; no response head yet
    RECONNECTING = "reconnecting"  # a reused connection died silently; a fresh one opens for the one resend
    RESENT = "resent"  # written once more (never a third time); no response head yet
    HELD = "held"  # the response head arrived and waits (a small JSON body, or a POST's SSE head)
    STREAMING = "streaming"  # the response head went to the client's output
    FINISHING = "finishing"  # the response is over (forwarded, failed or answered); output drains
    DONE = "done"  # handed back to the client connection, or abandoned


NEXT: dict[Phase, frozenset[Phase]] = {
    Phase.CONNECTING: frozenset({Phase.SENT, Phase.FINISHING, Phase.DONE}),
    Phase.SENT: frozenset({Phase.HELD, Phase.STREAMING, Phase.RECONNECTING, Phase.FINISHING, Phase.DONE}),
    Phase.RECONNECTING: frozenset({Phase.RESENT, Phase.FINISHING, Phase.DONE}),
    Phase.RESENT: frozenset({Phase.HELD, Phase.STREAMING, Phase.FINISHING, Phase.DONE}),
    Phase.HELD: frozenset({Phase.STREAMING, Phase.FINISHING, Phase.DONE}),
    Phase.STREAMING: frozenset({Phase.FINISHING, Phase.DONE}),
    Phase.FINISHING: frozenset({Phase.DONE}),
    Phase.DONE: frozenset(),
}
"""Phase -> the phases it may move to."""
_OVER = frozenset({Phase.FINISHING, Phase.DONE})
_WAITING = frozenset({Phase.CONNECTING, Phase.SENT, Phase.RECONNECTING, Phase.RESENT})


class IllegalTransition(RuntimeError):
    """An exchange was asked to move between phases :data:`NEXT` does not connect (a bug)."""


class ClientChannel(Protocol):
    """The back-channel of an exchange: the client connection it answers on.

    Implemented by :class:`proxy.http_proxy.ClientProtocol`.
    """

    settings: Settings
    pool: ConnectionPool
    """The upstream connection pool of the listener."""
    paused: bool
    """True while the client reads slower than the upstream sends."""
    arrived_ns: int
    """When the client started the request being handled (monotonic): the accept of a fresh connection,
    else the arrival of the request's first byte."""
    order: int  # the connection's number, and mark()/quiet(): the connection group rule (grouping.Channel)

    def mark(self) -> int: ...
    def quiet(self, mark: int) -> bool: ...

    def write(self, data: bytes) -> None:
        """Send bytes to the client (dropped once the connection is closed)."""
        ...

    def next_provisional(self) -> int:
        """A number unique in this listener, for a session key before the upstream names the session."""
        ...

    def exchange_done(self, exchange: Exchange, keep: bool) -> None:
        """The exchange wrote its last byte; ``keep``: the connection may serve another request."""
        ...

    def internal_error(self, exchange: Exchange, exc: Exception, answered: bool) -> None:
        """A bug while forwarding: answer 502 unless the response head went out (``answered``), and close."""
        ...


class Exchange:
    """One forwarded request/response pair and its trace bookkeeping."""

    def __init__(self, conn: ClientChannel, request: Request, tags: Tags, target: Target) -> None:
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
        self.state = Phase.CONNECTING
        self.response: Response | None = None
        self.answered: set[str] = set()
        self.upstream: UpstreamConnection | None = None
        self.sse_parser: SSEParser | None = None  # set while an SSE response body is forwarded
        self.sse_held = bytearray()  # payload bytes of the SSE event not ended yet (never forwarded early)
        self.sse_chunked = False  # the SSE body is chunked: what is forwarded of a held event is re-chunked
        self.sse_messages = 0  # events with data on this POST's stream (bounded: --max-stream-messages)
        self.resumable = False  # the SSE stream carried an event id: the client may resume it (SEP-1699)
        self.held: list[bytes] = []  # a held response (head first) until its end; empty: not held
        self.copy: list[bytes] = []
        self.kept = 0  # bytes in copy (never more than the --max-answer limit)
        self.overflow: Overflow | None = None  # set once a streamed answer passed the limit
        self.pending_head = b""
        self.output = OrderedOutput(conn.write, self._wake)  # bytes and commit barriers, in order
        self.keep = False  # once FINISHING: the client connection may serve another request
        self.head = b""
        self.timeout = None if request.method == b"GET" else self.settings.timeout
        self.deadline = 0.0
        self.timer: asyncio.TimerHandle | None = None
        self.connecting: asyncio.Task[None] | None = None
        self.arrived_ns = conn.arrived_ns
        self.cors: list[tuple[bytes, bytes]] = []  # a --cors-origin page's request: headers for its response
        self.probe = False  # a lone server/discover that opened its session (see _session_for_request)

    # ---------------------------------------------------------------- phases

    def _to(self, phase: Phase) -> None:
        """Move to ``phase``; :class:`IllegalTransition` if :data:`NEXT` does not allow it."""
        if phase not in NEXT[self.state]:
            raise IllegalTransition(f"exchange {self.state.value} -> {phase.value}")
        self.state = phase

    @property
    def over(self) -> bool:
        """The response is over (complete, failed or answered by the proxy)."""
        return self.state in _OVER

    # ---------------------------------------------------------------- start

    def start(self) -> None:
        """Send the request (or start opening a connection for it) and trace it."""
        request = self.request
        headers = (
            request.forward + self.settings.upstream_headers
            if self.settings.upstream_headers
            else request.forward
        )
        self.head = build_request(request.method, self.target, headers, request.body)
        loop = asyncio.get_running_loop()
        if self.timeout is not None:
            self.deadline = loop.time() + self.timeout
            self.timer = loop.call_at(self.deadline, self._on_timer)
        upstream = self.conn.pool.take_idle()
        if upstream is not None:
            self._send(upstream)
            self._trace_request()
        else:  # logged before the wait, so requests are logged in their order of arrival
            self._trace_request()
            self.connecting = loop.create_task(self._connect())

    async def _connect(self) -> None:
        try:
            upstream = await self.conn.pool.connect()
        except UpstreamError as exc:  # a TLS failure is logged once by the pool, not per request
            self._guarded(self._upstream_failed, str(exc), 502, exc.logged)
            self._guarded(self._flush)
            return
        if self.over:  # the client left (or the deadline passed) meanwhile
            upstream.close()
            return
        self._guarded(self._send, upstream)

    def _send(self, upstream: UpstreamConnection) -> None:
        self._to(Phase.RESENT if self.state is Phase.RECONNECTING else Phase.SENT)
        self.upstream = upstream
        upstream.send(self.head, self.request.body, self.request.method, self)
        if self.conn.paused:
            upstream.pause()

    # ---------------------------------------------------------------- tracing the request

    def _trace_request(self) -> None:
        """Parse the request body and log it (called once, as soon as the request is on its way)."""
        request = self.request
        if request.body:
            self.messages = parse_body(request.body)
            for msg in self.messages:
                if msg.kind == "request":
                    self.request_ids.append(msg.id)
                    self.methods[msg.id_text or "null"] = msg.method or ""
        self._session_for_request()
        if self.session is not None:
            self._log_client()

    def _session_for_request(self) -> None:
        """Pick the session key: ``Mcp-Session-Id``, a 2026 client key, or defer until the response."""
        meta = self.messages[0].meta if self.messages else {}
        key = request_session_key(self.request.lookup, meta, self.tags)
        if key is not None:
            # a 2026 client's first request may be its server/discover probe: a session it opens ends
            # with the probe when the upstream refuses it (the client falls back to the handshake)
            self.probe = key not in self.tracer.sessions and is_probe(self.messages)
            self.session = self.tracer.session(key, "http", self.tags)
        # else initialize (or something without a session): the session stays None until the response names it

    def _log_client(self) -> None:
        session = self.session
        assert session is not None
        request = self.request
        pseudo = [(b":method", request.method), (b":path", redact_url(request.target).encode("latin-1"))]
        headers: list[tuple[bytes, bytes]] | None = pseudo + request.raw_headers
        arrived = self.arrived_ns
        for msg in self.messages:
            call = self.tracer.client_message(session, self.tags, msg, headers, arrived, self.conn)
            headers = None  # headers are stored once per HTTP request
            if call is not None:
                self.calls[call.id_text] = call

    def _adopt_session(self, response: Response | None) -> None:
        sid = response.header(b"mcp-session-id") if response is not None else None
        if sid:
            key = sid.decode("latin-1")
        else:
            key = f"http:nosession:{time.monotonic_ns()}:{self.conn.next_provisional()}"
        self.session = self.tracer.session(key, "http", self.tags)
        self._log_client()

    # ---------------------------------------------------------------- the response (ResponseSink)

    def on_head(self, response: Response) -> None:
        self._guarded(self._head, response)

    def on_body(self, raw: bytes, payload: bytes) -> None:
        self._guarded(self._body, raw, payload)

    def on_end(self, raw: bytes) -> None:
        self._guarded(self._end, raw)

    def on_failure(self, error: UpstreamError, silent: bool) -> None:
        if silent and self.state is Phase.SENT:  # written on a reused connection, no answer (never resent)
            refusal = self.conn.pool.lost_after_write(
                error, self.request.method, safe_to_repeat(self.messages)
            )
            if refusal is None:  # safe to repeat: once more, on a fresh connection
                self._to(Phase.RECONNECTING)
                self.upstream = None
                self.connecting = asyncio.get_running_loop().create_task(self._connect())
                return
            error = refusal
        self._guarded(self._upstream_failed, str(error), 502)

    def on_batch_end(self) -> None:
        self._guarded(self._flush)

    def _head(self, response: Response) -> None:
        if self.cors:  # the one change to an upstream head: a browser page needs the CORS headers
            response.head = with_cors(response.head, self.cors)
        self.response = response
        self._touch()
        if self.session is None:
            self._adopt_session(response)
        if self.request.method == b"DELETE" and response.status < 300 and self.session is not None:
            self.tracer.end_session(self.session.key)
        mode = response.body_mode
        if mode == "none":
            self.output.emit(response.head)
            self._to(Phase.STREAMING)
            return
        is_sse = response.content_type.startswith(b"text/event-stream")
        if (
            not is_sse
            and self.calls
            and mode == "length"
            and response.length > self.settings.limits.max_answer
        ):
            self._too_large(f"{response.length} bytes")
            return
        # a small JSON body goes out with its head in one write (and only after any call row it completes)
        hold = not is_sse and (bool(self.calls) or (mode == "length" and response.length <= HOLD_LIMIT))
        # a POST's SSE head waits for the first event, so both leave in one write; GET streams start at once
        self.pending_head = response.head if is_sse and self.request.method == b"POST" else b""
        if hold:
            self.held.append(response.head)
            self._to(Phase.HELD)
        elif self.pending_head:
            self._to(Phase.HELD)
        else:
            self.output.emit(response.head)
            self._to(Phase.STREAMING)
        if is_sse:
            self.sse_parser = SSEParser(max_event=self.settings.max_event_bytes)
            self.sse_chunked = mode == "chunked"

    def _body(self, raw: bytes, payload: bytes) -> None:
        self._touch()
        if self.sse_parser is not None:
            self._sse_body(self.sse_parser, raw, payload)
        elif self.overflow is not None:
            self.overflow.add(payload)
            self.output.emit(raw)
        elif self.held or self.calls or self.response_is_json:  # a body nobody parses is not kept
            if self.kept + len(payload) > self.settings.limits.max_answer:
                self._past_limit(raw, payload)
                return
            self.kept += len(payload)
            self.copy.append(payload)
            if self.held:
                self.held.append(raw)
            else:
                self.output.emit(raw)
        else:
            self.output.emit(raw)

    def _past_limit(self, raw: bytes, payload: bytes) -> None:
        """The answer passed ``--max-answer``: a call's is refused; any other streams on, stored bounded."""
        if self.calls:
            self._too_large(f"more than {self.settings.limits.max_answer} bytes")
            return
        overflow = self.overflow = Overflow(self.settings.limits.max_answer)
        for piece in self.copy:
            overflow.add(piece)
        self.copy, self.kept = [], 0
        overflow.add(payload)
        if self.held:  # a body held as small (Content-Length) with a limit below the hold size
            self.output.emit(b"".join(self.held))
            self.held = []
            self._to(Phase.STREAMING)
        self.output.emit(raw)

    def _too_large(self, size: str) -> None:
        """Refuse a ``tools/call`` answer over the limit (nothing of it was forwarded): 502, logged, traced."""
        self._upstream_failed(too_large(size, self.settings.limits.max_answer), 502)

    @property
    def response_is_json(self) -> bool:
        return self.response is not None and self.response.content_type.startswith(b"application/json")

    def _sse_body(self, parser: SSEParser, raw: bytes, payload: bytes) -> None:
        """Forward the SSE events ``payload`` ends (after their rows commit); hold the unfinished one.

        An event's bytes go out only once its end has arrived, so a stream stopped by a limit never
        leaves a partial event with the client: over ``--max-event-bytes`` the event is dropped
        whole, and past ``--max-stream-messages`` the read that crossed the bound is neither
        forwarded nor stored. Either way the requests still unanswered get an error, as in the trace.
        """
        too_large: EventTooLarge | None = None
        try:
            events = parser.feed(payload)
            tail = parser.pending_bytes
        except EventTooLarge as exc:
            events, tail, too_large = exc.events, exc.size, exc
        limit = self.settings.max_stream_messages
        if self.methods and events:
            count = self.sse_messages + sum(1 for event in events if event.data)
            if count > limit:
                self._sse_limit(
                    f"upstream sent more than {limit} messages on this request's stream (--max-stream-messages)"
                )
                return
            self.sse_messages = count
        self.output.after(self._sse_events(events))
        held = self.sse_held
        if not tail:  # every byte ends an event: the upstream's own chunk goes out as it came
            self._emit_sse(self._framed(bytes(held)) + raw if held else raw)
            held.clear()
        elif tail < len(held) + len(payload):  # events ended in this piece: forward them, hold the rest
            cut = len(payload) - tail
            self._emit_sse(self._framed(bytes(held) + payload[:cut]))
            held[:] = payload[cut:]
        elif too_large is None:  # all of it belongs to the unfinished event
            held += payload
        if too_large is not None:
            self._sse_limit(f"upstream sent an SSE event over {too_large.limit} bytes (--max-event-bytes)")

    def _framed(self, data: bytes) -> bytes:
        """Payload bytes as forwarded: one chunk of a chunked body, else as they are."""
        return chunk(data) if self.sse_chunked else data

    def _sse_limit(self, reason: str) -> None:
        """A bound of an SSE stream was hit: stop it; unanswered requests get an error (and their rows)."""
        self.sse_held.clear()  # nothing unfinished was forwarded: the errors start clean
        if self.sse_parser is not None:
            self.sse_parser.discard()
        log.warning(
            "%s %s: %s; stream stopped, %d unanswered request(s) answered with this error",
            self.request.method.decode(),
            self.target.url,
            reason,
            sum(1 for id_text in self.methods if id_text not in self.answered),
        )
        self._upstream_failed(reason, 502, logged=True)

    def _emit_sse(self, raw: bytes) -> None:
        if self.pending_head:
            raw, self.pending_head = self.pending_head + raw, b""
            self._to(Phase.STREAMING)
        self.output.emit(raw)

    def _end(self, raw: bytes) -> None:
        """The upstream's response is complete: release the connection, finish the calls, end the output."""
        response = self.response
        assert response is not None
        self._stop_timer()
        if self.upstream is not None:
            self.conn.pool.release(self.upstream, response.keep_alive)
            self.upstream = None
        if self.sse_parser is not None:
            if self.sse_held:  # an event the stream did not end
                if response.body_mode == "length" or not self._unanswered():
                    self._emit_sse(self._framed(bytes(self.sse_held)))  # forwarded as it came
                self.sse_held.clear()  # else dropped, as an SSE reader drops it; the error events follow
                self.sse_parser.discard()
            if self.resumable and self._unanswered():  # the client resumes with GET + Last-Event-ID
                self._await_resumption()
            if raw and self._unanswered():  # requests still unanswered get an error before the end
                self._emit_sse(b"")
                self.output.after(self._fail_calls("transport_error", NO_ANSWER))
                self.output.emit(chunk(self._sse_errors(NO_ANSWER)))
            self._emit_sse(raw)
            if response.body_mode == "close" and self._unanswered():  # the client reads until close
                self.output.after(self._fail_calls("transport_error", NO_ANSWER))
                self.output.emit(self._sse_errors(NO_ANSWER))
        elif self.overflow is not None:
            self._log_overflow(self.overflow)
            self.output.emit(raw)
        elif response.body_mode != "none":
            waits = self._parse_whole(b"".join(self.copy), response)
            # a call this body did not answer fails now, so its row too is committed before the bytes go
            waits += self._fail_calls("transport_error", NO_ANSWER)
            self.output.after(waits)
            if self.held:
                self.held.append(raw)
                self.output.emit(b"".join(self.held))
                self._to(Phase.STREAMING)
            else:
                self.output.emit(raw)  # the last chunk (and trailers) of a chunked body
        self.output.after(self._fail_calls("transport_error", NO_ANSWER))
        if self.probe and self.session is not None and (response.status >= 400 or self._answered_error()):
            log.info(
                "server/discover refused by the upstream: session %s ends with the probe", self.session.key
            )
            self.tracer.end_session(self.session.key)
        self._finish(response.keep_alive)

    def _answered_error(self) -> bool:
        """Whether a JSON answer (the copy kept for the trace) is a JSON-RPC error."""
        if not self.copy:
            return False
        return any(msg.kind == "error" for msg in parse_body(b"".join(self.copy)))

    def _parse_whole(self, body: bytes, response: Response) -> list[asyncio.Future[Any]]:
        """Log a non-SSE response body; futures of the calls it completes."""
        if not body:
            return []
        # set before any response byte arrives (_trace_request runs as the request is sent); no check here
        session: Session = self.session  # type: ignore[assignment]
        if not response.content_type.startswith(b"application/json") and not self.calls:
            return []
        waits: list[asyncio.Future[Any]] = []
        if self.calls or self.methods:
            for msg in parse_body(body):
                future = self.tracer.server_message(session, self.tags, msg, self._method_of(msg))
                if future is not None:
                    waits.append(future)
        else:
            self.tracer.log_raw(session, self.tags, "s2c", body)
        return waits

    def _log_overflow(self, overflow: Overflow) -> None:
        """Store an answer that passed the limit as its first bytes, its length and its hash; log it once."""
        limit = self.settings.limits.max_answer
        log.warning(
            "%s %s: answer of %d bytes is over --max-answer (%d): forwarded whole, stored its first %d bytes"
            " and SHA-256",
            self.request.method.decode(),
            self.target.url,
            overflow.total,
            limit,
            len(overflow.prefix),
        )
        self.tracer.log_truncated(
            self.session, self.tags, bytes(overflow.prefix), overflow.total, overflow.digest()
        )

    def _method_of(self, msg: Message) -> str | None:
        return self.methods.get(msg.id_text or "null") if msg.id is not None else None

    def _sse_events(self, events: list[Event]) -> list[asyncio.Future[Any]]:
        waits: list[asyncio.Future[Any]] = []
        session: Session = self.session  # type: ignore[assignment]  # set before the response: see _parse_whole
        for event in events:
            if event.id:
                self.resumable = True
            if not event.data:
                continue
            if not self.calls and not self.methods and not session.resuming:
                self.tracer.log_raw(
                    session, self.tags, "s2c", event.data
                )  # a GET stream: parsed when written
                continue
            for msg in parse_body(event.data):
                if msg.kind in ("response", "error"):
                    id_text = msg.id_text or "null"
                    self.answered.add(id_text)
                    if id_text not in self.methods:  # maybe the answer of a call resumed on this stream
                        resumed = self.tracer.resumed_call(session, id_text)
                        if resumed is not None:
                            self.calls[id_text] = resumed
                future = self.tracer.server_message(session, self.tags, msg, self._method_of(msg))
                if future is not None:
                    waits.append(future)
        return waits

    def _await_resumption(self) -> None:
        """This POST's stream ended resumable before its answers: its calls wait for them on a GET stream.

        No error is injected (the client resumes with ``GET`` + ``Last-Event-ID``, SEP-1699); the
        calls stay pending until their answers arrive on the resumed stream (or the session ends).
        """
        self.answered.update(self.methods)
        for id_text, call in list(self.calls.items()):
            if not call.done:
                self.tracer.await_resumption(call)
                del self.calls[id_text]

    def _unanswered(self) -> bool:
        """True while a request of this POST has had no response or error event yet."""
        answered = self.answered
        return any(id_text not in answered for id_text in self.methods)

    def _sse_errors(self, reason: str) -> bytes:
        """SSE error events (logged) for this POST's requests still unanswered; ``b""`` when none.

        No partial upstream event is ever forwarded (:meth:`_sse_body` holds an event until its
        end), so the errors need no blank line before them.
        """
        unanswered = [i for i in self.request_ids if json.dumps(i, ensure_ascii=False) not in self.answered]
        if not unanswered:
            return b""
        injected = [error_message(i, f"finmcp-proxy: {reason}") for i in unanswered]
        for body in injected:
            for msg in parse_body(body):
                self.tracer.log(self.session, self.tags, "s2c", msg)
        self.answered.update(json.dumps(i, ensure_ascii=False) for i in unanswered)
        return b"".join(encode_event(body) for body in injected)

    def _fail_calls(self, status: str, reason: str) -> list[asyncio.Future[Any]]:
        """Finish this request's unanswered calls as failed; the futures of their committed rows."""
        waits: list[asyncio.Future[Any]] = []
        for call in self.calls.values():
            if not call.done:
                future = self.tracer.fail(call, status, reason)
                if future is not None:
                    waits.append(future)
        return waits

    # ---------------------------------------------------------------- failures

    def _upstream_failed(self, reason: str, status: int, logged: bool = False) -> None:
        """Answer the client with a JSON-RPC error for every request still unanswered; log the failure.

        ``logged``: the failure was logged already (TLS failures are logged once per reason).
        """
        if self.over:
            return
        self._stop_timer()
        if not logged:
            log.warning("%s %s: %s", self.request.method.decode(), self.target.url, reason)
        if self.upstream is not None:
            self.upstream.close()
            self.upstream = None
        if self.session is None:
            self._adopt_session(None)
        self.output.after(self._fail_calls("transport_error", reason))
        if self.state in _WAITING or self.state is Phase.HELD:
            whole, body = error_response(status, reason, self.request_ids or None, extra=self.cors)
            for msg in parse_body(body):
                self.tracer.log(self.session, self.tags, "s2c", msg)
            self.output.emit(whole)
            self._finish(True)
            return
        # the head (and maybe part of an SSE stream) already went out: end the stream with the errors
        response = self.response
        streaming_sse = (
            response is not None
            and response.body_mode == "chunked"
            and response.content_type.startswith(b"text/event-stream")
        )
        events = self._sse_errors(reason) if streaming_sse else b""
        if events:
            self.output.emit(chunk(events) + b"0\r\n\r\n")
            self._finish(True)
            return
        self._finish(False)

    def _on_timer(self) -> None:
        self.timer = None
        if self.over or self.timeout is None:
            return
        loop = asyncio.get_running_loop()
        if loop.time() < self.deadline:  # bytes arrived meanwhile: wait for the rest of the time
            self.timer = loop.call_at(self.deadline, self._on_timer)
            return
        reason = f"upstream {self.target.url} did not answer within {self.timeout} s"
        self._guarded(self._upstream_failed, reason, 504)
        self._guarded(self._flush)

    def _touch(self) -> None:
        if self.timeout is not None:
            self.deadline = asyncio.get_running_loop().time() + self.timeout

    def _stop_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def abort(self) -> None:
        """The client went away: abandon the upstream request too; its calls are logged as cancelled."""
        if self.state is Phase.DONE:
            return
        self._to(Phase.DONE)
        self._stop_timer()
        if self.connecting is not None:
            self.connecting.cancel()
        if self.upstream is not None:
            self.upstream.close()
            self.upstream = None
        if self.session is None:
            self._adopt_session(None)
        for call in list(self.calls.values()):
            if not call.done:
                self.tracer.fail(call, "cancelled", "client disconnected before the response")  # nobody waits

    def _guarded(self, step: Any, *args: Any) -> None:
        """Run one step; a bug costs this request (502, connection closed), never the listener."""
        if self.state is Phase.DONE:
            return
        try:
            step(*args)
        except Exception as exc:
            log.exception("proxy failed on %s %s", self.request.method, self.request.target)
            answered = self.state in (Phase.STREAMING, Phase.FINISHING)
            self.state = Phase.DONE  # from any phase: NEXT allows it from every one but DONE
            self._stop_timer()
            if self.upstream is not None:
                self.upstream.close()
                self.upstream = None
            for call in list(self.calls.values()):
                if not call.done:
                    self.tracer.fail(call, "transport_error", f"internal proxy error: {exc!r}")
            self.conn.internal_error(self, exc, answered)

    # ---------------------------------------------------------------- output

    def _wake(self) -> None:
        self._guarded(self._flush)

    def _flush(self) -> None:
        """Write what may go out now; once all of it went and the response is over, end the exchange."""
        drained = self.output.flush()
        if drained and self.calls:  # every answer queued so far is written: the client may have it
            self.tracer.delivered(self.calls.values())
        if drained and self.state is Phase.FINISHING:
            self._to(Phase.DONE)
            self.conn.exchange_done(self, self.keep)

    def _finish(self, keep: bool) -> None:
        """The response is over: once the queued output is written, the connection may go on."""
        self.keep = keep
        self._to(Phase.FINISHING)
