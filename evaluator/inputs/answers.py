"""The stored final answers of a run, and attaching them to its predictions: the ONE place scoring looks.

Answers reach the trace store's ``answers`` table (:mod:`recordings.answers`) from the harness (its
agents' replies, outside agents' included), from ``finmcp-eval answers FILE`` (agents run
elsewhere) and, later, from the proxy's model door (a turn's final model text). Whatever wrote them,
``finmcp-eval score`` and the harness's scoring read them here (:func:`stored_answers`), so
FinToolBench's soft score and CSS see every agent's answers, not only finmcp's own.
"""

from __future__ import annotations

from pathlib import Path

from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.inputs.model import Prediction, PredictionSet, add_trial
from finmcp.recordings.answers import StoredAnswer, answers_of
from finmcp.recordings.errors import RecordingsError

Answers = dict[tuple[str, int], dict[int, StoredAnswer]]
"""(sample, trial) -> turn -> the stored answer of that turn."""


def stored_answers(db: str | Path, run: str) -> Answers:
    """Every stored answer of ``run`` in the trace store ``db`` (none on ``postgresql://`` stores)."""
    try:
        rows = answers_of(db, run)
    except RecordingsError as exc:
        raise EvalInputError(str(exc)) from None
    out: Answers = {}
    for row in rows:
        out.setdefault((row.sample_id, row.trial), {})[row.turn] = row
    return out


def attach_answers(preds: PredictionSet, answers: Answers) -> int:
    """Give each (sample, trial) with stored answers its last turn's answer (``Prediction.answer``);
    a last turn stored with an error flags the prediction ``error`` (scored as a failed sample, as the
    harness's failures are). A sample with answers but no call gets an empty prediction. Returns how
    many predictions got an answer."""
    count = 0
    for (sample, trial), turns in sorted(answers.items()):
        last = turns[max(turns)]
        trials = preds.by_sample.setdefault(sample, [])
        pred = next((p for p in trials if p.trial == trial), None)
        if pred is None:
            pred = Prediction(sample, [], trial=trial, run_id=preds.run_id)
            add_trial(preds.by_sample, pred)
        if last.answer is not None:
            pred.answer = last.answer
            count += 1
        if last.error:
            pred.error = last.error
    return count


def with_stored_answers(preds: PredictionSet, db: str | Path, run: str) -> PredictionSet:
    """``preds`` with the stored answers of ``run`` in ``db`` attached (:func:`attach_answers`)."""
    attach_answers(preds, stored_answers(db, run))
    return preds
