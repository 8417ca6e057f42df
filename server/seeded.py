"""Seeded, order-independent random draws for the latency and fault models.

A draw depends only on the seed and on what identifies the call (tool, canonical argument key, how many
times this exact call has been seen), never on arrival order, so concurrent clients and reruns see the
same latencies and the same injected faults.
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter

_SCALE = float(1 << 53)


def unit_draw(seed: int, *parts: object) -> float:
    """A uniform number in (0, 1) determined by ``seed`` and ``parts``."""
    text = "\x1f".join([str(seed), *map(str, parts)]).encode("utf-8")
    value = int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big") >> 11
    return (value + 0.5) / _SCALE


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
