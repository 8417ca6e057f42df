"""Seeded random streams: one ``random.Random`` per (seed, purpose, key), independent of call order."""

from __future__ import annotations

import hashlib
import random


def rng_for(seed: int, *parts: object) -> random.Random:
    """A ``random.Random`` seeded by blake2b(seed, parts); never uses ``hash()`` or global state."""
    text = "\x1f".join([str(seed), *(str(p) for p in parts)])
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    return random.Random(int.from_bytes(digest, "big"))


def hex_id(seed: int, *parts: object, length: int = 22) -> str:
    """A deterministic lowercase hex id (e.g. the ``call_<22 hex>`` ids of OpenAI tool calls)."""
    text = "\x1f".join([str(seed), *(str(p) for p in parts)])
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()[:length]
