"""The SDK ``Server`` of a recorded server (:mod:`server.recorded`): its identity, its tools, its answers.

``initialize`` answers the recorded ``serverInfo``, ``capabilities`` and ``instructions`` (the protocol
version negotiated as the SDK does); a server recorded in the handshake era does not answer the
2026-07-28 ``server/discover`` (as it did not), so a client falls back to ``initialize``; one recorded
through ``server/discover`` answers it with what it declared. ``tools/list`` is the recorded listing,
``tools/call`` the recording (notifications first, then the result or the recorded JSON-RPC error).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, METHOD_NOT_FOUND

from finmcp.recordings.plumbing.protocol import is_stateless
from finmcp.server.recorded import RecordedService
from finmcp.server.seeded import session_id_of
from finmcp.server.sequence import replay_session

LOG_LEVEL_META = "io.modelcontextprotocol/logLevel"
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


class RecordedServer(Server[Any]):
    """An SDK ``Server`` that introduces itself with a recorded declaration."""

    def __init__(self, service: RecordedService) -> None:
        info = service.server_info
        icons = info.get("icons")
        super().__init__(
            str(info.get("name") or service.name),
            version=str(info.get("version") or ""),
            title=info.get("title"),
            description=info.get("description"),
            instructions=service.declaration.get("instructions"),
            website_url=info.get("websiteUrl"),
            icons=[types.Icon.model_validate(i) for i in icons] if isinstance(icons, list) else None,
            get_tool_input_schema=service.input_schema,
        )
        self.service = service
        self.recorded_capabilities = types.ServerCapabilities.model_validate(
            service.declaration.get("capabilities") or {}
        )

    def create_initialization_options(
        self,
        notification_options: Any = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        """The ``initialize`` answer's content: the recorded identity and capabilities."""
        return InitializationOptions(
            server_name=self.name,
            server_version=self.version,
            title=self.title,
            description=self.description,
            capabilities=self.recorded_capabilities,
            instructions=self.instructions,
            website_url=self.website_url,
            icons=self.icons,
        )


async def _replay_notifications(
    ctx: ServerRequestContext[Any], notes: list[dict[str, Any]], meta: Mapping[str, Any] | None
) -> None:
    """Send the recorded notifications of a call: progress to this request's token (none without one),
    log messages on this request's stream (2026-07-28: only at or above the level the request opted in to)."""
    stateless = is_stateless(ctx.protocol_version)
    wanted = (meta or {}).get(LOG_LEVEL_META)
    for note in notes:
        params = note.get("params") or {}
        if note["method"] == "notifications/progress":
            progress = params.get("progress")
            if isinstance(progress, int | float):
                await ctx.session.report_progress(progress, params.get("total"), params.get("message"))
        elif note["method"] == "notifications/message":
            level = params.get("level")
            if stateless and not (
                wanted in LOG_LEVELS
                and level in LOG_LEVELS
                and LOG_LEVELS.index(level) >= LOG_LEVELS.index(wanted)
            ):
                continue
            message = types.LoggingMessageNotification.model_validate(
                {"method": "notifications/message", "params": params}
            )
            await ctx.session.send_notification(message, related_request_id=ctx.request_id)


STATELESS_LIST_HINTS = {"ttlMs": 0, "cacheScope": "private", "resultType": "complete"}
"""What a 2026-07-28 ``tools/list`` result must carry beside the recorded tools (not cacheable)."""


def build_recorded_server(service: RecordedService) -> Server[Any]:
    """The SDK server replaying ``service``'s recorded server."""
    server = RecordedServer(service)

    async def on_list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> dict[str, Any]:
        try:
            page = service.list_tools(params.cursor if params is not None else None)
        except ValueError as exc:
            raise MCPError(INVALID_PARAMS, str(exc)) from None
        if is_stateless(ctx.protocol_version):  # the 2026-07-28 era requires the cache hints
            page = {**page, **STATELESS_LIST_HINTS}
        return page

    async def on_call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> dict[str, Any]:
        stateless = is_stateless(ctx.protocol_version)
        session_id = None if stateless else session_id_of(ctx.request)
        meta = params.meta if isinstance(params.meta, Mapping) else None
        session = replay_session(stateless, session_id, meta, ctx.request)
        answer = await service.call(params.name, params.arguments, session)
        await _replay_notifications(ctx, answer.notifications, meta)
        if answer.rpc_error is not None:
            error = answer.rpc_error
            raise MCPError(error["code"], error.get("message", ""), error.get("data"))
        assert answer.result is not None
        return {**answer.result, "resultType": "complete"}

    server.add_request_handler("tools/list", types.PaginatedRequestParams, on_list_tools)
    server.add_request_handler("tools/call", types.CallToolRequestParams, on_call_tool)
    version = service.declaration.get("protocolVersion")
    if not (isinstance(version, str) and is_stateless(version)):

        async def no_discover(ctx: ServerRequestContext[Any], params: types.RequestParams | None) -> Any:
            raise MCPError(METHOD_NOT_FOUND, "Method not found")  # recorded in the handshake era: as it was

        server.add_request_handler("server/discover", types.RequestParams, no_discover)
    else:

        async def on_discover(ctx: ServerRequestContext[Any], params: types.RequestParams | None) -> Any:
            return types.DiscoverResult(
                supported_versions=[version],
                capabilities=server.recorded_capabilities,
                instructions=server.instructions,
            )

        server.add_request_handler("server/discover", types.RequestParams, on_discover)
    return server
