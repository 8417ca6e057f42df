"""An answer past ``--max-answer``: what the proxy keeps of it, and the reason it gives when it refuses one."""

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


def too_large(size: str, limit: int) -> str:
    """The error a refused answer gets: ``size`` as known ("N bytes", "more than N bytes")."""
    return f"upstream answer too large ({size}; over the proxy's limit of {limit} bytes, --max-answer)"
