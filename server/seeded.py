"""What keys the latency and fault models' seeded draws: the call, never the order calls arrive in.

A draw (:func:`recordings.plumbing.seeding.unit_draw`) depends only on the seed and on what identifies
the call: tool, canonical argument key and an *occurrence* number. Where that number comes from
depends on the protocol era, so that N server replicas answer exactly like one server:

- stateless era (2026-07-28 and later): the request itself, ``params._meta["io.finmcp/attempt"]``
  (a non-negative integer a client sends to ask for a fresh draw on a retry; absent means 0). No
  process state is involved, so any replica gives the same bytes for the same request;
- handshake era: how many times this exact call was made before *in the same MCP session*
  (:class:`SessionOccurrences`, keyed by ``Mcp-Session-Id``); a session lives on one replica, so
  replicas need affinity by ``Mcp-Session-Id`` and then agree with one server;
- direct calls of :meth:`server.service.ToolService.call` without an occurrence: counted per
  service (:class:`OccurrenceCounter`).
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from collections.abc import Mapping
from typing import Any

ATTEMPT_META_KEY = "io.finmcp/attempt"
"""``params._meta`` key of a stateless-era ``tools/call``: the client's attempt number (0, 1, ...)."""


class OccurrenceCounter:
    """How many times each (tool, key) has been called so far (thread-safe)."""

    def __init__(self) -> None:
        self._counts: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()

    def next(self, tool: str, key: str) -> int:
        """The 0-based occurrence number of this call, counting it."""
        with self._lock:
            n = self._counts[(tool, key)]
            self._counts[(tool, key)] = n + 1
            return n


def request_attempt(meta: Mapping[str, Any] | None) -> int:
    """The stateless-era occurrence of a request: its ``io.finmcp/attempt`` (a non-negative int) or 0."""
    value = (meta or {}).get(ATTEMPT_META_KEY)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return 0


class SessionOccurrences:
    """One :class:`OccurrenceCounter` per MCP session id (the most recent ``limit`` sessions)."""

    def __init__(self, limit: int = 4096) -> None:
        self._by_session: OrderedDict[str, OccurrenceCounter] = OrderedDict()
        self._limit = limit
        self._lock = threading.Lock()

    def counter(self, session_id: str | None) -> OccurrenceCounter | None:
        """The counter of ``session_id`` (created on first use); None without a session id."""
        if not session_id:
            return None
        with self._lock:
            counter = self._by_session.get(session_id)
            if counter is None:
                counter = self._by_session[session_id] = OccurrenceCounter()
                if len(self._by_session) > self._limit:
                    self._by_session.popitem(last=False)
            else:
                self._by_session.move_to_end(session_id)
            return counter


def session_id_of(request: Any) -> str | None:
    """The MCP session a handshake-era HTTP request belongs to: ``Mcp-Session-Id`` (Streamable HTTP) or
    the ``session_id`` query parameter (legacy SSE); None for stdio (one connection per process)."""
    headers = getattr(request, "headers", None)
    value = headers.get("mcp-session-id") if headers is not None else None
    if not value:
        query = getattr(request, "query_params", None)
        value = query.get("session_id") if query is not None else None
    return str(value) if value else None
