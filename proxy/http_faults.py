"""The HTTP side of ``--fault-schedule``: an :class:`~proxy.http_exchange.Exchange` that may fault its call.

Used only when the proxy serves a schedule (:class:`proxy.http_proxy.ProxyServer` picks the exchange
type once); without one the proxy's path is the plain :class:`Exchange`. A POST whose body is one
``tools/call`` request is placed and decided (:class:`proxy.fault_injection.ProxyFaults`):

* a replacing fault (``rpc_error``, ``is_error``, ``timeout``, ``rate_limit``) is answered by the proxy
  (``200``, ``application/json``, the request's id) after ``timeout_ms`` for a timeout, else at once;
  nothing is sent upstream. The call is traced as any call: its request, its row finished with the
  faulted answer, the answer's message row (with ``_meta["io.finmcp/fault"]``).
* an altering fault (``truncated``, ``empty``, ``wrong_values``) forwards the call and changes the
  upstream's answer: a JSON body is rewritten whole (``Content-Length`` set anew; a chunked body
  stays chunked); an SSE body is re-encoded event by event (``event``, ``id``, ``retry`` and data
  kept, comments dropped), the event carrying the answer changed. The upstream's answer as received
  is kept in a note row (``finmcp/fault_original``) before the faulted one is logged.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from finmcp.proxy.fault_injection import ProxyFaults, tools_call
from finmcp.proxy.http_exchange import Exchange
from finmcp.proxy.http_wire import chunk, header_lines
from finmcp.proxy.jsonrpc import Message, parse_body
from finmcp.proxy.upstream_http import Response
from finmcp.recordings.fault_schedule import Fault
from finmcp.recordings.plumbing.sse import Event, EventTooLarge, SSEParser

log = logging.getLogger("finmcp.proxy.faults")


class FaultExchange(Exchange):
    """An exchange whose ``tools/call`` the proxy's fault schedule may answer or alter."""

    faults: ProxyFaults
    alter: tuple[Fault, Message] | None = None  # an altering fault and its call, until the answer is changed
    reframe = False  # this SSE response is re-encoded event by event (it may carry the altered answer)

    def start(self) -> None:
        faults = self.settings.faults
        assert isinstance(faults, ProxyFaults)
        self.faults = faults
        call = tools_call(parse_body(self.request.body)) if self.request.body else None
        fault = faults.decide(call, self.tags) if call is not None else None
        if fault is None or call is None:
            super().start()
            return
        if not faults.replaces(fault):
            self.alter = (fault, call)
            super().start()
            return
        self._trace_request()
        if self.session is None:  # no session named by the request: keyed as the upstream's silence is
            self._adopt_session(None)
        body = faults.replacing_body(fault, call, self.session.protocol_version if self.session else None)
        delay = fault.timeout_ms / 1000 if fault.kind == "timeout" else 0.0
        # never answered inside start(): the client connection sets its exchange before and after it
        asyncio.get_running_loop().call_later(delay, self._guarded, self._answer, body)

    def _answer(self, body: bytes) -> None:
        """Answer the faulted call (a JSON body), once its row is committed; the exchange is then over."""
        if self.over:  # the client left meanwhile (abort) or the exchange ended otherwise
            return
        waits = []
        for msg in parse_body(body):
            future = self.tracer.server_message(self.session, self.tags, msg, "tools/call")  # type: ignore[arg-type]
            if future is not None:
                waits.append(future)
        head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n" % len(body)
        self.output.after(waits)
        self.output.emit(head + header_lines(self.cors) + b"\r\n" + body)
        self._finish(True)
        self._flush()

    # ---------------------------------------------------------------- altering: JSON bodies

    def _parse_whole(self, body: bytes, response: Response) -> list[asyncio.Future[Any]]:
        alter = self.alter
        if alter is None or not self.held:
            return super()._parse_whole(body, response)
        changed = self._changed(alter, body)
        if changed is None:
            return super()._parse_whole(body, response)
        head = self.held[0]
        if response.body_mode == "chunked":
            self.held = [head, chunk(changed)]  # the upstream's last chunk follows (Exchange._end)
        else:
            self.held = [_with_length(head, len(changed)), changed]
        return super()._parse_whole(changed, response)

    def _changed(self, alter: tuple[Fault, Message], body: bytes) -> bytes | None:
        """``body`` with the faulted call's answer altered (the original kept in a note row), or None."""
        fault, call = alter
        answer = ProxyFaults.single(body)
        if answer is None or answer.id_text != call.id_text:
            return None
        changed = self.faults.altered_body(fault, answer)
        self.alter = None
        if changed is None:
            log.info(
                "call %s: the upstream answered with an error; %s fault not applied", call.id_text, fault.kind
            )
            return None
        pending = self.calls.get(call.id_text or "null")
        tags = pending.tags if pending is not None else self.tags
        tool = str(call.params.get("name"))
        self.tracer.log(self.session, tags, "s2c", self.faults.original_note(fault, tool, answer))
        return changed

    # ---------------------------------------------------------------- altering: SSE bodies

    def _head(self, response: Response) -> None:
        super()._head(response)
        self.reframe = self.alter is not None and self.sse_parser is not None

    def _sse_body(self, parser: SSEParser, raw: bytes, payload: bytes) -> None:
        if not self.reframe:
            super()._sse_body(parser, raw, payload)
            return
        too_large: EventTooLarge | None = None
        try:
            events = parser.feed(payload)
        except EventTooLarge as exc:
            events, too_large = exc.events, exc
        limit = self.settings.max_stream_messages
        if self.methods and events:
            count = self.sse_messages + sum(1 for event in events if event.data)
            if count > limit:
                self._sse_limit(
                    f"upstream sent more than {limit} messages on this request's stream (--max-stream-messages)"
                )
                return
            self.sse_messages = count
        events = [self._changed_event(event) for event in events]
        self.output.after(self._sse_events(events))
        data = b"".join(_encode(event) for event in events)
        if data:
            self._emit_sse(self._framed(data))
        if too_large is not None:
            self._sse_limit(f"upstream sent an SSE event over {too_large.limit} bytes (--max-event-bytes)")

    def _changed_event(self, event: Event) -> Event:
        alter = self.alter
        if alter is None or not event.data:
            return event
        changed = self._changed(alter, event.data)
        return event if changed is None else event._replace(data=changed)


def _with_length(head: bytes, length: int) -> bytes:
    """A response head with its ``Content-Length`` set to ``length`` (every other line kept)."""
    lines = head[:-4].split(b"\r\n")
    kept = [line for line in lines if not line.lower().startswith(b"content-length:")]
    return b"\r\n".join(kept) + b"\r\ncontent-length: %d\r\n\r\n" % length


def _encode(event: Event) -> bytes:
    """One parsed SSE event written again (``id``, ``retry``, ``event`` and its data lines)."""
    out = b""
    if event.id is not None:
        out += b"id: " + event.id.encode() + b"\r\n"
    if event.retry is not None:
        out += b"retry: %d\r\n" % event.retry
    out += b"event: " + event.event.encode() + b"\r\n"
    for line in event.data.split(b"\n") if event.data else []:
        out += b"data: " + line + b"\r\n"
    return out + b"\r\n"
