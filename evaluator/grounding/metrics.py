"""A run's grounded-answer metrics, with bootstrap CIs over answers (:mod:`evaluator.metrics.stats`).

- claim precision: supported / checkable claims (checkable: supported, unsupported or stale);
- invented-number rate: unsupported / checkable numeric claims (numbers, %, amounts, counts …);
- stale-data rate: stale / checkable numeric claims;
- not checkable: claims (and unreadable answers) the checker could not judge, a count.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from finmcp.evaluator.grounding.check import AnswerCheck
from finmcp.evaluator.metrics.stats import Bootstrap, MetricSpec


def _ratio(num: str, den: str) -> Any:
    def fn(sums: dict[Any, float], n: int) -> float | None:
        return sums[num] / sums[den] if sums[den] else None

    return fn


METRICS = (
    MetricSpec("claim_precision", ("supported", "checkable"), _ratio("supported", "checkable")),
    MetricSpec(
        "invented_number_rate", ("numeric_unsupported", "numeric"), _ratio("numeric_unsupported", "numeric")
    ),
    MetricSpec("stale_data_rate", ("numeric_stale", "numeric"), _ratio("numeric_stale", "numeric")),
)
"""The three rates, each a ratio of sums over answers."""

MAX_LISTED = 200
"""Answers listed with their claims in a report (those with a flagged claim first)."""


def summarize(
    checks: Sequence[tuple[dict[str, Any], AnswerCheck]],
    bootstrap: int = 2000,
    seed: int = 0,
    world_seed: int = 0,
) -> dict[str, Any]:
    """The ``grounding`` block of a report: totals, the rates with 95% CIs, and per answer its claims.

    ``checks``: (where — sample, trial, turn —, the answer's check) pairs."""
    columns: dict[str, list[float]] = {
        k: [] for k in ("supported", "checkable", "numeric", "numeric_unsupported", "numeric_stale")
    }
    totals = {"answers": len(checks), "claims": 0, "supported": 0, "unsupported": 0, "stale": 0}
    totals.update(not_checkable=0, unreadable_answers=0)
    answers = []
    for where, check in checks:
        counts = check.counts()
        checkable = counts["supported"] + counts["unsupported"] + counts["stale"]
        for key, value in (
            ("supported", counts["supported"]),
            ("checkable", checkable),
            ("numeric", counts["numeric"]),
            ("numeric_unsupported", counts["numeric_unsupported"]),
            ("numeric_stale", counts["numeric_stale"]),
        ):
            columns[key].append(float(value))
        totals["claims"] += len(check.claims)
        for verdict in ("supported", "unsupported", "stale", "not_checkable"):
            totals[verdict] += counts[verdict]
        totals["unreadable_answers"] += check.unreadable is not None
        answers.append({**where, **check.to_dict()})
    boot = Bootstrap(["all"] * len(checks), bootstrap, seed)
    cis = boot.ci(columns, METRICS)
    sums = {k: sum(v) for k, v in columns.items()}
    rates = {
        m.name: {"value": m.fn(sums, len(checks)), "lo": cis[m.name]["lo"], "hi": cis[m.name]["hi"]}
        for m in METRICS
    }
    answers.sort(key=lambda a: -(a["counts"]["unsupported"] + a["counts"]["stale"]))
    return {
        "world_seed": world_seed,
        "bootstrap": bootstrap,
        **totals,
        "numeric_claims": int(sums["numeric"]),
        **rates,
        "answers_listed": min(len(answers), MAX_LISTED),
        "per_answer": answers[:MAX_LISTED],
    }
