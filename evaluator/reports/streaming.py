"""Score a run straight from a trace store, one sample at a time, with bounded memory.

:func:`evaluate_trace` gives the report :func:`evaluator.reports.pipeline.evaluate` gives for the
same run, number for number, without holding every call: rows arrive in the evaluator's order
(:mod:`evaluator.inputs.trace_rows`), each sample's trials are built, scored (the main table's row of the
first trial, and each trial's official counts and paper EMR for pass^k) and dropped. What stays is O(samples): one score row per sample,
a name-only copy of its first trial (the report's ``pred_groups``) and its evidence (outputs cut short). Rows are put in reference order
at the end, exactly as :func:`~evaluator.inputs.pairing.pair_up` orders them.

FinToolBench references are not streamed: their report holds every graded record (tool outputs
included), so the caller loads those runs whole.
"""

from __future__ import annotations

from typing import Any

from finmcp.evaluator.inputs.model import Call, Prediction, PredictionSet, ReferenceSet
from finmcp.evaluator.inputs.pairing import pair_up, require_matches
from finmcp.evaluator.inputs.trace_db import iter_sample_predictions
from finmcp.evaluator.inputs.trace_rows import TraceRows
from finmcp.evaluator.metrics.argnorm import Canonicalizer
from finmcp.evaluator.metrics.finmcp import compute_official, multiset_counts, names_of, paper_emr
from finmcp.evaluator.metrics.options import EvalOptions
from finmcp.evaluator.metrics.stats import pass_hat_k
from finmcp.evaluator.metrics.table import Scorer
from finmcp.evaluator.reports.evidence import sample_evidence
from finmcp.evaluator.reports.model import Report
from finmcp.evaluator.reports.pipeline import report_dict


class NameOnly:
    """Name-only copies of predictions; every call of one tool shares one :class:`Call`."""

    def __init__(self) -> None:
        self.calls: dict[str, Call] = {}

    def call(self, tool: str) -> Call:
        """The shared name-only call of ``tool``."""
        found = self.calls.get(tool)
        if found is None:
            found = self.calls[tool] = Call(tool)
        return found

    def copy(self, pred: Prediction) -> Prediction:
        """``pred`` with each call reduced to its tool name (what the report's sample rows show)."""
        turns = [[[self.call(c.tool) for c in group] for group in groups] for groups in pred.turns]
        return Prediction(pred.sample_id, turns, trial=pred.trial, run_id=pred.run_id)


def evaluate_trace(
    refs: ReferenceSet, rows: TraceRows, turn_base: int = 0, opts: EvalOptions | None = None
) -> Report:
    """The report of run ``rows.run_id`` against ``refs``, streaming the rows (FinMCP references)."""
    opts = opts or EvalOptions()
    canon = opts.canon or Canonicalizer()
    by_id = refs.by_id()
    scorer = Scorer(canon)
    scored: dict[str, tuple] = {}
    first: dict[str, list[Prediction]] = {}
    by_trial: dict[int, list[tuple[str, str, str, int, int, int, int]]] = {}
    successes: list[list[int]] = []
    most_trials = 0
    warnings: list[str] = []
    names = NameOnly()
    evidence: dict[str, dict[str, Any]] = {}
    # FinMCP metrics never read a tool's output; the report's evidence shows the first trial's
    stream = rows.rows(outputs=True)
    samples = iter_sample_predictions(stream, rows.run_id, turn_base, rows.source, "fintoolbench", warnings)
    for trials in samples:
        sid = trials[0].sample_id
        most_trials = max(most_trials, len(trials))
        first[sid] = [names.copy(trials[0])]
        ref = by_id.get(sid)
        if ref is None:
            continue
        evidence[sid] = sample_evidence(ref, trials[0])  # outputs cut to OUTPUT_LIMIT characters
        scored[sid] = scorer.score(ref, trials[0])
        gold = [t.calls for t in ref.turns]
        gold_names = names_of(gold)
        successes.append([paper_emr(p.turns, gold) for p in trials])
        for pred in trials:  # pass^k needs each trial's official counts only, not the extended metrics
            pred_names = names_of(pred.turns)
            tp, fp, fn = multiset_counts(pred_names, gold_names)
            official = (ref.level1, ref.difficulty, ref.task, tp, fp, fn, int(pred_names == gold_names))
            by_trial.setdefault(pred.trial, []).append(official)
    preds = PredictionSet(first, "trace_db", rows.source, rows.run_id, warnings)
    preds.fingerprint = rows.fingerprint()
    pairing = pair_up(refs, preds, opts.missing)
    require_matches(pairing, refs, preds)
    for gold_ref, paired in pairing.pairs:
        scorer.append(scored[gold_ref.id] if paired is not None else scorer.score(gold_ref, None))
    trials_info = None
    if most_trials >= 2:
        trials_info = {
            "trials": most_trials,
            "pass_hat_k": pass_hat_k(successes),
            "official_by_trial": {
                str(trial): compute_official(rows)["overall"] for trial, rows in sorted(by_trial.items())
            },
        }
    return Report.from_dict(report_dict(refs, preds, pairing, scorer.finish(), trials_info, opts, evidence))
