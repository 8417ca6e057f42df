"""finmcp's MCP server object: the SDK's low-level ``Server`` serving one inventory's tools.

:func:`build_mcp_server` wraps a :class:`~server.service.ToolService` in the SDK's ``Server`` (with
the ``get_tool_input_schema`` hook, so the 2026-07-28 HTTP path never re-runs ``tools/list`` per
call); :class:`ToolCalls` is its ``tools/call`` handler, which the fast path (:mod:`server.fastpath`)
runs too; :class:`ToolsListCache` answers repeated listings from the first shaped result.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import metadata
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from finmcp.recordings.plumbing.flags import DISTRIBUTION
from finmcp.recordings.plumbing.protocol import is_stateless
from finmcp.server.fastpath import HandshakeSessions
from finmcp.server.seeded import SessionOccurrences, request_attempt, session_id_of
from finmcp.server.sequence import replay_session
from finmcp.server.service import ProgressFn, ToolService


def finmcp_version() -> str:
    """The installed finmcp version, pyproject's (``0+unknown`` when not installed)."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "0+unknown"


TOOLS_QUERY = "tools"
"""``…/mcp?tools=A,B``: that endpoint's ``tools/list`` lists only tools A and B (the tools a benchmark's
protocol offers an outside agent, e.g. FinToolBench's top-K; ``finmcp-eval tasks``). Calls are not
restricted: a call to another tool is answered (and scored) as usual."""


def offered_tools(request: Any) -> list[str] | None:
    """The tool names of the request's ``?tools=`` query (comma-separated), or None without one."""
    query = getattr(request, "query_params", None)
    value = query.get(TOOLS_QUERY) if query is not None else None
    if value is None:
        return None
    return [name.strip() for name in str(value).split(",") if name.strip()]


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
        if ctx.method != "tools/list" or ctx.request_id is None or offered_tools(ctx.request) is not None:
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
        request: Any = None,
    ) -> dict[str, Any]:
        """The result dict of one call (``resultType`` included; the SDK drops it for older eras).

        ``request``: the HTTP request (its connection is a stateless-era replay session, :mod:`server.sequence`).
        """
        # draws keyed by the request (stateless: any replica answers alike) or by the session
        stateless = is_stateless(version)
        occurrence: Any = request_attempt(meta) if stateless else self.occurrences.counter(session_id)
        replay = replay_session(stateless, session_id, meta, request)
        result = await self.service.call(name, arguments, progress, occurrence, replay, meta=meta)
        result["resultType"] = "complete"  # required from 2026-07-28 on; dropped for older eras
        return result


def build_mcp_server(
    service: ToolService, name: str | None = None, calls: ToolCalls | None = None
) -> Server[Any]:
    """The SDK low-level ``Server`` serving one inventory's tools (``calls``: its handler, else a new one)."""

    async def on_list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> dict[str, Any]:
        only = offered_tools(ctx.request)
        if only is not None:
            return service.list_only(only)
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
            version,
            params.name,
            params.arguments,
            params.meta,
            session_id,
            ctx.session.report_progress,
            ctx.request,
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
