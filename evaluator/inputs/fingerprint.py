"""Run fingerprints: what a run was measured on, and whether two runs can be compared.

``finmcp-eval run`` and the demo store a fingerprint in the run's ``runs.meta`` (``{"fingerprint":
{...}}``, :mod:`evaluator.harness.fingerprint`); :class:`evaluator.inputs.trace_rows.TraceRows` reads
it back with the predictions, ``report.json`` carries it, and ``compare`` and the leaderboard flag a
pair whose fingerprints differ (docs/harness.md, "Run fingerprints"). This module is the pure part:
which fields are compared and how a difference is told.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

FINGERPRINT_VERSION = 1
COMPARED = {
    "tools": "tools",
    "recordings": "recordings",
    "seed": "seed",
    "bench": "benchmark",
    "finmcp": "finmcp version",
    "faults": "fault schedule",
}
"""The fingerprint fields that make two runs' numbers comparable, and how a difference names each.

The agent's own settings (``agent``: the model and its decoding settings) are recorded, never
compared: comparing two models or two temperatures is what ``compare`` is for."""


def fingerprint_differences(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> list[str]:
    """The :data:`COMPARED` parts (their labels) both fingerprints know and that differ.

    A part one side does not know (``None``, e.g. the world seed of a server the harness did not
    start, or an old run with no fingerprint) is not a difference."""
    if not a or not b:
        return []
    return [
        label
        for key, label in COMPARED.items()
        if a.get(key) is not None and b.get(key) is not None and a.get(key) != b.get(key)
    ]


def comparability(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> dict[str, Any]:
    """``{"a": fp, "b": fp, "differ": [labels], "comparable": bool | None}`` (``None``: a side has no fingerprint)."""
    differ = fingerprint_differences(a, b)
    known = bool(a) and bool(b)
    return {
        "a": dict(a) if a else None,
        "b": dict(b) if b else None,
        "differ": differ,
        "comparable": (not differ) if known else None,
    }


def not_comparable_text(differ: list[str]) -> str:
    """``not comparable: tools, seed differ`` (the mark a delta gets when fingerprints differ)."""
    return f"not comparable: {', '.join(differ)} differ"


def fingerprint_of_meta(meta: Any) -> dict[str, Any] | None:
    """The fingerprint in a run's ``meta`` (a JSON object), or None."""
    if isinstance(meta, Mapping) and isinstance(meta.get("fingerprint"), Mapping):
        return dict(meta["fingerprint"])
    return None
