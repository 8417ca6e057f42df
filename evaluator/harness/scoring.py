"""Score a harness run from the trace DB with the evaluator's pipeline, and the leaderboard table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.inputs.answers import with_stored_answers
from finmcp.evaluator.inputs.model import Prediction, PredictionSet, Reference, ReferenceSet, add_trial
from finmcp.evaluator.inputs.trace_db import load_predictions_db
from finmcp.evaluator.reports.markdown import SAMPLE_COLUMNS, estimate_text, sample_cells
from finmcp.evaluator.reports.model import Report, flag_lines, leaderboard_flags
from finmcp.evaluator.reports.recovery import LEADERBOARD as RECOVERY_COLUMNS
from finmcp.evaluator.reports.recovery import leaderboard_cells as recovery_cells

LEADERBOARD = (
    ("TF1", "official.macro_F1"),
    ("TR", "official.macro_Recall"),
    ("TP", "official.macro_Precision"),
    ("EMR", "paper.EMR"),
)
"""Leaderboard columns: label and headline metric."""


def run_predictions(
    db_path: str | Path, run_id: str, state_records: list[dict[str, Any]] | None = None
) -> PredictionSet:
    """Predictions of ``run_id`` from the trace DB, with the harness's sample errors and replies attached.

    A sample the harness recorded as failed is flagged ``error`` (the evaluator drops it, as the
    official script drops error samples); a sample that made no call at all has no rows, so it
    gets an empty prediction when the run state says it finished. The turns' stop reasons and the
    agent's events about the model go to ``Prediction.agent``.
    """
    try:
        preds = load_predictions_db(db_path, run_id)
    except EvalInputError as exc:
        if "not found" not in str(exc) or not Path(db_path).is_file():
            raise
        preds = PredictionSet({}, "trace_db", str(db_path), run_id)
    with_stored_answers(preds, db_path, run_id)  # the run state's answers below are the same ones
    for record in state_records or []:
        sample, trial = str(record["sample"]), int(record.get("trial", 0))
        trials = preds.by_sample.setdefault(sample, [])
        pred = next((p for p in trials if p.trial == trial), None)
        if pred is None:
            pred = Prediction(sample, [], trial=trial, run_id=run_id)
            add_trial(preds.by_sample, pred)
        if record.get("status") == "error":
            pred.error = record.get("error") or "harness error"
        answers = record.get("answers") or []
        if answers:
            pred.answer = answers[-1]
        if record.get("stopped") or record.get("agent_events"):
            pred.agent = {"stopped": record.get("stopped") or [], "events": record.get("agent_events") or []}
    return preds


def score_run(
    refs: list[Reference],
    db_path: str | Path,
    run_id: str,
    state_records: list[dict[str, Any]] | None = None,
    inventory: Any = None,
    bootstrap: int = 2000,
    seed: int = 0,
    refs_name: str = "",
    refs_format: str = "finmcp",
) -> Report:
    """The evaluator's full report of one run.

    FinToolBench references get the inventory's finance tags as tool metadata (TMR/IMR/DMR), as
    ``finmcp-eval score --inventory`` gives them."""
    from finmcp.evaluator.metrics.argnorm import Canonicalizer, inventory_schema_lookup
    from finmcp.evaluator.metrics.fintoolbench import resolve_tool_metadata
    from finmcp.evaluator.metrics.options import EvalOptions
    from finmcp.evaluator.reports.pipeline import evaluate

    preds = run_predictions(db_path, run_id, state_records)
    canon = Canonicalizer(inventory_schema_lookup(inventory) if inventory is not None else None)
    opts = EvalOptions(bootstrap=bootstrap, seed=seed, canon=canon)
    if any(r.source == "fintoolbench" for r in refs):
        opts.tool_meta, opts.tool_meta_source = resolve_tool_metadata(None, inventory)
    from finmcp.evaluator.reports.model_usage import attach_model_usage

    report = evaluate(ReferenceSet(list(refs), refs_format, refs_name), preds, opts)
    if state_records is not None:  # the answers are in the run state: check their claims
        from finmcp.evaluator.grounding.run import grounding_block

        report = report.model_copy(
            update={"grounding": grounding_block(preds, state_records, refs, bootstrap, seed)}
        )
    return attach_model_usage(report, db_path, run_id)  # tokens and model time of model-door runs


def leaderboard(rows: list[tuple[str, Report]]) -> str:
    """A Markdown table: agent, samples scored and missing
    (:func:`~evaluator.reports.markdown.sample_cells`), and TF1/TR/TP/EMR
    with 95% bootstrap CIs; with the runs' answers, the grounded-answer rates (CP claim precision,
    INV invented-number rate, STALE stale-data rate; :mod:`evaluator.reports.grounding`)."""
    from finmcp.evaluator.reports.grounding import LEADERBOARD_COLUMNS, leaderboard_cells

    grounded = any(report.grounding is not None for _, report in rows)  # else the table is unchanged
    robust = any(report.recovery for _, report in rows)  # robustness columns only when a row has faults
    header = ["agent", *SAMPLE_COLUMNS, *(label for label, _ in LEADERBOARD)]
    header += [label for label, _ in RECOVERY_COLUMNS] if robust else []
    header += list(LEADERBOARD_COLUMNS) if grounded else []
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    flags = leaderboard_flags(rows)
    for agent, report in rows:
        cells = [agent + (" ⚠" if agent in flags else ""), *sample_cells(report)]
        cells += [estimate_text(report.headline_entry(metric)) for _, metric in LEADERBOARD]
        cells += recovery_cells(report.recovery) if robust else []
        cells += leaderboard_cells(report.grounding) if grounded else []
        lines.append("| " + " | ".join(cells) + " |")
    if flags:  # only then: a leaderboard of runs measured alike is unchanged
        lines += ["", *(f"⚠ {line}" for line in flag_lines(rows, flags))]
    return "\n".join(lines) + "\n"
