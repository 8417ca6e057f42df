"""What the proxy keeps of an answer past ``--max-answer``: a prefix, the length and a SHA-256 of the whole."""

from __future__ import annotations

import hashlib


class Overflow:
    """An answer past ``--max-answer``: its first ``limit`` bytes, its length so far and the SHA-256 of all of it."""

    __slots__ = ("prefix", "total", "limit", "_hash")

    def __init__(self, limit: int) -> None:
        self.prefix = bytearray()
        self.total = 0
        self.limit = limit
        self._hash = hashlib.sha256()

    def add(self, payload: bytes) -> None:
        """Count and hash one more piece; keep what of it fits in the first ``limit`` bytes."""
        room = self.limit - len(self.prefix)
        if room > 0:
            self.prefix += payload[:room]
        self.total += len(payload)
        self._hash.update(payload)

    def digest(self) -> str:
        """The SHA-256 of the whole answer, hex."""
        return self._hash.hexdigest()
