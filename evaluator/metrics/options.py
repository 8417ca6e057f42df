"""The knobs of one evaluation (bootstrap, seed, missing-prediction policy, judge, tool metadata)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from finmcp.evaluator.metrics.argnorm import Canonicalizer
from finmcp.evaluator.metrics.judges import Judge


@dataclass
class EvalOptions:
    """Knobs of one evaluation."""

    bootstrap: int = 2000
    seed: int = 0
    missing: str = "empty"
    """'empty': a reference sample without prediction scores as 'no calls'; 'drop': it is left out."""
    judge: Judge | None = None
    judge_repeats: int = 3
    tool_meta: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Finance tags per tool for TMR/IMR/DMR (empty: those rates are n/a)."""
    tool_meta_source: str = ""
    """Where ``tool_meta`` came from (``inventory fintool760``, ``tool manifest PATH``), for the report."""
    canon: Canonicalizer | None = None
