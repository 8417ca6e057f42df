"""Stable seed derivation: every seeded draw in finmcp starts from one blake2b hash of its parts.

The parts (a seed, a purpose, keys) are joined as ``str`` with ``"\\x1f"`` and hashed with blake2b, so a
value depends only on them: never on call order, ``hash()`` randomisation, the process or the machine.
The derivations below differ only in digest size and in what they make of the digest; their outputs
are part of finmcp's determinism promise (the synthetic world, latencies, faults, benchmark ids).
"""

from __future__ import annotations

import hashlib
import random

SEPARATOR = "\x1f"
_SCALE = float(1 << 53)


def digest(*parts: object, size: int = 8) -> bytes:
    """blake2b of the parts joined as text with ``"\\x1f"`` (``size`` bytes)."""
    text = SEPARATOR.join(map(str, parts))
    return hashlib.blake2b(text.encode("utf-8"), digest_size=size).digest()


def derive_seed(seed: int, *parts: object) -> int:
    """A 64-bit integer derived from ``seed`` and ``parts`` (e.g. an entity kind and its key)."""
    return int.from_bytes(digest(seed, *parts), "big")


def rng_for(seed: int, *parts: object) -> random.Random:
    """A fresh ``random.Random`` seeded by :func:`derive_seed` (one stream per seed and parts)."""
    return random.Random(derive_seed(seed, *parts))


def unit_draw(seed: int, *parts: object) -> float:
    """A uniform number in (0, 1) determined by ``seed`` and ``parts`` (53 bits of the seed)."""
    return ((derive_seed(seed, *parts) >> 11) + 0.5) / _SCALE


def hex_token(*parts: object, size: int = 12) -> str:
    """The lowercase hex digest of the parts (``2 * size`` characters), e.g. for stable URL tokens."""
    return digest(*parts, size=size).hex()
