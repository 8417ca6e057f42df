"""The stdio side: the host launches ``finmcp-proxy --transport stdio``; messages are pumped as raw lines.

Each line from stdin is one JSON-RPC message; it is logged and passed unchanged to the upstream
(see :mod:`proxy.upstreams`). A line that is not one (not UTF-8 JSON, or not a JSON-RPC message) is
answered by the proxy and not forwarded (:mod:`proxy.stdio_refusals`). Every message from the
upstream is written to stdout as one line; the response to a ``tools/call`` only after its row is
committed. When the upstream fails, every request still waiting gets a JSON-RPC error (``-32000``)
saying why instead of silence.

Exit codes: 0 when stdin closed (or a signal stopped the proxy); 1 when the upstream went away
first; 2 when the upstream could not be started (one line on stderr, before any ready line).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
import threading
import time
from typing import Any

from finmcp.proxy.capture import PendingCall, Session, Tracer
from finmcp.proxy.jsonrpc import Message, error_message, parse_body
from finmcp.proxy.stdio_refusals import refusal
from finmcp.proxy.tags import Tags
from finmcp.proxy.upstreams import Upstream, make_upstream
from finmcp.recordings.plumbing import eventloop
from finmcp.recordings.plumbing.launch import announce_ready
from finmcp.recordings.results import utf8

log = logging.getLogger("finmcp.proxy.stdio")
LINE_LIMIT = 256 * 1024 * 1024


class StdioPump:
    """Moves messages between the host (stdin/stdout) and one upstream, logging both ways."""

    def __init__(self, tracer: Tracer, tags: Tags, write_line: Any) -> None:
        self.tracer = tracer
        self.tags = tags
        self.write_line = write_line
        self.session: Session = tracer.session(f"stdio:{os.getpid()}:{time.time_ns()}", "stdio", tags)
        self.outstanding: dict[str, tuple[Any, str]] = {}  # id text -> (id, method) of client requests
        self.upstream: Upstream | None = None
        self._order = asyncio.Lock()

    async def from_client(self, raw: bytes) -> None:
        """One line from the host: log it, remember requests, pass it on unchanged."""
        arrived = time.monotonic_ns()
        messages = parse_body(raw)
        if await self.refuse(raw, messages):
            return
        for msg in messages:  # logged before it leaves: an HTTP upstream answers inside send()
            self.tracer.client_message(self.session, self.tags, msg, None, arrived)
            if msg.kind == "request":
                self.outstanding[msg.id_text or "null"] = (msg.id, msg.method or "")
        assert self.upstream is not None
        try:
            await self.upstream.send(raw, messages[0] if len(messages) == 1 else None)
        except Exception as exc:  # the upstream is gone: answer instead of hanging
            for msg in messages:
                if msg.kind == "request":
                    await self.fail_request(msg.id_text or "null", f"upstream unavailable: {exc}")

    async def from_upstream(self, raw: bytes) -> None:
        """One message from the upstream: log it (wait for a call's row), then write it to stdout."""
        async with self._order:  # keep the upstream's order (progress before its response)
            waits = []
            answered: list[PendingCall] = []
            messages = parse_body(raw)
            for msg in messages:
                method = None
                if msg.kind in ("response", "error"):
                    entry = self.outstanding.pop(msg.id_text or "null", None)
                    method = entry[1] if entry else None
                    call = self.tracer.pending.get((self.session.key, msg.id_text or "null"))
                    if call is not None:
                        answered.append(call)
                future = self.tracer.server_message(self.session, self.tags, msg, method)
                if future is not None:
                    waits.append(future)
            for future in waits:
                with contextlib.suppress(Exception):
                    await future
            first = messages[0]
            if first.kind == "invalid" and first.obj is None and not _is_json(raw):
                # logged above as an invalid message; stdout carries only JSON, and the request it
                # should have answered gets a proxy error when its upstream response ends
                log.warning("upstream sent a message that is not JSON (not forwarded): %r", raw[:200])
                return
            self.write_line(raw if b"\n" not in raw else _one_line(raw))
            if answered:  # the host has these answers: its next call comes after them
                self.tracer.delivered(answered)

    async def refuse(self, raw: bytes, messages: list[Message]) -> bool:
        """Answer a line that is not a JSON-RPC message (not forwarded); False when it is one.

        The trace has the line as one ``invalid`` message row (its bytes escaped) and the answer.
        """
        answer = refusal(raw, messages)
        if answer is None:
            return False
        line = messages[0] if len(messages) == 1 else Message(raw, None, "invalid")
        self.tracer.log(self.session, self.tags, "c2s", Message(raw, None, "invalid", line.id))
        async with self._order:
            for msg in parse_body(answer):
                self.tracer.log(self.session, self.tags, "s2c", msg)
            self.write_line(answer)
        log.info("answered a stdin line that is not a JSON-RPC message: %r", raw[:200])
        return True

    async def fail_request(self, id_text: str, reason: str) -> None:
        """Answer one outstanding request with a proxy error (and log the failure)."""
        entry = self.outstanding.get(id_text)
        if entry is None:
            return
        calls = self.tracer.pending_for(self.session.key, [id_text])
        for call in calls:
            future = self.tracer.fail(
                call, "transport_error", reason
            )  # the call failed: not an upstream error
            if future is not None:
                with contextlib.suppress(Exception):
                    await future
        await self.from_upstream(error_message(entry[0], f"finmcp-proxy: {reason}"))
        self.tracer.delivered(calls)

    async def fail_all(self, reason: str) -> None:
        """Answer every outstanding request (the upstream died or the proxy is stopping)."""
        for id_text in list(self.outstanding):
            await self.fail_request(id_text, reason)


def _is_json(raw: bytes) -> bool:
    """Whether ``raw`` is JSON (only asked for bodies that did not parse as a JSON-RPC message)."""
    try:
        json.loads(raw)
    except RecursionError:  # too deep to check: let it through, as before
        return True
    except (ValueError, UnicodeDecodeError):
        return False
    return True


def _one_line(raw: bytes) -> bytes:
    """A message that spans lines (pretty JSON) as one line: stdio framing is one message per line."""
    try:
        return utf8(json.dumps(json.loads(raw), ensure_ascii=False, separators=(",", ":")))
    except ValueError:
        return raw.replace(b"\r", b" ").replace(b"\n", b" ")


async def _stdin_lines(limit: int = LINE_LIMIT) -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    except (ValueError, OSError):  # not a pipe (a file or a terminal): read on a thread

        def pump() -> None:
            for line in sys.stdin.buffer:
                loop.call_soon_threadsafe(reader.feed_data, line)
            loop.call_soon_threadsafe(reader.feed_eof)

        threading.Thread(target=pump, daemon=True).start()
    return reader


async def run_stdio(runtime: Any, stop: asyncio.Event, pump_type: Any = None) -> int:
    """Pump stdin/stdout to the configured upstream until stdin closes or ``stop`` is set; the exit code.

    ``pump_type``: builds the pump from (tracer, tags, write_line) (``--fault-schedule``:
    :func:`proxy.stdio_faults.fault_pump`); default :class:`StdioPump`."""
    config = runtime.config
    runtime.writer.bind(asyncio.get_running_loop())
    out = sys.stdout.buffer

    def write_line(data: bytes) -> None:
        out.write(data + b"\n")
        out.flush()

    pump = (pump_type or StdioPump)(runtime.tracer, config.defaults, write_line)
    upstream_closed = asyncio.Event()
    closing = False
    gone: list[str] = []  # why the upstream went away before stdin closed
    ready = False

    async def on_closed(reason: str) -> None:
        if not closing:
            gone.append(reason)
        if not ready:  # the start-up failure's one line says it
            upstream_closed.set()
            return
        (log.info if closing else log.warning)("upstream closed: %s", reason)
        await pump.fail_all(reason)
        upstream_closed.set()

    pump.upstream = make_upstream(config, pump.from_upstream, on_closed, pump.fail_request)
    try:  # before the ready line: an upstream that cannot start is one line on stderr and exit code 2
        await pump.upstream.start()
    except Exception as exc:
        why = f" ({gone[0]})" if gone else ""
        print(f"finmcp-proxy: the upstream could not be started: {exc}{why}", file=sys.stderr)
        runtime.tracer.end_session(pump.session.key)
        return 2
    ready = True
    runtime.start_shipping("stdio")
    announce_ready(
        "finmcp-proxy",
        "stdio",
        f"upstream {config.upstream_label}, db {config.db}, loop {eventloop.loop_name()}",
    )
    reader = await _stdin_lines()
    stopper = asyncio.ensure_future(stop.wait())
    try:
        while True:
            line_task = asyncio.ensure_future(reader.readline())
            done, _ = await asyncio.wait({line_task, stopper}, return_when=asyncio.FIRST_COMPLETED)
            if stopper in done:
                line_task.cancel()
                break
            try:
                line = line_task.result()
            except (asyncio.LimitOverrunError, ValueError) as exc:
                log.error("stdin line too long: %s", exc)
                continue
            if not line:
                break
            line = line.rstrip(b"\r\n")
            if not line.strip():
                continue
            if upstream_closed.is_set():
                messages = parse_body(line)
                if await pump.refuse(line, messages):
                    continue
                for msg in messages:
                    pump.tracer.client_message(pump.session, pump.tags, msg)
                    if msg.kind == "request":
                        pump.outstanding[msg.id_text or "null"] = (msg.id, msg.method or "")
                await pump.fail_all(f"upstream is not running ({gone[0] if gone else 'it went away'})")
                continue
            await pump.from_client(line)
    finally:
        closing = True
        stopper.cancel()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(pump.upstream.close(), 5)
        await pump.fail_all("the proxy is shutting down")
        for call in list(runtime.tracer.pending.values()):
            runtime.tracer.fail(call, "transport_error", "the proxy stopped before the response")
        runtime.tracer.end_session(pump.session.key)
    if gone:
        print(f"finmcp-proxy: exiting with code 1: {gone[0]}", file=sys.stderr)
        return 1
    return 0
