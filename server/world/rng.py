"""Small numeric helpers shared by every world builder.

Every entity draws from its own ``random.Random`` seeded by a stable hash of
``(world seed, entity kind, entity key)`` (:func:`recordings.plumbing.seeding.rng_for`). Builders
therefore never depend on the order in which entities were requested, nor on the process that builds them.

Only arithmetic that IEEE-754 defines exactly is used on the random draws
(``+ - * /``, ``round``, ``math.sqrt``); libm functions such as ``log``/``cos``
(used by ``random.gauss``) are avoided so series are bit-identical across machines.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")

_SQRT3 = 1.7320508075688772  # sqrt(3): scales a sum of 4 uniforms to unit variance


def normal(rng: random.Random) -> float:
    """An approximately standard-normal draw (Irwin-Hall with 4 uniforms; exact arithmetic only)."""
    r = rng.random
    return (r() + r() + r() + r() - 2.0) * _SQRT3


def pick(rng: random.Random, items: Sequence[T]) -> T:
    """One element chosen uniformly."""
    return items[rng.randrange(len(items))]


def weighted_pick(rng: random.Random, items: Sequence[T], weights: Sequence[float]) -> T:
    """One element chosen with the given relative weights (cumulative scan, no libm)."""
    total = sum(weights)
    x = rng.random() * total
    acc = 0.0
    for item, w in zip(items, weights, strict=True):
        acc += w
        if x < acc:
            return item
    return items[-1]


def sample(rng: random.Random, items: Sequence[T], k: int) -> list[T]:
    """``k`` distinct elements in draw order (partial Fisher-Yates; stable across Python versions)."""
    pool = list(items)
    k = min(k, len(pool))
    for i in range(k):
        j = i + rng.randrange(len(pool) - i)
        pool[i], pool[j] = pool[j], pool[i]
    return pool[:k]


def split_basis_points(rng: random.Random, n: int, total: int = 10000, floor: int = 1) -> list[int]:
    """``n`` positive integers summing exactly to ``total`` (used for weights in basis points)."""
    if n <= 0:
        return []
    raw = [0.2 + rng.random() for _ in range(n)]
    s = sum(raw)
    parts = [max(floor, int(total * x / s)) for x in raw]
    diff = total - sum(parts)
    i = 0
    while diff != 0:
        idx = i % n
        if diff > 0:
            parts[idx] += 1
            diff -= 1
        elif parts[idx] > floor:
            parts[idx] -= 1
            diff += 1
        i += 1
    return parts


def money(x: float) -> float:
    """Round an amount of money to 2 decimals."""
    return round(x, 2)


def ratio(x: float) -> float:
    """Round a ratio to 4 decimals."""
    return round(x, 4)


def proportional_bp(raw: Sequence[float], total: int = 10000) -> list[int]:
    """Integers proportional to ``raw`` summing exactly to ``total`` (largest remainder)."""
    s = sum(raw)
    exact = [total * x / s for x in raw]
    parts = [int(x) for x in exact]
    order = sorted(range(len(raw)), key=lambda i: (-(exact[i] - parts[i]), i))
    for i in order[: total - sum(parts)]:
        parts[i] += 1
    return parts


_MASK = (1 << 64) - 1


def unit(h: int) -> float:
    """A uniform float in [0, 1) from a 64-bit integer (splitmix64 finaliser; integer arithmetic only)."""
    z = (h + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return ((z ^ (z >> 31)) >> 11) / 9007199254740992.0
