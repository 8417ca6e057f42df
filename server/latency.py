"""Latency model: how long the server waits before answering a tool call.

``--latency`` accepts ``none``, ``recorded`` (the recording's own latency, else the fallback),
``fixed:MS`` or ``lognormal:P50,P99`` (milliseconds). Draws are seeded per call (see
:mod:`server.seeded`), so a rerun with the same seed waits the same times.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from finmcp.recordings.plumbing.seeding import unit_draw

DEFAULT_LATENCY = "fixed:50"
"""Default: a small fixed wait, so concurrent calls visibly overlap in traces."""

_Z99 = NormalDist().inv_cdf(0.99)
_STANDARD = NormalDist()


class LatencySpecError(ValueError):
    """A ``--latency`` value that cannot be parsed."""


@dataclass(frozen=True)
class LatencyModel:
    """A parsed ``--latency`` setting; :meth:`delay_ms` gives one call's wait."""

    kind: str = "fixed"
    fixed_ms: float = 50.0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    fallback_ms: float = 50.0
    seed: int = 0

    @property
    def is_zero(self) -> bool:
        """True when no call ever waits."""
        return self.kind == "none" or (self.kind == "fixed" and self.fixed_ms == 0)

    def delay_ms(self, tool: str, key: str, occurrence: int, recorded_ms: float | None = None) -> float:
        """Milliseconds to wait for this call (deterministic in seed, tool, key and occurrence)."""
        if self.kind == "none":
            return 0.0
        if self.kind == "fixed":
            return self.fixed_ms
        if self.kind == "recorded":
            return self.fallback_ms if recorded_ms is None else float(recorded_ms)
        if self.p99_ms == self.p50_ms:
            return self.p50_ms
        sigma = (math.log(self.p99_ms) - math.log(self.p50_ms)) / _Z99
        z = _STANDARD.inv_cdf(unit_draw(self.seed, "latency", tool, key, occurrence))
        return self.p50_ms * math.exp(sigma * z)


def _number(text: str, spec: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise LatencySpecError(f"--latency {spec!r}: {text!r} is not a number of milliseconds") from None
    if not math.isfinite(value) or value < 0:
        raise LatencySpecError(f"--latency {spec!r}: {text!r} must be a finite number >= 0")
    return value


def parse_latency(spec: str, seed: int = 0, fallback_ms: float = 50.0) -> LatencyModel:
    """Parse ``none | recorded | fixed:MS | lognormal:P50,P99``; errors say what is expected."""
    text = spec.strip()
    kind, _, rest = text.partition(":")
    if kind == "none" and not rest:
        return LatencyModel(kind="none", fixed_ms=0.0, seed=seed)
    if kind == "recorded" and not rest:
        return LatencyModel(kind="recorded", fallback_ms=fallback_ms, seed=seed)
    if kind == "fixed" and rest:
        return LatencyModel(kind="fixed", fixed_ms=_number(rest, spec), seed=seed)
    if kind == "lognormal" and rest:
        parts = rest.split(",")
        if len(parts) != 2:
            raise LatencySpecError(f"--latency {spec!r}: expected lognormal:P50,P99 (two numbers)")
        p50, p99 = (_number(p, spec) for p in parts)
        if p50 <= 0 or p99 < p50:
            raise LatencySpecError(f"--latency {spec!r}: need 0 < P50 <= P99")
        return LatencyModel(kind="lognormal", p50_ms=p50, p99_ms=p99, seed=seed)
    raise LatencySpecError(
        f"--latency {spec!r}: expected none, recorded, fixed:MS or lognormal:P50,P99 (milliseconds)"
    )
