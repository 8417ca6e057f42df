"""Upstreams for the stdio side: a child process (stdio), Streamable HTTP, or legacy HTTP+SSE.

Each takes raw message lines and delivers the upstream's messages as raw bytes to ``deliver``;
``closed(reason)`` is called when the upstream goes away and ``fail(id_text, reason)`` when one
request cannot be delivered. Nothing in a message is changed. The HTTP upstream adds what the
transport needs around the body: ``Accept``, ``Content-Type``, ``Mcp-Session-Id`` (learned from
the ``initialize`` response), ``MCP-Protocol-Version`` (negotiated, or the request's own ``_meta``
version in the stateless era), and in the stateless era ``Mcp-Method`` / ``Mcp-Name``. A stateless-era
``notifications/cancelled`` is not posted (that era has no client notifications over HTTP): the
request's own connection is closed instead, which is how that era cancels.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shlex
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn

from mcp.shared.inbound import NAME_BEARING_METHODS, encode_header_value

from finmcp.proxy.answer_overflow import too_large
from finmcp.proxy.defaults import DEFAULT_MAX_ANSWER, DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_STREAM_MESSAGES
from finmcp.proxy.jsonrpc import PROTOCOL_VERSION_META, Message, error_message, safe_to_repeat
from finmcp.proxy.upstream_conn import ConnectionPool, StreamedResponse
from finmcp.proxy.upstream_http import Response, Target, UpstreamError, build_request
from finmcp.proxy.upstream_tls import client_context
from finmcp.recordings.plumbing.protocol import is_stateless
from finmcp.recordings.plumbing.sse import Event, EventTooLarge, SSEParser
from finmcp.recordings.results import utf8

log = logging.getLogger("finmcp.proxy.upstream")
STDERR_KEEP = 500
"""Characters of a stdio upstream's last stderr line kept for the reason its requests are answered with."""
STDERR_LINE_MAX = 1024 * 1024
"""Bytes of a stdio upstream's stderr relayed as one line at most (a longer line is relayed in pieces)."""

Deliver = Callable[[bytes], Awaitable[None]]
Closed = Callable[[str], Awaitable[None]]
Fail = Callable[[str, str], Awaitable[None]]


def _safe(msg: Message | None) -> bool:
    """Whether a posted message may be sent again after its connection failed unanswered (a batch: no)."""
    return msg is not None and safe_to_repeat([msg])


class Upstream:
    """Interface of an upstream for the stdio side."""

    async def start(self) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    async def send(self, raw: bytes, msg: Message | None) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    async def close(self) -> None:  # pragma: no cover - interface
        raise NotImplementedError


def make_upstream(config: Any, deliver: Deliver, closed: Closed, fail: Fail) -> Upstream:
    """The upstream named by the command line."""
    headers = list(config.upstream_headers)
    if config.upstream_cmd:
        return StdioUpstream(config.upstream_cmd, deliver, closed)
    tls = client_context(config.upstream_ca)
    if config.upstream_sse:
        target = Target.parse(config.upstream_sse, tls)
        upstream: _HttpBase = SseUpstream(target, deliver, closed, fail, headers, config.timeout)
    else:
        upstream = HttpUpstream(
            Target.parse(config.upstream, tls), deliver, closed, fail, headers, config.timeout
        )
    upstream.max_event_bytes = config.max_event_bytes
    upstream.max_stream_messages = config.max_stream_messages
    upstream.max_answer = config.limits.max_answer
    return upstream


class StdioUpstream(Upstream):
    """A child process speaking newline-delimited JSON-RPC; its stderr goes on to the proxy's stderr.

    Its last stderr line is kept: when it exits, the reason every waiting request gets names its exit
    status and that line (``upstream process exited with code 3; its last stderr line: ...``).
    """

    def __init__(self, command: str, deliver: Deliver, closed: Closed) -> None:
        self.command = command
        self.argv = shlex.split(command)
        if not self.argv:
            raise ValueError("--upstream-cmd is empty")
        self.deliver = deliver
        self.closed = closed
        self.process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self._stderr: threading.Thread | None = None
        self.last_stderr = ""

    async def start(self) -> None:
        """Launch the command; an :class:`UpstreamError` naming it and the reason when it cannot run."""
        read_end, write_end = os.pipe()
        try:
            self.process = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=write_end,
                limit=256 * 1024 * 1024,
            )
        except OSError as exc:
            os.close(read_end)
            reason = exc.strerror or str(exc)
            raise UpstreamError(
                f"--upstream-cmd {self.command!r}: cannot run {self.argv[0]!r}: {reason}"
            ) from None
        finally:
            os.close(write_end)  # the child holds its copy; EOF comes when the child's is closed
        self._stderr = threading.Thread(
            target=self._relay_stderr, args=(read_end,), name="upstream-stderr", daemon=True
        )
        self._stderr.start()
        self._reader = asyncio.ensure_future(self._read())

    def _relay_stderr(self, fd: int) -> None:
        """Copy the child's stderr to ours, line by line, remembering the last non-blank line.

        A thread of its own, with blocking writes: a host that never reads the proxy's stderr then
        stalls this thread and the child, as it would stall the child without the proxy, and never
        the proxy's event loop.
        """
        with open(fd, "rb") as pipe:
            while line := pipe.readline(STDERR_LINE_MAX):
                text = line.decode("utf-8", errors="backslashreplace")
                with contextlib.suppress(OSError, ValueError):  # sys.stderr as it is now (a test may swap it)
                    sys.stderr.write(text if text.endswith("\n") else text + "\n")
                    sys.stderr.flush()
                text = text.strip()
                if text:
                    self.last_stderr = text[:STDERR_KEEP]

    async def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        stdout = self.process.stdout
        while True:
            try:
                line = await stdout.readline()
            except (ValueError, asyncio.LimitOverrunError) as exc:
                log.error("upstream line too long: %s", exc)
                continue
            if not line:
                break
            line = line.rstrip(b"\r\n")
            if line.strip():
                await self.deliver(line)
        code = await self.process.wait()
        if self._stderr is not None:  # its last lines, written just before it exited
            await asyncio.to_thread(self._stderr.join, 2)
        await self.closed(self.exit_reason(code))

    def exit_reason(self, code: int) -> str:
        """Why the child is gone, for the answers and the log: its exit status and last stderr line."""
        status = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
        last = f"; its last stderr line: {self.last_stderr}" if self.last_stderr else ""
        return f"upstream process {status}{last}"

    async def send(self, raw: bytes, msg: Message | None) -> None:
        process = self.process
        if process is None or process.stdin is None or process.returncode is not None:
            raise UpstreamError("upstream process is not running")
        try:
            process.stdin.write(raw + b"\n")
            await process.stdin.drain()
        except (ConnectionError, OSError) as exc:
            raise UpstreamError(f"upstream process stdin closed: {exc!r}") from None

    async def close(self) -> None:
        process = self.process
        if process is None or process.returncode is not None:
            return
        if process.stdin is not None:
            with contextlib.suppress(Exception):
                process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), 3)
        except TimeoutError:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 3)
            except TimeoutError:
                process.kill()
        if self._reader is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._reader, 3)
        if self._stderr is not None:
            await asyncio.to_thread(self._stderr.join, 3)


class _HttpBase(Upstream):
    def __init__(
        self,
        target: Target,
        deliver: Deliver,
        closed: Closed,
        fail: Fail,
        headers: list[tuple[bytes, bytes]],
        timeout: float,
    ) -> None:
        self.target = target
        self.pool = ConnectionPool(target)
        self.deliver = deliver
        self.closed = closed
        self.fail = fail
        self.extra_headers = headers
        self.timeout = timeout
        self.max_event_bytes = DEFAULT_MAX_EVENT_BYTES  # --max-event-bytes
        self.max_stream_messages = DEFAULT_MAX_STREAM_MESSAGES  # --max-stream-messages (a request's stream)
        self.max_answer = DEFAULT_MAX_ANSWER  # --max-answer (a JSON answer, held whole)
        self.tasks: set[asyncio.Task[Any]] = set()

    def _spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    async def _get(self, head: bytes) -> tuple[StreamedResponse, Response]:
        """Open a GET stream on a fresh connection (the caller closes it)."""
        stream = StreamedResponse(await self.pool.connect())
        return stream, await stream.request(head, b"", b"GET")

    async def _stream_events(
        self, stream: StreamedResponse, idle: float | None, deliver: Deliver | None = None
    ) -> None:
        """Deliver every SSE ``message`` event of a response body.

        An event over ``max_event_bytes``, or (on a request's stream, ``deliver`` given) more than
        ``max_stream_messages`` messages, is an :class:`UpstreamError` (logged): the events before
        it are delivered, the request gets an error.
        """
        limit = self.max_stream_messages if deliver is not None else None
        deliver = deliver or self.deliver
        parser = SSEParser(max_event=self.max_event_bytes)
        count = 0
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(idle) as deadline:
            async for _raw, payload in stream.body():
                if idle is not None:
                    deadline.reschedule(loop.time() + idle)
                try:
                    events = parser.feed(payload)
                except EventTooLarge as exc:
                    await self._dispatch(exc.events, deliver)
                    reason = f"upstream sent an SSE event over {exc.limit} bytes (--max-event-bytes)"
                    log.warning("%s: %s; stream stopped", self.target.url, reason)
                    raise UpstreamError(reason) from None
                count += sum(1 for event in events if event.data)
                if limit is not None and count > limit:
                    reason = f"upstream sent more than {limit} messages on this request's stream (--max-stream-messages)"
                    log.warning("%s: %s; stream stopped", self.target.url, reason)
                    raise UpstreamError(reason)
                await self._dispatch(events, deliver)

    async def _dispatch(self, events: list[Event], deliver: Deliver) -> None:
        for event in events:
            if event.event == "message" and event.data:
                await deliver(event.data)
            elif event.event == "endpoint":
                await self.on_endpoint(event.data)

    async def on_endpoint(self, data: bytes) -> None:
        """Legacy SSE ``endpoint`` event (only the SSE upstream uses it)."""

    async def close(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        for task in list(self.tasks):
            with contextlib.suppress(BaseException):
                await task
        self.pool.close()


class HttpUpstream(_HttpBase):
    """Streamable HTTP, both eras."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.session_id: bytes | None = None
        self.version: str | None = None
        self.stateless = False
        self.in_flight: dict[str, asyncio.Task[Any]] = {}
        self.get_stream: asyncio.Task[Any] | None = None

    async def start(self) -> None:
        return None

    def _headers(self, msg: Message | None) -> list[tuple[bytes, bytes]]:
        headers = [
            (b"content-type", b"application/json"),
            (b"accept", b"application/json, text/event-stream"),
        ]
        version = self.version
        if msg is not None:
            meta_version = msg.meta.get(PROTOCOL_VERSION_META)
            if isinstance(meta_version, str):
                version = meta_version
                self.stateless = is_stateless(meta_version)
        if self.session_id:
            headers.append((b"mcp-session-id", self.session_id))
        if version and not (msg is not None and msg.method == "initialize"):
            headers.append((b"mcp-protocol-version", version.encode("latin-1")))
        if msg is not None and msg.method and is_stateless(version):
            headers.append((b"mcp-method", msg.method.encode("latin-1")))
            key = NAME_BEARING_METHODS.get(msg.method)
            name = msg.params.get(key) if key else None
            if isinstance(name, str):
                headers.append((b"mcp-name", encode_header_value(name).encode("latin-1")))
        return headers + self.extra_headers

    async def send(self, raw: bytes, msg: Message | None) -> None:
        if msg is not None and msg.kind == "notification" and msg.method == "notifications/cancelled":
            target_id = msg.params.get("requestId")
            task = self.in_flight.get(json.dumps(target_id, ensure_ascii=False))
            if self.stateless:  # the stateless era cancels by closing the request's stream
                if task is not None:
                    task.cancel()
                return
        if msg is not None and msg.kind == "request":
            id_text = msg.id_text or "null"
            task = self._spawn(self._post(raw, msg))
            self.in_flight[id_text] = task
            task.add_done_callback(
                lambda t: self.in_flight.pop(id_text, None) if self.in_flight.get(id_text) is t else None
            )
            return
        await self._post(raw, msg)
        if msg is not None and msg.method == "notifications/initialized" and self.session_id:
            self.get_stream = self._spawn(self._listen())

    async def _post(self, raw: bytes, msg: Message | None) -> None:
        is_request = msg is not None and msg.kind == "request"
        id_text = (msg.id_text or "null") if is_request and msg is not None else None
        head = build_request(b"POST", self.target, self._headers(msg), raw)
        stream = None
        try:
            async with asyncio.timeout(self.timeout):
                stream, response = await self.pool.send(head, raw, b"POST", _safe(msg))
            if msg is not None and msg.method == "initialize":
                sid = response.header(b"mcp-session-id")
                if sid:
                    self.session_id = sid
            if response.status == 202 or response.body_mode == "none":
                self.pool.release(stream.conn, response.keep_alive)
                stream = None
                if id_text is not None:
                    await self.fail(id_text, f"upstream answered HTTP {response.status} without a response")
                return
            deliver = self.deliver
            if msg is not None and msg.method == "initialize":

                async def deliver(body: bytes) -> None:
                    self._learn_version(body)
                    await self.deliver(body)

            if response.content_type.startswith(b"text/event-stream"):
                await self._stream_events(stream, self.timeout, deliver)
            else:
                body = await self._whole_answer(stream, response)
                if response.status >= 400 and id_text is not None:
                    await self._deliver_error(body, response.status, msg)
                elif body.strip():
                    await deliver(body)
            self.pool.release(stream.conn, response.keep_alive)
            stream = None
            if id_text is not None:  # a no-op when the body answered it; else the request gets an error
                await self.fail(id_text, "upstream response ended without an answer")
        except TimeoutError:
            if id_text is not None:
                await self.fail(id_text, f"upstream {self.target.url} did not answer within {self.timeout} s")
        except UpstreamError as exc:
            if id_text is not None:
                await self.fail(id_text, str(exc))
            else:
                log.warning("could not deliver a message upstream: %s", exc)
        finally:
            if stream is not None:
                stream.conn.close()

    async def _whole_answer(self, stream: StreamedResponse, response: Response) -> bytes:
        """A JSON answer's body, refused (an :class:`UpstreamError`, logged) past ``max_answer``.

        The stdio side writes each message as one line, so it holds an answer whole: past the limit it
        refuses any answer, a call's or not (the HTTP side streams those; docs/reliability.md).
        """
        limit = self.max_answer
        if response.body_mode == "length" and response.length > limit:
            self._refuse_answer(too_large(f"{response.length} bytes", limit))
        chunks, size = [], 0
        async with asyncio.timeout(self.timeout):
            async for _raw, payload in stream.body():
                size += len(payload)
                if size > limit:
                    self._refuse_answer(too_large(f"more than {limit} bytes", limit))
                chunks.append(payload)
        return b"".join(chunks)

    def _refuse_answer(self, reason: str) -> NoReturn:
        log.warning("%s: %s; answer dropped", self.target.url, reason)
        raise UpstreamError(reason)

    def _learn_version(self, body: bytes) -> None:
        with contextlib.suppress(ValueError, AttributeError):
            version = json.loads(body)["result"]["protocolVersion"]
            if isinstance(version, str):
                self.version = version

    async def _deliver_error(self, body: bytes, status: int, msg: Message | None) -> None:
        """An HTTP error: the upstream's JSON-RPC error when it sent one (its id filled in), else a proxy error."""
        assert msg is not None
        try:
            obj = json.loads(body)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and isinstance(obj.get("error"), dict):
            if obj.get("id") is None:  # rejected before its id was read: name the request it answers
                obj["id"] = msg.id
                body = utf8(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))
            await self.deliver(body)
            return
        await self.deliver(error_message(msg.id, f"finmcp-proxy: upstream answered HTTP {status}"))

    async def _listen(self) -> None:
        """The GET stream for server-initiated messages (handshake era)."""
        head = build_request(
            b"GET", self.target, [h for h in self._headers(None) if h[0] != b"content-type"], b""
        )
        try:
            stream, response = await self._get(head)
            try:
                if response.status == 200 and response.content_type.startswith(b"text/event-stream"):
                    await self._stream_events(stream, None)
            finally:
                stream.conn.close()
        except UpstreamError as exc:
            log.info("GET stream ended: %s", exc)

    async def close(self) -> None:
        if self.session_id:
            head = build_request(b"DELETE", self.target, self._headers(None), b"")
            with contextlib.suppress(Exception):
                async with asyncio.timeout(3):
                    stream, _ = await self.pool.send(head, b"", b"DELETE")
                    stream.conn.close()
        await super().close()


class SseUpstream(_HttpBase):
    """Legacy HTTP+SSE: one GET stream carries every server message; messages are POSTed to its endpoint."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.endpoint: Target | None = None
        self._ready = asyncio.Event()
        self.stream: asyncio.Task[Any] | None = None

    async def start(self) -> None:
        self.stream = self._spawn(self._listen())
        waiter = asyncio.ensure_future(self._ready.wait())
        done, _ = await asyncio.wait(
            {waiter, self.stream}, timeout=self.timeout, return_when=asyncio.FIRST_COMPLETED
        )
        if waiter not in done:
            waiter.cancel()
            raise UpstreamError(f"SSE upstream {self.target.url} sent no endpoint event")

    async def on_endpoint(self, data: bytes) -> None:
        self.endpoint = self.target.resolve(data.decode("utf-8").strip())
        self._ready.set()

    async def _listen(self) -> None:
        head = build_request(
            b"GET", self.target, [(b"accept", b"text/event-stream"), *self.extra_headers], b""
        )
        reason = "SSE stream ended"
        try:
            stream, response = await self._get(head)
            try:
                if response.status != 200:
                    reason = f"SSE upstream answered HTTP {response.status}"
                else:
                    await self._stream_events(stream, None)
            finally:
                stream.conn.close()
        except UpstreamError as exc:
            reason = str(exc)
        await self.closed(reason)

    async def send(self, raw: bytes, msg: Message | None) -> None:
        if self.endpoint is None:
            raise UpstreamError("SSE upstream is not connected")
        head = build_request(
            b"POST", self.endpoint, [(b"content-type", b"application/json"), *self.extra_headers], raw
        )
        async with asyncio.timeout(self.timeout):
            stream, response = await self.pool.send(head, raw, b"POST", _safe(msg))
            body = b"".join([p async for _r, p in stream.body()])
        self.pool.release(stream.conn, response.keep_alive)
        if response.status >= 400 and msg is not None and msg.kind == "request":
            await self.fail(
                msg.id_text or "null", f"SSE upstream answered HTTP {response.status}: {body[:200]!r}"
            )
