"""The typed report of one run: what ``report.json`` holds, field for field, in the same order.

:func:`evaluator.reports.pipeline.evaluate` (and its streamed form) builds it; the Markdown and HTML
renderings, the harness's leaderboard and the command lines read it. :meth:`Report.to_json` is today's ``report.json``
byte for byte (the model keeps every key, its order, ints as ints and floats as floats), so a reader
of the file sees no change. Nested blocks whose keys are data (metric names, group values, the
released scripts' own records) stay mappings of JSON values.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, StrictFloat, StrictInt

from finmcp.evaluator.inputs.fingerprint import fingerprint_differences, not_comparable_text

Number = StrictInt | StrictFloat
"""A JSON number as computed: an int stays an int, a float a float (no coercion either way)."""

OPTIONAL_BLOCKS = (
    "official",
    "tool_selection",
    "trials",
    "fintoolbench",
    "grounding",
    "fingerprint",
    "recovery",
    "model_usage",
)
"""Top-level keys a report has only when they apply (absent from the JSON, not null)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Inputs(_Frozen):
    """Where the references and predictions came from and how they were scored."""

    references: str | None
    reference_format: str
    predictions: str | None
    prediction_format: str
    run_id: str | None
    bootstrap: int
    seed: int
    missing: str


class Dropped(_Frozen):
    """A reference left out of scoring, and why."""

    id: str
    reason: str


class Coverage(_Frozen):
    """How many references were scored, missing, dropped or skipped; predictions matching none."""

    references: int
    scored: int
    missing_predictions: int
    dropped: list[Dropped]
    skipped_references: list[Any]
    predictions_not_in_references: list[str]
    predictions_not_in_references_count: int


class Estimate(_Frozen):
    """A headline number (unrounded) with its 95% bootstrap interval (``None`` when undefined)."""

    value: Number | None
    lo: Number | None
    hi: Number | None
    n_boot: int


class OfficialNumbers(_Frozen):
    """One result of the released FinMCP-Bench script, its keys in its order, rounded like it."""

    macro_Precision: Number
    macro_Recall: Number
    macro_F1: Number
    micro_Precision: Number
    micro_Recall: Number
    micro_F1: Number
    N: int
    consist_mean: Number


class OfficialBlock(_Frozen):
    """The script's overall result and its groups (first-seen order, as its ``defaultdict``)."""

    overall: OfficialNumbers
    level1: dict[str, OfficialNumbers]
    difficulty: dict[str, OfficialNumbers]
    task: dict[str, OfficialNumbers]


class Trials(_Frozen):
    """Repeated trials: pass^k and the official overall numbers per trial."""

    trials: int
    pass_hat_k: dict[str, Number]
    official_by_trial: dict[str, OfficialNumbers]


class FintoolbenchVariant(_Frozen):
    """One FinToolBench variant: its metrics block, their CIs, and the graded records."""

    metrics: dict[str, Any]
    ci: dict[str, dict[str, Any]]
    records: list[dict[str, Any]]


class FintoolbenchBlock(_Frozen):
    """Both FinToolBench variants (official and corrected) and the judge that graded them."""

    judge: str
    judge_repeats: int
    tool_metadata: int
    tool_metadata_source: str | None
    fintoolbench: FintoolbenchVariant
    fintoolbench_corrected: FintoolbenchVariant


class Report(_Frozen):
    """The report of one run (``report.json``)."""

    version: int
    benchmark: str
    inputs: Inputs
    coverage: Coverage
    warnings: list[str]
    headline: dict[str, Estimate]
    first_error_histogram: dict[str, int]
    official: OfficialBlock | None = None
    tool_selection: OfficialBlock | None = None
    by_type: dict[str, dict[str, Any]]
    by_difficulty: dict[str, dict[str, Any]]
    by_scenario: dict[str, dict[str, Any]]
    trials: Trials | None = None
    fintoolbench: FintoolbenchBlock | None = None
    samples: list[dict[str, Any]]
    agent_behaviour: dict[str, Any]
    grounding: dict[str, Any] | None = None
    """Grounded answers (:mod:`evaluator.grounding`): a harness run's answers' claims checked against
    its tool outputs and the world; absent when the run state's answers were not given."""
    fingerprint: dict[str, Any] | None = None
    """What the run was measured on (``runs.meta``; docs/harness.md "Run fingerprints"); last, and
    absent from report.json for a run recorded without one."""
    recovery: dict[str, Any] | None = None
    """A robustness run's recovery metrics (:func:`evaluator.metrics.recovery.recovery_metrics`); absent
    for a run without a fault schedule."""
    model_usage: dict[str, Any] | None = None
    """Tokens, cost and model time of a run with model-door exchanges (evaluator/reports/model_usage.py)."""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Report:
        """The model of a report dict (``report.json`` as read back, or as assembled)."""
        return cls.model_validate(data)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict: today's ``report.json`` keys in its order, absent blocks left out."""
        data = self.model_dump()
        for key in OPTIONAL_BLOCKS:
            if data[key] is None:
                del data[key]
        return data

    def to_json(self) -> str:
        """``report.json``'s text."""
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=1, default=str)

    @property
    def official_numbers(self) -> OfficialBlock:
        """The FinMCP formulas' block: ``official`` on FinMCP references, else ``tool_selection``."""
        block = self.official if self.official is not None else self.tool_selection
        assert block is not None, "a report has an official or a tool_selection block"
        return block

    def headline_entry(self, metric: str) -> Estimate | None:
        """One headline number with its CI, or ``None`` when the report has no such metric."""
        return self.headline.get(metric)


class SampleCounts(_Frozen):
    """How many reference samples were scored on their own predictions, missing or dropped.

    ``scored``: references with a prediction, in the metrics; ``missing``: references without one,
    counted as empty predictions (``missing_as`` ``empty``, the official metric's way: they lower
    every number) or left out (``dropped``, ``--missing drop``); ``dropped``: references left out as
    error or invalid samples. ``scored + missing + dropped == references``."""

    references: int
    scored: int
    missing: int
    missing_as: str
    dropped: int

    @classmethod
    def of(cls, references: int, in_metric: int, missing: int, policy: str) -> SampleCounts:
        """From a scoring's numbers: ``in_metric`` rows scored (missing ones included under ``--missing
        empty``), ``missing`` references without a prediction, ``policy`` ``empty`` or ``drop``."""
        scored = in_metric - missing if policy == "empty" else in_metric
        missing_as = "empty" if policy == "empty" else "dropped"
        return cls(
            references=references,
            scored=scored,
            missing=missing,
            missing_as=missing_as,
            dropped=references - scored - missing,
        )

    @classmethod
    def of_report(cls, report: Report) -> SampleCounts:
        """The counts of a report (from its ``coverage`` and ``inputs.missing``)."""
        cov = report.coverage
        return cls.of(cov.references, cov.scored, cov.missing_predictions, report.inputs.missing)

    def line(self) -> str:
        """One sentence: ``scored 20 of 613 samples; 593 missing, counted as empty (...)``."""
        text = f"scored {self.scored} of {self.references} samples; "
        if not self.missing:
            text += "none missing"
        elif self.missing_as == "empty":
            text += (
                f"{self.missing} missing, counted as empty (finmcp-eval score --missing drop scores only "
                f"the {self.scored})"
            )
        else:
            text += f"{self.missing} missing, left out (--missing drop)"
        if self.dropped:
            text += f"; {self.dropped} dropped (error or invalid samples: coverage.dropped)"
        return text


def headline(report: Report) -> dict[str, Any]:
    """The one-line summary a command prints after writing a report: the official overall numbers and
    how many samples were scored and missing (:class:`SampleCounts`)."""
    return {
        "overall": report.official_numbers.overall.model_dump(),
        "samples": SampleCounts.of_report(report).model_dump(),
    }


def leaderboard_flags(rows: list[tuple[str, Report]]) -> dict[str, list[str]]:
    """The rows of a leaderboard not comparable with its first: agent -> the fingerprint parts that differ
    (:func:`evaluator.inputs.fingerprint.fingerprint_differences`; rows whose fingerprints agree, or
    that have none, are left out, so such a leaderboard is unchanged)."""
    if not rows:
        return {}
    first = rows[0][1].fingerprint
    out = {}
    for agent, report in rows[1:]:
        differ = fingerprint_differences(first, report.fingerprint)
        if differ:
            out[agent] = differ
    return out


def flag_lines(rows: list[tuple[str, Report]], flags: dict[str, list[str]]) -> list[str]:
    """One sentence per flagged row: ``noisy: not comparable with oracle: seed differ``."""
    base = rows[0][0] if rows else ""
    return [
        f"{agent}: {not_comparable_text(differ).replace(':', f' with {base}:', 1)}"
        for agent, differ in flags.items()
    ]
