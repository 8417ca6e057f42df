"""The HTTP application.

:class:`HttpApp` is a small ASGI router over finmcp's MCP servers (:mod:`server.mcp_server`):
Streamable HTTP at ``/mcp`` (one inventory) and ``/{inventory}/mcp`` (each inventory), or the legacy
SSE transport at ``/sse`` + ``/messages/`` (and ``/{inventory}/sse`` + ``/{inventory}/messages/``),
plus ``/healthz``.

On Streamable HTTP a ``tools/list`` request is always answered with a JSON body, also where the SDK
would open an SSE stream (:class:`ListingAsJson`): the listing carries no notifications, and one SSE
event of the 760-tool listing (~1.6 MB) is over the mcp SDK client's default 1 MiB event cap.
"""

from __future__ import annotations

import json
import logging
from collections import deque
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, Literal

from mcp.server.lowlevel import Server
from mcp.server.sse import SseServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from finmcp.recordings.plumbing.listener import DEFAULT_MAX_BODY
from finmcp.recordings.plumbing.sse import parse_events
from finmcp.server.fastpath import FastCalls, serves_without_waiting
from finmcp.server.mcp_server import ToolCalls, build_mcp_server
from finmcp.server.recorded import RecordedService
from finmcp.server.recorded_mcp import build_recorded_server
from finmcp.server.sdk_check import check_fast_path
from finmcp.server.security import SecurityMiddleware, SecuritySettings
from finmcp.server.service import ToolService
from finmcp.server.warmup import Warmup

logger = logging.getLogger("finmcp.server")

HttpTransport = Literal["http", "sse"]


@dataclass
class _SseEndpoint:
    server: Server[Any]
    transport: SseServerTransport

    async def connect(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            async with self.transport.connect_sse(scope, receive, send) as (read_stream, write_stream):
                await self.server.run(read_stream, write_stream, self.server.create_initialization_options())
        except ValueError:  # the transport already answered (request validation failed)
            return


async def _send_json(send: Send, status: int, payload: Mapping[str, Any]) -> None:
    body = json.dumps(payload, ensure_ascii=False).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def read_body(receive: Receive, limit: int) -> tuple[list[Message], bytes]:
    """The request's messages read so far and their body bytes: all of it, or just past ``limit``.

    Stops at the body's end, at a disconnect, or once more than ``limit`` bytes arrived (the SDK
    transport then refuses the body with its own error when it reads the rest).
    """
    messages: list[Message] = []
    body = bytearray()
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            break
        body += message.get("body", b"")
        if not message.get("more_body", False) or len(body) > limit:
            break
    return messages, bytes(body)


def rewound_receive(messages: list[Message], receive: Receive) -> Receive:
    """A ``receive`` that hands out the already-read ``messages`` first, then the real ``receive``'s.

    The router reads a POST's body to decide where it goes; the SDK's transport then reads the same
    body again from this ``receive``, as if nothing had been read.
    """
    pending = deque(messages)

    async def rewound() -> Message:
        if pending:
            return pending.popleft()
        return await receive()

    return rewound


def is_tools_list(body: bytes) -> bool:
    """True when a POST body is one JSON-RPC ``tools/list`` request."""
    if b"tools/list" not in body:
        return False
    try:
        message = json.loads(body)
    except ValueError:
        return False
    return isinstance(message, dict) and message.get("method") == "tools/list" and "id" in message


_SSE_ONLY_HEADERS = frozenset({b"content-type", b"content-length", b"connection", b"x-accel-buffering"})


class ListingAsJson:
    """An ASGI ``send`` that turns an SSE answer holding exactly one message into a JSON answer.

    Streamable HTTP lets the server answer any request with ``application/json`` or with an SSE
    stream, and every client must accept both. Wrapped around a ``tools/list`` POST it holds the SSE
    response back until the stream ends, then sends its one message as the JSON body (same status,
    same other headers, ``Mcp-Session-Id`` included). Any other response passes through unchanged.
    """

    def __init__(self, send: Send) -> None:
        self.send = send
        self.start: Message | None = None
        self.chunks: list[bytes] = []

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = dict(message.get("headers") or [])
            if headers.get(b"content-type", b"").startswith(b"text/event-stream"):
                self.start = message
                return
        elif message["type"] == "http.response.body" and self.start is not None:
            self.chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                await self._flush()
            return
        await self.send(message)

    async def _flush(self) -> None:
        assert self.start is not None
        raw = b"".join(self.chunks)
        data = [e.data for e in parse_events(raw) if e.event == "message" and e.data]
        if len(data) != 1:  # not a lone answer: send the stream as it was
            await self.send(self.start)
            await self.send({"type": "http.response.body", "body": raw})
            return
        body = data[0]
        headers = [(k, v) for k, v in self.start.get("headers") or [] if k.lower() not in _SSE_ONLY_HEADERS]
        headers += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await self.send({"type": "http.response.start", "status": self.start["status"], "headers": headers})
        await self.send({"type": "http.response.body", "body": body})


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None


def post_problem(scope: Scope) -> tuple[int, str] | None:
    """``(status, message)`` for a POST the MCP transport would refuse with a bare or empty body, else None.

    The SDK answers a wrong ``Content-Type`` with plain text and an unacceptable ``Accept`` with an
    empty 406; these checks give the same statuses' meaning as a JSON-RPC error that says what is wrong.
    """
    content_type = _header(scope, b"content-type")
    media = (content_type or "").split(";")[0].strip().lower()
    if media != "application/json":
        return 415, f"Content-Type must be application/json, got {content_type!r}"
    accept = _header(scope, b"accept")
    types = {part.split(";")[0].strip().lower() for part in (accept or "").split(",")}
    acceptable = {"*/*", "application/*", "application/json", "text/*", "text/event-stream"}
    if not types & acceptable:
        return 406, f"Accept must include application/json and text/event-stream, got {accept!r}"
    return None


class HttpApp:
    """ASGI app serving several inventories over Streamable HTTP or legacy SSE, plus ``/healthz``."""

    def __init__(
        self,
        services: Mapping[str, ToolService | RecordedService],
        transport: HttpTransport = "http",
        json_response: bool = False,
        max_body: int = DEFAULT_MAX_BODY,
        *,
        fast_path: bool = True,
        warmup: Warmup | None = None,
    ) -> None:
        """``fast_path=False`` (tests and benchmarks only) leaves every call to the SDK's path.

        ``warmup``: the simulators' start-up warm-up, reported by ``/healthz`` (None: nothing to warm).
        """
        if not services:
            raise ValueError("no inventory to serve")
        if transport not in ("http", "sse"):
            raise ValueError(f"transport {transport!r}: expected 'http' or 'sse'")
        self.services = dict(services)
        self.warmup = warmup or Warmup.finished()
        self.transport = transport
        self.json_response = json_response
        self.max_body = max_body
        self.routes: dict[str, ASGIApp] = {}
        self.post_routes: dict[str, ASGIApp] = {}
        self.managers: list[StreamableHTTPSessionManager] = []
        self.fast: dict[str, FastCalls] = {}  # Streamable HTTP path -> its tools/call fast path
        # Host/Origin are checked by SecurityMiddleware; the SDK still checks Content-Type and body size.
        sdk_security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        single = len(self.services) == 1
        fast_path = fast_path and not json_response
        for name, service in self.services.items():
            if isinstance(service, RecordedService):  # a recorded server: its own SDK server, no fast path
                server, calls = build_recorded_server(service), None
            else:
                calls = ToolCalls(service)
                server = build_mcp_server(service, calls=calls)
            prefixes = [f"/{name}", *([""] if single else [])]
            if transport == "http":
                manager = StreamableHTTPSessionManager(
                    app=server,
                    json_response=json_response,
                    security_settings=sdk_security,
                    max_request_body_size=max_body,
                )
                self.managers.append(manager)
                endpoint = StreamableHTTPASGIApp(manager)
                fast = None
                if calls is not None and isinstance(service, ToolService):
                    fast = FastCalls(server, service, calls.answer, calls.sessions, manager, max_body)
                for prefix in prefixes:
                    self.routes[f"{prefix}/mcp"] = endpoint
                    if fast is not None and fast_path and serves_without_waiting(fast.service):
                        self.fast[f"{prefix}/mcp"] = fast
            else:
                for prefix in prefixes:
                    sse = _SseEndpoint(
                        server, SseServerTransport(f"{prefix}/messages/", sdk_security, max_body)
                    )
                    self.routes[f"{prefix}/sse"] = sse.connect
                    self.routes[f"{prefix}/messages/"] = sse.transport.handle_post_message
        self.mcp_paths = frozenset(p for p in self.routes if p.endswith("/mcp"))  # Streamable HTTP only
        self.health = {
            "status": "ok",
            "transport": transport,
            "inventories": {name: len(s.inventory) for name, s in self.services.items()},
            "endpoints": sorted(self.routes),
        }

    def health_payload(self) -> dict[str, Any]:
        """``/healthz`` body: status, endpoints, warm-up, call counters and the fast path's count."""
        stats = {name: dict(s.stats.counts) for name, s in self.services.items()}
        fast = {fast.service.name: fast.answered for fast in self.fast.values()}
        return {**self.health, **self.warmup.health(), "calls": stats, "fast_path_calls": fast}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            path = scope["path"]
            endpoint = self.routes.get(path)
            if endpoint is not None:
                problem = (
                    post_problem(scope) if scope["method"] == "POST" and path in self.mcp_paths else None
                )
                if problem is not None:
                    error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": problem[1]}}
                    await _send_json(send, problem[0], error)
                    return
                if scope["method"] == "POST" and path in self.mcp_paths and not self.json_response:
                    messages, body = await read_body(receive, self.max_body)
                    fast = self.fast.get(path)
                    if fast is not None:
                        last = messages[-1]
                        complete = last["type"] == "http.request" and not last.get("more_body", False)
                        if await fast.try_answer(scope, body, complete, send):
                            return
                    receive = rewound_receive(messages, receive)
                    if is_tools_list(body):
                        send = ListingAsJson(send)
                await endpoint(scope, receive, send)
            elif path == "/healthz":
                await _send_json(send, 200, self.health_payload())
            else:
                await _send_json(
                    send, 404, {"error": f"no MCP endpoint at {path}", "endpoints": self.health["endpoints"]}
                )
        elif kind == "lifespan":
            await self._lifespan(receive, send)

    async def check_fast_path(self) -> None:
        """Take the SDK's path for every call, with a warning, when the installed SDK is not what the fast
        path relies on (:func:`server.sdk_check.check_fast_path`; run at start-up)."""
        if not self.fast:
            return
        problems = await check_fast_path()
        if problems:
            logger.warning(
                "tools/call fast path off, every call takes the SDK's path: %s", "; ".join(problems)
            )
            self.fast.clear()

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        async with AsyncExitStack() as stack:
            try:
                for manager in self.managers:
                    await stack.enter_async_context(manager.run())
            except Exception as exc:
                await send({"type": "lifespan.startup.failed", "message": repr(exc)})
                return
            await self.check_fast_path()
            await send({"type": "lifespan.startup.complete"})
            message = await receive()  # lifespan.shutdown
        await send({"type": "lifespan.shutdown.complete"})


def build_http_app(
    services: Mapping[str, ToolService | RecordedService],
    transport: HttpTransport = "http",
    json_response: bool = False,
    security: SecuritySettings | None = None,
    *,
    fast_path: bool = True,
    warmup: Warmup | None = None,
) -> SecurityMiddleware:
    """The full HTTP application: :class:`HttpApp` behind :class:`SecurityMiddleware`.

    ``fast_path=False`` is for tests and benchmarks (:class:`server.options.ServingStack`); ``warmup``
    is what ``/healthz`` reports as ``warm`` (None: nothing to warm).
    """
    settings = security or SecuritySettings()
    max_body = DEFAULT_MAX_BODY if settings.max_body is None else settings.max_body
    app = HttpApp(services, transport, json_response, max_body, fast_path=fast_path, warmup=warmup)
    return SecurityMiddleware(app, settings)
