"""The model door: an agent's model traffic, forwarded to ``--llm-upstream`` and logged like its tool calls.

A request whose path (after the tags ``/r/RUN/s/SAMPLE/k/TRIAL/t/TURN``) starts with ``/v1/`` goes to
``--llm-upstream URL`` + that path, on the proxy's own upstream connections
(:mod:`proxy.upstream_conn`): tag headers (``X-Finmcp-Run/Sample/Trial/Turn``) and the
``--llm-header`` credentials are added, ``Accept-Encoding`` is dropped (the door reads what it
forwards). The answer is forwarded as it arrives, piece by piece (an SSE stream event by event, no
buffering), except its last piece, which leaves once the exchange's row is committed
(:mod:`recordings.model_exchanges`). The row is opened when the request goes upstream and given the
answer so far every :data:`PROGRESS_EVERY` seconds, so a proxy killed mid-stream leaves the row with
what the agent had.

Failures: an unreachable upstream or one silent past ``--timeout`` gets a 502/504 with a JSON error
body the OpenAI and Anthropic SDKs show; an upstream's own 4xx/5xx is passed through; a stream cut
mid-way is logged ``cut`` and the agent gets what arrived (its connection is closed).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from finmcp.proxy.capture import wall_iso
from finmcp.proxy.http_exchange import ClientChannel
from finmcp.proxy.http_types import Request
from finmcp.proxy.model_answers import Summary, api_of, request_facts, summarize
from finmcp.proxy.ordered_output import OrderedOutput
from finmcp.proxy.tags import Tags
from finmcp.proxy.upstream_conn import ConnectionPool, UpstreamConnection
from finmcp.proxy.upstream_http import Response, Target, UpstreamError, build_request
from finmcp.proxy.writer import TraceWriter
from finmcp.recordings.model_exchanges import ExchangeRow, Slot, close_exchange, open_exchange, progress
from finmcp.recordings.redact import redact_headers, redact_text
from finmcp.recordings.results import dumps

log = logging.getLogger("finmcp.proxy.model")

PROGRESS_EVERY = 0.25
"""Seconds between stores of a streamed answer received so far (what a SIGKILL would leave)."""
PROGRESS_MAX = 1024 * 1024
"""Bytes of a streamed answer past which the answer so far is no longer re-stored (each store writes
it whole; the finished row has it all): a long stream costs no quadratic work."""
_DROPPED = frozenset({b"accept-encoding"})


def is_model_path(rest: str) -> bool:
    """True for a path (after the tags) that the model door serves: ``/v1/...``."""
    return rest.startswith("/v1/")


def door_refusal(method: bytes, rest: str) -> str | None:
    """Why the door does not forward this request (None: it does): POST to the model APIs, POST or GET
    elsewhere under ``/v1`` (``/v1/models``); nothing else is what a model client sends."""
    if method == b"POST":
        return None
    if method == b"GET" and api_of(rest) == "other":
        return None
    allowed = "POST" if api_of(rest) != "other" else "GET and POST"
    return (
        f"method {method.decode('latin-1')} not allowed on {rest[:200]!r} (the model door forwards {allowed})"
    )


def error_body(status: int, message: str, kind: str = "upstream_error") -> bytes:
    """A whole response with a JSON error both SDKs show (OpenAI reads ``error.message``, Anthropic too)."""
    body = json.dumps(
        {"type": "error", "error": {"type": kind, "message": f"finmcp-proxy: {message}"}}
    ).encode()
    reason = {404: b"Not Found", 405: b"Method Not Allowed", 502: b"Bad Gateway", 504: b"Gateway Timeout"}
    return b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (
        status,
        reason.get(status, b"Error"),
        len(body),
        body,
    )


NO_DOOR = (
    "the model door is closed: start finmcp-proxy with --llm-upstream URL to forward /v1/... model requests"
)


@dataclass(slots=True)
class ModelDoor:
    """The door's settings: the model upstream, its connections, headers added, limits."""

    target: Target
    writer: TraceWriter
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)  # --llm-header
    timeout: float = 120.0
    max_answer: int = 16 * 1024 * 1024
    pool: ConnectionPool = field(init=False)
    base: str = field(init=False)
    exchanges: int = 0

    def __post_init__(self) -> None:
        self.pool = ConnectionPool(self.target)
        self.base = self.target.path.partition("?")[0].rstrip("/")

    def close(self) -> None:
        self.pool.close()


def door_exchange(
    conn: ClientChannel, request: Request, tags: Tags, rest: str, query: str
) -> ModelExchange | None:
    """The exchange for a ``/v1/...`` request (not started), or None once the request is answered with
    an error: no ``--llm-upstream`` (404 naming it), a method no model client sends (405)."""
    door: ModelDoor | None = conn.settings.model_door
    method = request.method.decode("latin-1")
    if door is None:
        log.warning("refused %s %r: no --llm-upstream", method, rest[:200])
        conn.write(error_body(404, NO_DOOR, "not_found"))
        return None
    refused = door_refusal(request.method, rest)
    if refused is not None:
        log.warning("refused %s %r: %s", method, rest[:200], refused)
        conn.write(error_body(405, refused, "method_not_allowed"))
        return None
    return ModelExchange(conn, door, request, tags, rest, query)


class ModelExchange:
    """One model request and its answer (the client connection's current exchange)."""

    def __init__(
        self, conn: ClientChannel, door: ModelDoor, request: Request, tags: Tags, rest: str, query: str
    ) -> None:
        self.conn = conn
        self.door = door
        self.request = request
        self.tags = tags
        self.api = api_of(rest)
        self.upstream: UpstreamConnection | None = None
        self.response: Response | None = None
        self.output = OrderedOutput(conn.write, self._wake)
        self.copy = bytearray()
        self.overflow = 0  # answer bytes past --max-answer (not kept)
        self.received = 0  # body bytes of a Content-Length answer so far
        self.last = b""  # the answer's last piece, held until the row is committed
        self.over = False  # the answer is over: waiting for the output to drain
        self.done = False
        self.keep = True
        self.resent = False
        self.timer: asyncio.TimerHandle | None = None
        self.deadline = 0.0
        self.first_ns = 0
        self.next_progress = 0.0
        self.slot = Slot()
        parsed, model, stream = request_facts(request.body)
        self.parsed = parsed
        path = rest + ("?" + query if query else "")
        self.target = door.target.resolve(door.base + path)
        self.row = ExchangeRow(
            tags.run,
            tags.sample,
            tags.trial if tags.sample is not None or tags.run is not None else None,
            tags.turn,
            self.api,
            request.method.decode("latin-1"),
            path,
            conn.arrived_ns,
            wall_iso(),
            model=model,
            stream=stream,
            request=redact_text(request.body.decode("utf-8", errors="replace")) if request.body else None,
            request_headers=dumps(redact_headers(request.raw_headers)),
        )

    # ---------------------------------------------------------------- start

    def start(self) -> None:
        """Open the row, send the request (on a pooled connection or a new one)."""
        self.door.exchanges += 1
        self.door.writer.submit(open_exchange(self.row, self.slot))
        added = {name.lower() for name, _ in self.door.headers}
        headers = [
            p for p in self.request.forward if p[0].lower() not in added and p[0].lower() not in _DROPPED
        ]
        tags = self.tags
        for name, value in (
            (b"x-finmcp-run", tags.run),
            (b"x-finmcp-sample", tags.sample),
            (b"x-finmcp-trial", None if self.row.trial is None else str(tags.trial)),
            (b"x-finmcp-turn", None if tags.turn is None else str(tags.turn)),
        ):
            if value is not None:
                headers.append((name, value.encode("utf-8")))
        self.head = build_request(
            self.request.method, self.target, headers + self.door.headers, self.request.body
        )
        loop = asyncio.get_running_loop()
        self.deadline = loop.time() + self.door.timeout
        self.timer = loop.call_at(self.deadline, self._on_timer)
        upstream = self.door.pool.take_idle()
        if upstream is not None:
            self._send(upstream)
        else:
            self.connecting: asyncio.Task[None] = loop.create_task(self._connect())

    async def _connect(self) -> None:
        try:
            upstream = await self.door.pool.connect()
        except UpstreamError as exc:
            self._guard(self._failed, str(exc), 502)
            self._guard(self._flush)
            return
        if self.over or self.done:
            upstream.close()
            return
        self._guard(self._send, upstream)

    def _send(self, upstream: UpstreamConnection) -> None:
        self.upstream = upstream
        upstream.send(self.head, self.request.body, self.request.method, self)
        if self.conn.paused:
            upstream.pause()

    # ---------------------------------------------------------------- ResponseSink

    def on_head(self, response: Response) -> None:
        self._guard(self._head, response)

    def on_body(self, raw: bytes, payload: bytes) -> None:
        self._guard(self._body, raw, payload)

    def on_end(self, raw: bytes) -> None:
        self._guard(self._end, raw)

    def on_failure(self, error: UpstreamError, silent: bool) -> None:
        if silent and not self.resent and self.response is None:  # a pooled connection died unused
            self.resent = True
            self.upstream = None
            self.connecting = asyncio.get_running_loop().create_task(self._connect())
            return
        self._guard(self._failed, str(error), 502)

    def on_batch_end(self) -> None:
        self._guard(self._flush)

    def _head(self, response: Response) -> None:
        self.response = response
        self.row.http_status = response.status
        self._touch()
        self.output.emit(response.head)

    def _body(self, raw: bytes, payload: bytes) -> None:
        self._touch()
        if not self.first_ns:
            self.first_ns = time.monotonic_ns()
            self.row.ttft_ms = (self.first_ns - self.row.t_req_ns) / 1e6
        room = self.door.max_answer - len(self.copy)
        if len(payload) <= room:
            self.copy += payload
        else:
            self.copy += payload[: max(room, 0)]
            self.overflow += len(payload) - max(room, 0)
        response = self.response
        if response is not None and response.body_mode == "length":
            self.received += len(payload)
            if self.received >= response.length:  # the last piece: after the commit
                self.last = raw
                return
        self.output.emit(raw)
        now = time.monotonic()
        if self.row.stream and now >= self.next_progress and len(self.copy) <= PROGRESS_MAX:
            self.next_progress = now + PROGRESS_EVERY
            text = self.copy.decode("utf-8", errors="replace")
            self.door.writer.submit(progress(self.slot, redact_text(text), self.row.ttft_ms), defer=True)

    def _end(self, raw: bytes) -> None:
        response = self.response
        assert response is not None
        self._stop_timer()
        if self.upstream is not None:
            self.door.pool.release(self.upstream, response.keep_alive)
            self.upstream = None
        status = "ok" if response.status < 400 else "http_error"
        self._commit(status, None, True)
        self.output.emit(self.last + raw)
        self.last = b""
        self.keep = response.keep_alive
        self.over = True

    def _commit(self, status: str, error: str | None, complete: bool) -> None:
        """Fill the row from what arrived and submit it; bytes emitted after this wait for its commit."""
        row = self.row
        row.status = status
        row.duration_ms = (time.monotonic_ns() - row.t_req_ns) / 1e6
        response = self.response
        stream = response is not None and response.content_type.startswith(b"text/event-stream")
        summary = (
            summarize(self.api, bytes(self.copy), stream, complete) if response is not None else Summary()
        )
        if response is not None and response.status >= 400:
            summary.usage_note = summary.usage_note or f"HTTP {response.status} answer"
        if summary.answer is not None:
            row.answer = redact_text(dumps(summary.answer))
        elif self.copy:
            row.answer = redact_text(summary.raw or self.copy.decode("utf-8", errors="replace"))
        row.model = summary.model or row.model
        row.input_tokens, row.output_tokens = summary.input_tokens, summary.output_tokens
        row.cached_tokens = summary.cached_tokens
        row.usage_note = summary.usage_note if response is not None else "no answer from the upstream"
        row.finish_reason = summary.finish_reason
        row.tool_calls = dumps(summary.tool_calls) if summary.tool_calls else None
        row.final_text = summary.text if status == "ok" else None
        notes = [n for n in (error, summary.error) if n]
        if self.overflow:
            notes.append(
                f"answer over --max-answer: stored its first {len(self.copy)} bytes of {len(self.copy) + self.overflow}"
            )
        row.error = "; ".join(notes) or None
        future = self.door.writer.submit(close_exchange(row, self.slot), wait=True)
        if future is not None:
            self.output.after([future])

    # ---------------------------------------------------------------- failures

    def _failed(self, reason: str, status: int) -> None:
        if self.over or self.done:
            return
        self._stop_timer()
        if self.upstream is not None:
            self.upstream.close()
            self.upstream = None
        log.warning("model door %s %s: %s", self.request.method.decode(), self.target.url, reason)
        if self.response is None:  # nothing went out: the proxy answers
            self._commit("upstream_error", reason, False)
            self.output.emit(error_body(status, reason))
            self.keep = True
        else:  # cut mid-answer: the agent keeps what arrived, and its connection closes
            self._commit("cut", reason, False)
            self.output.emit(self.last)
            self.last = b""
            self.keep = False
        self.over = True

    def _on_timer(self) -> None:
        self.timer = None
        if self.over or self.done:
            return
        loop = asyncio.get_running_loop()
        if loop.time() < self.deadline:
            self.timer = loop.call_at(self.deadline, self._on_timer)
            return
        self._guard(
            self._failed, f"upstream {self.door.target.url} sent nothing for {self.door.timeout} s", 504
        )
        self._guard(self._flush)

    def _touch(self) -> None:
        self.deadline = asyncio.get_running_loop().time() + self.door.timeout

    def _stop_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def abort(self) -> None:
        """The agent went away: the upstream request is abandoned, the row says ``cancelled``."""
        if self.done:
            return
        self.done = True
        self._stop_timer()
        if self.upstream is not None:
            self.upstream.close()
            self.upstream = None
        if not self.over:
            self._commit("cancelled", "the agent closed its connection before the answer ended", False)

    def _guard(self, step: Any, *args: Any) -> None:
        """Run one step; a bug costs this request (502 or a closed connection), never the listener."""
        if self.done:
            return
        try:
            step(*args)
        except Exception as exc:
            log.exception("model door failed on %s %s", self.request.method, self.request.target)
            self.done = True
            self._stop_timer()
            if self.upstream is not None:
                self.upstream.close()
                self.upstream = None
            self.conn.internal_error(self, exc, self.response is not None)  # type: ignore[arg-type]

    # ---------------------------------------------------------------- output

    def _wake(self) -> None:
        self._guard(self._flush)

    def _flush(self) -> None:
        drained = self.output.flush()
        if drained and self.over and not self.done:
            self.done = True
            self.conn.exchange_done(self, self.keep)  # type: ignore[arg-type]
