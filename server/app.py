"""The MCP server objects and the HTTP application.

:func:`build_mcp_server` wraps a :class:`~server.service.ToolService` in the SDK's low-level
``Server`` (with the ``get_tool_input_schema`` hook, so the 2026-07-28 HTTP path never re-runs
``tools/list`` per call). :class:`HttpApp` is a small ASGI router: Streamable HTTP at ``/mcp`` (one
inventory) and ``/{inventory}/mcp`` (each inventory), or the legacy SSE transport at ``/sse`` +
``/messages/`` (and ``/{inventory}/sse`` + ``/{inventory}/messages/``), plus ``/healthz``.

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
from importlib import metadata
from typing import Any, Literal

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.sse import SseServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from recordings.plumbing.listener import DEFAULT_MAX_BODY
from recordings.plumbing.protocol import is_stateless
from recordings.plumbing.sse import parse_events
from server.fastpath import FastCalls, HandshakeSessions, serves_without_waiting
from server.security import SecurityMiddleware, SecuritySettings
from server.seeded import SessionOccurrences, request_attempt, session_id_of
from server.service import ProgressFn, ToolService

logger = logging.getLogger("finmcp.server")

HttpTransport = Literal["http", "sse"]


def finmcp_version() -> str:
    """The installed finmcp version (``0+unknown`` when not installed)."""
    try:
        return metadata.version("finmcp")
    except metadata.PackageNotFoundError:
        return "0+unknown"


class ToolsListCache:
    """Server middleware answering repeated ``tools/list`` requests with the already-shaped wire result.

    The SDK validates and re-serialises every result through pydantic; for 760 tools that costs
    50-160 ms per listing although the answer never changes. The first well-formed request per
    (protocol version, cursor) runs the full pipeline; later ones get a copy of its output. Requests
    with unexpected params, or on a handshake-era connection not yet initialised, always take the
    full pipeline (so errors stay exactly the SDK's).
    """

    def __init__(self) -> None:
        self._cache: dict[tuple[str, str | None], dict[str, Any]] = {}

    async def __call__(self, ctx: ServerRequestContext[Any], call_next: Any) -> Any:
        if ctx.method != "tools/list" or ctx.request_id is None:
            return await call_next(ctx)
        params = ctx.params or {}
        cursor = params.get("cursor")
        if set(params) - {"cursor", "_meta"} or not (cursor is None or isinstance(cursor, str)):
            return await call_next(ctx)
        version = ctx.protocol_version
        if not is_stateless(version) and ctx.session.client_params is None:
            return await call_next(ctx)
        key = (version, cursor)
        hit = self._cache.get(key)
        if hit is not None:
            return dict(hit)
        result = await call_next(ctx)
        if isinstance(result, dict):
            self._cache[key] = result
        return result


class ToolCalls:
    """finmcp's ``tools/call`` handler: what the SDK's handler and the fast path (:mod:`server.fastpath`)
    both run. Counts occurrences per handshake-era session and notes the sessions the SDK served."""

    def __init__(self, service: ToolService) -> None:
        self.service = service
        self.occurrences = SessionOccurrences()
        self.sessions = HandshakeSessions()

    async def answer(
        self,
        version: str,
        name: str,
        arguments: Mapping[str, Any] | None,
        meta: Mapping[str, Any] | None,
        session_id: str | None,
        progress: ProgressFn | None = None,
    ) -> dict[str, Any]:
        """The result dict of one call (``resultType`` included; the SDK drops it for older eras)."""
        # draws keyed by the request (stateless: any replica answers alike) or by the session
        if is_stateless(version):
            occurrence: Any = request_attempt(meta)
            info = (meta or {}).get("io.modelcontextprotocol/clientInfo")
            replay: tuple[str, ...] = ("client",)
            if isinstance(info, dict):
                replay = ("client", str(info.get("name")), str(info.get("version")))
        else:
            occurrence = self.occurrences.counter(session_id)
            replay = ("session", session_id) if session_id is not None else ("process",)
        result = await self.service.call(name, arguments, progress, occurrence, replay)
        result["resultType"] = "complete"  # required from 2026-07-28 on; dropped for older eras
        return result


def build_mcp_server(
    service: ToolService, name: str | None = None, calls: ToolCalls | None = None
) -> Server[Any]:
    """The SDK low-level ``Server`` serving one inventory's tools (``calls``: its handler, else a new one)."""

    async def on_list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> dict[str, Any]:
        return service.list_tools(params.cursor if params is not None else None)

    handler = calls or ToolCalls(service)

    async def on_call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> dict[str, Any]:
        version = ctx.protocol_version
        session_id = None if is_stateless(version) else session_id_of(ctx.request)
        headers = getattr(ctx.request, "headers", None)
        if session_id is not None and headers is not None and headers.get("mcp-session-id") == session_id:
            handler.sessions.served(session_id, version)  # an initialised Streamable HTTP session
        return await handler.answer(
            version, params.name, params.arguments, params.meta, session_id, ctx.session.report_progress
        )

    server: Server[Any] = Server(
        name or f"finmcp-{service.name}",
        version=finmcp_version(),
        title=f"finmcp simulated financial tools ({service.name})",
        instructions=(
            f"Simulated financial tools of the {service.name} inventory: recorded answers are replayed, "
            "others are simulated from a seeded synthetic world."
        ),
        get_tool_input_schema=service.input_schema,
    )
    # registered like the on_list_tools/on_call_tool arguments, whose types do not admit the plain
    # dict results the SDK serialises (mcp.server.context.HandlerResult)
    server.add_request_handler("tools/list", types.PaginatedRequestParams, on_list_tools)
    server.add_request_handler("tools/call", types.CallToolRequestParams, on_call_tool)
    server.middleware.append(ToolsListCache())
    return server


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
        services: Mapping[str, ToolService],
        transport: HttpTransport = "http",
        json_response: bool = False,
        max_body: int = DEFAULT_MAX_BODY,
        *,
        fast_path: bool = True,
    ) -> None:
        """``fast_path=False`` (tests and benchmarks only) leaves every call to the SDK's path."""
        if not services:
            raise ValueError("no inventory to serve")
        if transport not in ("http", "sse"):
            raise ValueError(f"transport {transport!r}: expected 'http' or 'sse'")
        self.services = dict(services)
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
                fast = FastCalls(server, service, calls.answer, calls.sessions, manager, max_body)
                for prefix in prefixes:
                    self.routes[f"{prefix}/mcp"] = endpoint
                    if fast_path and serves_without_waiting(service):
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
        """``/healthz`` body: status, inventories, endpoints, call counters and the fast path's count."""
        stats = {name: dict(s.stats.counts) for name, s in self.services.items()}
        fast = {fast.service.name: fast.answered for fast in self.fast.values()}
        return {**self.health, "calls": stats, "fast_path_calls": fast}

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
            await send({"type": "lifespan.startup.complete"})
            message = await receive()  # lifespan.shutdown
        await send({"type": "lifespan.shutdown.complete"})


def build_http_app(
    services: Mapping[str, ToolService],
    transport: HttpTransport = "http",
    json_response: bool = False,
    security: SecuritySettings | None = None,
    *,
    fast_path: bool = True,
) -> SecurityMiddleware:
    """The full HTTP application: :class:`HttpApp` behind :class:`SecurityMiddleware`.

    ``fast_path=False`` is for tests and benchmarks (:class:`server.options.ServingStack`).
    """
    settings = security or SecuritySettings()
    max_body = DEFAULT_MAX_BODY if settings.max_body is None else settings.max_body
    app = HttpApp(services, transport, json_response, max_body, fast_path=fast_path)
    return SecurityMiddleware(app, settings)
