"""Severity of a drift finding: what it can do to a benchmark, and the audit's exit code."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

BREAKS_REPLAY = "breaks-replay"
"""A recorded call can no longer be made or answered the same way (tool removed, new required
parameter, type change, narrowed enum, the call now errors)."""
CHANGES_REFERENCES = "changes-references"
"""Calls still work but answers (so the references scored against them) change."""
COSMETIC = "cosmetic"
"""Nothing a benchmark scores changes (description, title, widened enum, optional parameter added)."""

SEVERITIES = (COSMETIC, CHANGES_REFERENCES, BREAKS_REPLAY)
"""From the least to the most severe."""
FAIL_ON_CHOICES = (*SEVERITIES, "never")
DEFAULT_FAIL_ON = CHANGES_REFERENCES
"""The default of ``--fail-on``: an answer or a definition a benchmark depends on changed."""


def rank(severity: str) -> int:
    """0 (cosmetic) to 2 (breaks-replay)."""
    return SEVERITIES.index(severity)


@dataclass
class Finding:
    """One difference: a definition change (``call`` is None) or a re-issued call's drift."""

    severity: str
    kind: str
    """e.g. ``tool-removed``, ``required-added``, ``type-changed``, ``value``, ``structure``, ``now-errors``."""
    tool: str
    path: str = "$"
    detail: str = ""
    recorded: Any = None
    live: Any = None
    call: dict[str, Any] | None = field(default=None)
    """Where a call finding comes from: ``call_id, session, sample_id, turn, group, seq``."""

    def as_json(self) -> dict[str, Any]:
        """The JSON form (docs/proxy.md, "The drift report")."""
        out: dict[str, Any] = {
            "severity": self.severity,
            "kind": self.kind,
            "tool": self.tool,
            "path": self.path,
            "detail": self.detail,
            "recorded": self.recorded,
            "live": self.live,
        }
        if self.call is not None:
            out["call"] = self.call
        return out


def worst(findings: Iterable[Finding]) -> str | None:
    """The most severe severity among ``findings`` (None when there are none)."""
    ranks = [rank(f.severity) for f in findings]
    return SEVERITIES[max(ranks)] if ranks else None


def exit_code(findings: Iterable[Finding], fail_on: str = DEFAULT_FAIL_ON) -> int:
    """1 when a finding is at or above ``fail_on`` (``never``: always 0), else 0."""
    if fail_on == "never":
        return 0
    top = worst(findings)
    return 1 if top is not None and rank(top) >= rank(fail_on) else 0
