"""Sequence replay (``--replay sequence``): repeated identical calls get their recorded answers in order.

VCR's model. A recording made through ``finmcp-proxy --recordings`` keeps every answer of the
upstream, in order, per (tool, canonical arguments) (``response_steps``). With ``--replay sequence``
the n-th call with the same key in one *replay session* gets the n-th recorded answer: a recorded
result as recorded (``isError`` ones too), a recorded JSON-RPC error as that error.

Replay session (:func:`replay_session`), the cursor every key's place is counted in:

- handshake era over HTTP: the MCP session, ``Mcp-Session-Id`` (Streamable HTTP) or the legacy SSE
  connection;
- stdio: the connection (one process: one client);
- any era: the session the client names in the request's ``_meta["io.finmcp/replay-session"]`` (any
  string; several programs may share one on purpose) wins over the others;
- stateless 2026-07-28 era over HTTP, where no session exists: the HTTP connection the request came
  on (client address and port: an SDK client sends a program's sequential calls over one kept-alive
  connection, and another program opens its own). Concurrent
  calls of one client may arrive on several connections, and a connection idle past the server's
  keep-alive (30 s) is closed: such a client should name its session.

A new replay session starts every key at step 0; ``_meta["io.finmcp/replay-reset"]: true`` on a
``tools/call`` starts the request's session over (every key back to step 0) before answering it.
Every result served from a sequence says where it came from:
``_meta["io.finmcp/replay"] = {"sequence": LABEL, "step": N}`` (``LABEL``: ``session:ID``,
``connection:HOST:PORT``, ``named:NAME`` or ``stdio``).

When a key's sequence runs out (``--replay-exhausted``): ``repeat-last`` (default) serves the last
recorded answer again, ``error`` answers a JSON-RPC error naming the tool and how many answers were
recorded, ``simulate`` falls through to the default lookup (the one-answer-per-key recording, then
``--miss``). A key with no recorded sequence falls through to the default lookup too.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

ExhaustedPolicy = Literal["repeat-last", "error", "simulate"]
EXHAUSTED_POLICIES: tuple[str, ...] = ("repeat-last", "error", "simulate")
ReplayMode = Literal["key", "sequence"]
REPLAY_MODES: tuple[str, ...] = ("key", "sequence")
REPLAY_META = "io.finmcp/replay"
"""Result ``_meta`` key: ``{"sequence": LABEL, "step": N}`` of a sequence-replayed answer."""
SESSION_META = "io.finmcp/replay-session"
"""Request ``_meta`` key: the replay session a stateless-era client names."""
RESET_META = "io.finmcp/replay-reset"
"""Request ``_meta`` key: ``true`` starts the request's replay session over before answering."""


@dataclass(frozen=True)
class ReplaySession:
    """One replay session: ``key`` counts its cursors, ``label`` names it in results; ``reset``: start over."""

    key: Hashable
    label: str
    reset: bool = False


def replay_session(
    stateless: bool, session_id: str | None, meta: Mapping[str, Any] | None, request: Any
) -> ReplaySession:
    """The replay session of one ``tools/call`` (see the module docstring).

    ``session_id``: the handshake-era MCP session (None over stdio); ``request``: the HTTP request
    (starlette's, with ``.client``), None over stdio.
    """
    meta = meta or {}
    reset = meta.get(RESET_META) is True
    named = meta.get(SESSION_META)
    if isinstance(named, str) and named:
        return ReplaySession(("named", named), f"named:{named}", reset)
    if not stateless and session_id is not None:
        return ReplaySession(("session", session_id), f"session:{session_id}", reset)
    client = getattr(request, "client", None) if request is not None else None
    if stateless and client is not None:
        host, port = client[0], client[1]
        return ReplaySession(("connection", host, port), f"connection:{host}:{port}", reset)
    return ReplaySession(("process",), "stdio", reset)


class SequenceCursors:
    """How many answers of each key each replay session has been served (``session``: a hashable key)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[Hashable, dict[tuple[str, str], int]] = {}

    def reset(self, session: Hashable) -> None:
        """Start a replay session over: every key back to step 0."""
        with self._lock:
            self._counts.pop(session, None)

    def next(self, session: Hashable, key: tuple[str, str]) -> int:
        """The index of the answer this call gets (0 for the first call of the key in the session)."""
        with self._lock:
            counts = self._counts.setdefault(session, {})
            index = counts.get(key, 0)
            counts[key] = index + 1
            return index

    def step(
        self, session: Hashable, key: tuple[str, str], recorded: int, exhausted: str, args_json: str
    ) -> int | str | None:
        """The recorded step this call gets out of ``recorded`` (> 0), under the ``exhausted`` policy:
        its index; None to fall through (``simulate``, once the sequence ran out); or, under ``error``,
        the JSON-RPC error message that names the tool and how many answers were recorded."""
        index = self.next(session, key)
        if index < recorded:
            return index
        if exhausted == "simulate":
            return None
        if exhausted == "error":
            return (
                f"Recorded sequence exhausted: {key[0]} {args_json} was recorded {recorded} times and this"
                f" is call {index + 1} of this session (the server runs with --replay-exhausted error)"
            )
        return recorded - 1
