"""A direct answer for well-formed ``tools/call`` POSTs on Streamable HTTP, byte for byte the SDK's.

The mcp SDK serves one call through a per-request pipeline: on the stateless 2026-07-28 path a task
group, a memory stream, a ``Connection`` with its exit stack, a ``ServerRunner`` and a
``ServerSession`` per request; in the handshake era a hop through the session's read stream into its
dispatcher task, back through a write stream and a response stream, and an ``EventSourceResponse``
(sse-starlette) with its own task group and ping task. Most of a replayed call's server time goes
there (docs/server.md, Performance). :class:`FastCalls` answers the common case in the request's own
task instead, with the SDK's own checks and serialisers:

- the same header and body checks (``check_accept_headers``, ``find_duplicated_routing_header``,
  ``classify_inbound_request``, ``validate_mcp_param_headers``, ``validate_client_request``, the
  JSON-RPC models) in the same order;
- finmcp's own ``tools/call`` handler (:class:`server.mcp_server.ToolCalls`), then the SDK's result
  shaping (``serialize_server_result``, ``resultType``, the 2026 ``serverInfo`` stamp);
- the same response: a JSON body (2026-07-28), or one ``event: message`` SSE frame with the
  transport's headers (handshake era).

Anything else goes to the SDK untouched and is answered by it: another method, any request a check
refuses (so every error stays the SDK's), a progress token, a handshake-era session the SDK has not
answered a call on yet (so initialisation and the negotiated version are the SDK's to decide), a
session it no longer holds. Only services whose calls never wait are served here (``--latency none``,
no ``--faults``, ``--replay key``): such a call finishes without yielding, so cancellation, progress
and the 2026 path's SSE commit after 15 s cannot arise. The SDK's OpenTelemetry middleware does not
run for these calls (finmcp-server configures no tracer, so its spans were no-ops).

What it needs beyond the SDK's public pieces (the live session of an ``Mcp-Session-Id``, its idle
countdown, and the runner's result shaping, which :meth:`FastCalls._shape` repeats) is read in
:mod:`server.sdk_private` and checked at start-up by :mod:`server.sdk_check`: the same calls through
both paths on an in-process probe, byte for byte; on any difference the server takes the SDK's path
for every call, with a warning. Tests and benchmarks build the server without it
(:class:`server.options.ServingStack`) to compare and measure against the SDK's path.
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import pydantic_core
from mcp.server.lowlevel import Server
from mcp.server.runner import modern_error_data
from mcp.server.streamable_http import check_accept_headers
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    MCP_PARAM_HEADER_PREFIX,
    InboundLadderRejection,
    classify_inbound_request,
    validate_mcp_param_headers,
)
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data, progress_token_from_params
from mcp_types import (
    CORE_RESULT_TYPES,
    INTERNAL_ERROR,
    SERVER_INFO_META_KEY,
    ErrorData,
    JSONRPCError,
    JSONRPCRequest,
    JSONRPCResponse,
)
from mcp_types import methods as spec_methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Scope, Send

from finmcp.server.sdk_private import held, live_transport
from finmcp.server.service import SOURCE_KEY, ToolService

logger = logging.getLogger("finmcp.server")

_PARAM_PREFIX = MCP_PARAM_HEADER_PREFIX.lower()
_SSE_HEADERS = (
    (b"cache-control", b"no-cache, no-transform"),
    (b"connection", b"keep-alive"),
    (b"content-type", b"text/event-stream"),
)


_RESPONSE_HEAD = '{"jsonrpc":"2.0","id":0,"result":'
_TEXTS_KEPT = 4096  # replayed answers' wire texts kept, at most ...
_TEXT_CHARS_KEPT = 16 << 20  # ... and at most this many characters of them in all


def serves_without_waiting(service: ToolService) -> bool:
    """True when no call of ``service`` ever waits (no latency, no faults, key replay)."""
    return (
        service.latency.is_zero
        and not service.faults
        and service.schedule is None
        and service.replay == "key"
    )


class HandshakeSessions:
    """Handshake-era sessions the SDK answered a ``tools/call`` on: session id -> negotiated version."""

    def __init__(self, limit: int = 4096) -> None:
        self._versions: OrderedDict[str, str] = OrderedDict()
        self._limit = limit

    def served(self, session_id: str, version: str) -> None:
        """Note that the SDK answered a call on ``session_id`` (so it is initialised at ``version``)."""
        self._versions[session_id] = version
        self._versions.move_to_end(session_id)
        if len(self._versions) > self._limit:
            self._versions.popitem(last=False)

    def version(self, session_id: str) -> str | None:
        """The negotiated version of a session seen before, else None."""
        return self._versions.get(session_id)


class FastCalls:
    """Answers qualifying ``tools/call`` POSTs of one inventory's endpoint (see the module docstring).

    ``answer(version, name, arguments, meta, session_id)`` is finmcp's handler (it returns the result
    dict the SDK handler would). :meth:`try_answer` returns False, having sent nothing, for a request
    it leaves to the SDK.
    """

    def __init__(
        self,
        server: Server[Any],
        service: ToolService,
        answer: Any,
        sessions: HandshakeSessions,
        manager: StreamableHTTPSessionManager,
        max_body: int,
    ) -> None:
        self.server = server
        self.service = service
        self.answer = answer
        self.sessions = sessions
        self.manager = manager
        self.max_body = max_body
        self.answered = 0  # calls answered here (shown by /healthz)
        self._annotated: dict[str, bool] = {}  # tool -> its input schema uses x-mcp-header
        self._stamp: dict[str, Any] | None = None
        self._texts: dict[tuple[Any, ...], tuple[str, list[Any]]] = {}
        self._text_chars = 0  # characters held in self._texts

    async def try_answer(self, scope: Scope, body: bytes, complete: bool, send: Send) -> bool:
        """Answer the POST (``body`` read whole when ``complete``) here when it qualifies."""
        if not complete or len(body) > self.max_body or b'"tools/call"' not in body or "user" in scope:
            return False
        raw = scope["headers"]
        headers = {key.decode("latin-1"): value.decode("latin-1") for key, value in raw}
        if len(headers) != len(raw):  # a repeated header: the SDK's checks read the raw list
            return False
        if headers.get("content-type", "").strip().lower() != "application/json":
            return False
        request = Request(scope)
        has_json, has_sse = check_accept_headers(request)
        if not (has_json and has_sse):
            return False
        version = headers.get("mcp-protocol-version")
        if version is None:
            return False
        if version in HANDSHAKE_PROTOCOL_VERSIONS:
            return await self._handshake(headers, version, body, send)
        return await self._stateless(request, headers, body, send)

    # ---------------------------------------------------------------- 2026-07-28 and later

    async def _stateless(self, request: Request, headers: dict[str, str], body: bytes, send: Send) -> bool:
        try:
            decoded = json.loads(body)
        except (ValueError, RecursionError):
            return False
        if not isinstance(decoded, dict) or "id" not in decoded or decoded.get("method") != "tools/call":
            return False
        try:
            req = JSONRPCRequest.model_validate(decoded)
        except ValidationError:
            return False
        # no header repeats (checked above), so the SDK's find_duplicated_routing_header finds none
        verdict = classify_inbound_request(decoded, headers=headers)
        if isinstance(verdict, InboundLadderRejection):
            return False
        params = req.params or {}
        version = verdict.protocol_version
        call = self._checked_call(params, version)
        if call is None or self._param_headers_refused(headers, call[0], call[1]):
            return False
        name, arguments, meta = call
        try:
            result = await self.answer(version, name, arguments, meta, None)
            text = '{"jsonrpc":"2.0","id":' + json.dumps(req.id) + ',"result":'
            text += self._result_text("json", version, result) + "}"
            status = 200
        except Exception as exc:  # as the SDK's modern entry maps a failing handler
            error = JSONRPCError(jsonrpc="2.0", id=req.id, error=modern_error_data(exc))
            status = ERROR_CODE_HTTP_STATUS.get(error.error.code, 200)
            dumped = error.model_dump(mode="json", by_alias=True, exclude_none=True)
            text = json.dumps(dumped, separators=(",", ":"))
        response = Response(text, status_code=status, media_type="application/json")
        await response(request.scope, request.receive, send)
        self.answered += 1
        return True

    def _param_headers_refused(
        self, headers: dict[str, str], name: str, arguments: Mapping[str, Any]
    ) -> bool:
        """The SDK's ``Mcp-Param-*`` check (``_mcp_param_rejection``) refuses the call."""
        if not arguments and not any(header.startswith(_PARAM_PREFIX) for header in headers):
            return False
        schema = self.service.input_schema(name)
        if schema is None:
            return False
        annotated = self._annotated.get(name)
        if annotated is None:  # without the keyword no property is annotated: nothing to compare
            annotated = self._annotated[name] = "x-mcp-header" in json.dumps(schema)
        return annotated and validate_mcp_param_headers(schema, arguments, headers) is not None

    # ---------------------------------------------------------------- handshake era

    async def _handshake(self, headers: dict[str, str], version: str, body: bytes, send: Send) -> bool:
        session_id = headers.get("mcp-session-id")
        if not session_id or self.sessions.version(session_id) != version:
            return False
        transport = live_transport(self.manager, session_id)
        if transport is None:
            return False
        try:
            raw = pydantic_core.from_json(body)
        except ValueError:
            return False
        if not isinstance(raw, dict) or "id" not in raw or raw.get("method") != "tools/call":
            return False
        try:
            req = JSONRPCRequest.model_validate(raw, by_name=False)
        except ValidationError:
            return False
        call = self._checked_call(req.params or {}, version)
        if call is None:
            return False
        name, arguments, meta = call
        with held(transport) as holding:  # the session's idle countdown stops while the call is served
            if not holding:  # the session is ending: the SDK answers
                return False
            data = await self._handshake_data(req, version, name, arguments, meta, session_id)
            await self._send_event(send, session_id, data)
        self.answered += 1
        return True

    async def _handshake_data(
        self,
        req: JSONRPCRequest,
        version: str,
        name: str,
        arguments: Mapping[str, Any],
        meta: Mapping[str, Any] | None,
        session_id: str,
    ) -> str:
        """The JSON-RPC answer as the SDK's dispatcher and transport write it (``model_dump_json``)."""
        try:
            result = await self.answer(version, name, arguments, meta, session_id)
            data = '{"jsonrpc":"2.0","id":' + pydantic_core.to_json(req.id).decode() + ',"result":'
            return data + self._result_text("sse", version, result) + "}"
        except Exception as exc:  # as the SDK's dispatcher answers a failing handler
            error = handler_exception_to_error_data(exc)
            if error is None:
                logger.exception("handler for 'tools/call' raised")
                error = ErrorData(code=0, message=str(exc))
            return JSONRPCError(jsonrpc="2.0", id=req.id, error=error).model_dump_json(
                by_alias=True, exclude_unset=True
            )

    async def _send_event(self, send: Send, session_id: str, data: str) -> None:
        head = [
            *_SSE_HEADERS,
            (b"mcp-session-id", session_id.encode("latin-1")),
            (b"x-accel-buffering", b"no"),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": head})
        # the same bytes as the SDK's event then its empty closing body (one chunk, then the last-chunk
        # marker), written at once: the client reads one segment instead of two
        event = f"event: message\r\ndata: {data}\r\n\r\n".encode()
        await send({"type": "http.response.body", "body": event, "more_body": False})

    # ---------------------------------------------------------------- shared

    def _checked_call(
        self, params: Mapping[str, Any], version: str
    ) -> tuple[str, Mapping[str, Any], Mapping[str, Any] | None] | None:
        """(name, arguments, _meta) of a call the SDK would hand to finmcp's handler; None: leave it."""
        if progress_token_from_params(params) is not None:
            return None
        try:
            spec_methods.validate_client_request("tools/call", version, params)
        except (ValidationError, KeyError):
            return None
        name = params.get("name")
        arguments = params.get("arguments")
        if not isinstance(name, str) or self.service.input_schema(name) is None:
            return None  # the SDK's handler answers an unknown tool (with its error)
        if arguments is not None and not isinstance(arguments, Mapping):
            return None
        meta = params.get("_meta")
        return name, arguments or {}, meta if isinstance(meta, Mapping) else None

    def _result_text(self, kind: str, version: str, result: dict[str, Any]) -> str:
        """The JSON text of a result as the SDK writes it inside its response: ``json`` (the 2026 entry:
        ``json.dumps`` of ``model_dump``) or ``sse`` (the handshake transport: ``model_dump_json``).

        A replayed answer's text is memoised by the identity of the result's values: they are the
        service's cached, never-mutated objects (the memo holds them, so their ids stay theirs), and its
        wire text is a pure function of them and the version. A simulated answer is new objects every
        time, so its text is never memoised (holding it would only grow the memory with each call).
        """
        meta = result.get("_meta")
        replayed = isinstance(meta, dict) and meta.get(SOURCE_KEY) == "replay"
        key = (kind, version, tuple((name, id(value)) for name, value in result.items()))
        if replayed:
            known = self._texts.get(key)
            if known is not None:
                return known[0]
        response = JSONRPCResponse(jsonrpc="2.0", id=0, result=self._shape(version, result))
        if kind == "json":
            dumped = response.model_dump(mode="json", by_alias=True, exclude_none=True)
            whole = json.dumps(dumped, separators=(",", ":"))
        else:
            whole = response.model_dump_json(by_alias=True, exclude_unset=True)
        if not (whole.startswith(_RESPONSE_HEAD) and whole.endswith("}")):
            raise RuntimeError(f"unexpected response serialisation: {whole[:80]!r}")
        text = whole[len(_RESPONSE_HEAD) : -1]
        if replayed and len(text) <= _TEXT_CHARS_KEPT // 64:
            self._texts[key] = (text, list(result.values()))
            self._text_chars += len(text)
            while len(self._texts) > _TEXTS_KEPT or self._text_chars > _TEXT_CHARS_KEPT:
                self._text_chars -= len(self._texts.pop(next(iter(self._texts)))[0])
        return text

    def _shape(self, version: str, result: dict[str, Any]) -> dict[str, Any]:
        """The SDK runner's shaping of a ``tools/call`` result for the wire (``ServerRunner._serialize``, a
        private method: repeated here from public pieces, compared with the SDK's at start-up)."""
        hint = self.server.cache_hints.get("tools/call")
        if hint is not None and not spec_methods.is_input_required(result):
            result = {"ttlMs": hint.ttl_ms, "cacheScope": hint.scope, **result}
        dumped = dict(result)
        result_type = dumped.get("resultType")
        core = version not in MODERN_PROTOCOL_VERSIONS or not isinstance(result_type, str)
        core = core or result_type in CORE_RESULT_TYPES
        if core:
            try:
                dumped = spec_methods.serialize_server_result("tools/call", version, dumped)
            except ValidationError:
                logger.exception("handler for 'tools/call' returned an invalid result")
                raise MCPError(code=INTERNAL_ERROR, message="Handler returned an invalid result") from None
        if version in MODERN_PROTOCOL_VERSIONS:
            if dumped.get("resultType") is None:
                dumped["resultType"] = "complete"
            meta = dumped.get("_meta")
            if self._stamp is None:  # the server's name, title and version: serialised at once, never kept
                self._stamp = self.server.server_info_stamp
            if meta is None:
                dumped["_meta"] = {SERVER_INFO_META_KEY: self._stamp}
            elif isinstance(meta, dict) and meta.get(SERVER_INFO_META_KEY) is None:
                dumped["_meta"] = {**meta, SERVER_INFO_META_KEY: self._stamp}
        return dumped
