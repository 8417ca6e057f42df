"""Per-process call counting for the latency and fault models' seeded draws.

A draw (:func:`recordings.plumbing.seeding.unit_draw`) depends only on the seed and on what identifies
the call (tool, canonical argument key, how many times this exact call has been seen), never on
arrival order, so concurrent clients and reruns see the same latencies and the same injected faults.
"""

from __future__ import annotations

import threading
from collections import Counter


class OccurrenceCounter:
    """How many times each (tool, key) has been called so far in this process (thread-safe)."""

    def __init__(self) -> None:
        self._counts: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()

    def next(self, tool: str, key: str) -> int:
        """The 0-based occurrence number of this call, counting it."""
        with self._lock:
            n = self._counts[(tool, key)]
            self._counts[(tool, key)] = n + 1
            return n
