"""Sequence replay (``--replay sequence``): repeated identical calls get their recorded answers in order.

VCR's model. A recording made through ``finmcp-proxy --recordings`` keeps every answer of the
upstream, in order, per (tool, canonical arguments) (``response_steps``). With ``--replay sequence``
the n-th call with the same key in one *replay session* gets the n-th recorded answer: a recorded
result as recorded (``isError`` ones too), a recorded JSON-RPC error as that error.

Replay session: one MCP session of the server — an ``Mcp-Session-Id`` (Streamable HTTP, handshake
era), one legacy SSE connection, one stdio process; in the stateless 2026-07-28 era, where every
request stands alone, one client (``clientInfo`` name and version of the request's ``_meta``). So
two clients replaying at once each get the whole sequence, and a client that reconnects starts over.

When a key's sequence runs out (``--replay-exhausted``): ``repeat-last`` (default) serves the last
recorded answer again, ``error`` answers a JSON-RPC error naming the tool and how many answers were
recorded, ``simulate`` falls through to the default lookup (the one-answer-per-key recording, then
``--miss``). A key with no recorded sequence falls through to the default lookup too.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Literal

ExhaustedPolicy = Literal["repeat-last", "error", "simulate"]
EXHAUSTED_POLICIES: tuple[str, ...] = ("repeat-last", "error", "simulate")
ReplayMode = Literal["key", "sequence"]
REPLAY_MODES: tuple[str, ...] = ("key", "sequence")


class SequenceCursors:
    """How many answers of each key each replay session has been served (``session``: a hashable key)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[Hashable, dict[tuple[str, str], int]] = {}

    def next(self, session: Hashable, key: tuple[str, str]) -> int:
        """The index of the answer this call gets (0 for the first call of the key in the session)."""
        with self._lock:
            counts = self._counts.setdefault(session, {})
            index = counts.get(key, 0)
            counts[key] = index + 1
            return index
