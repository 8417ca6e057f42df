"""The mcp SDK's private state the tools/call fast path reads, in one place (checked at start-up).

No public piece of mcp 2.3 gives the live handshake-era session of an ``Mcp-Session-Id`` (the
session manager's ``_server_instances``), or holds that session's idle countdown while a call is
answered outside its transport, as the transport's ``handle_request`` does (``_requests_in_flight``,
``_idle_timeout``). This is the only module that reads the SDK's private names
(``tests/test_architecture.py``); :func:`server.sdk_check.check_fast_path` runs
:func:`session_state_problems` on a probe session before the server accepts requests, and the server
takes the SDK's path for every call when it finds a problem.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager


def live_transport(
    manager: StreamableHTTPSessionManager, session_id: str
) -> StreamableHTTPServerTransport | None:
    """The SDK's transport of a live handshake-era session, or None (unknown, ended or ending)."""
    transport = manager._server_instances.get(session_id)
    if transport is None or transport.is_terminated:
        return None
    return transport


@contextmanager
def held(transport: StreamableHTTPServerTransport) -> Iterator[bool]:
    """Hold the session's idle countdown while a call is answered, as the transport's ``handle_request``
    does: a request in flight stops it, and it restarts when the last one completes.

    Yields False, holding nothing, when the session is already ending (the SDK should answer).
    """
    idle, timeout = transport.idle_scope, transport._idle_timeout
    if idle is None or timeout is None:
        yield True
        return
    if idle.cancel_called:
        yield False
        return
    transport._requests_in_flight += 1
    idle.deadline = math.inf
    try:
        yield True
    finally:
        transport._requests_in_flight -= 1
        if not transport._requests_in_flight:
            idle.deadline = anyio.current_time() + timeout


def countdown(manager: StreamableHTTPSessionManager, session_id: str) -> tuple[int, float] | None:
    """(requests in flight, idle deadline) of a live session with an idle timeout, else None."""
    transport = live_transport(manager, session_id)
    if transport is None or transport.idle_scope is None:
        return None
    return transport._requests_in_flight, transport.idle_scope.deadline


def session_state_problems(
    manager: StreamableHTTPSessionManager,
    session_id: str,
    idle_s: float,
    during: tuple[int, float] | None,
    since: float,
) -> list[str]:
    """How a live session's table entry and idle countdown differ from what :func:`live_transport` and
    :func:`held` expect of the SDK.

    ``idle_s`` is the manager's idle timeout; ``during`` the session's :func:`countdown` seen while the
    SDK was answering a request of it, which started at ``since`` (``anyio.current_time()``) and was
    the last request of the session.
    """
    transport = live_transport(manager, session_id)
    if transport is None or transport.mcp_session_id != session_id:
        return ["the session manager's table does not hold the probe's live session under its id"]
    idle = transport.idle_scope
    if idle is None or transport._idle_timeout != idle_s:
        return ["the session's idle countdown is not kept in idle_scope and _idle_timeout"]
    if during != (1, math.inf):
        return [
            f"while the SDK answers a request the session's (in flight, idle deadline) is {during}, not (1, inf)"
        ]
    now = anyio.current_time()
    if transport._requests_in_flight != 0 or not since + idle_s <= idle.deadline <= now + idle_s:
        return ["after the SDK answered a request the session's idle countdown did not restart"]
    with held(transport) as holding:
        if not holding or transport._requests_in_flight != 1 or idle.deadline != math.inf:
            return ["holding the session does not stop its idle countdown"]
    if (
        transport._requests_in_flight != 0
        or not now + idle_s <= idle.deadline <= anyio.current_time() + idle_s
    ):
        return ["releasing the session does not restart its idle countdown"]
    return []
