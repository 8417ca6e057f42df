"""The stored final answers of a run, and attaching them to its predictions: the ONE place scoring looks.

Answers reach the trace store's ``answers`` table (:mod:`recordings.answers`) from the harness (its
agents' replies, outside agents' included), from ``finmcp-eval answers FILE`` (agents run
elsewhere); the proxy's model door keeps each turn's final model text in ``model_exchanges``
(:func:`recordings.model_exchanges.final_answers`). Whatever wrote them, ``finmcp-eval score`` and the
harness's scoring read them here (:func:`stored_answers`), so FinToolBench's soft score and CSS see
every agent's answers, not only finmcp's own. Precedence, per (sample, trial, turn): the ``answers``
table's row first; the model door's final text only where that key has no row (source ``"model"``).
"""

from __future__ import annotations

from pathlib import Path

from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.inputs.model import Prediction, PredictionSet, add_trial
from finmcp.recordings.answers import StoredAnswer, answers_of
from finmcp.recordings.errors import RecordingsError
from finmcp.recordings.model_exchanges import final_answers
from finmcp.recordings.postgres.connection import is_postgres_url
from finmcp.recordings.trace_store import open_trace_store

Answers = dict[tuple[str, int], dict[int, StoredAnswer]]
"""(sample, trial) -> turn -> the stored answer of that turn."""


def stored_answers(db: str | Path, run: str) -> Answers:
    """Every stored answer of ``run`` in the trace store ``db`` (none on ``postgresql://`` stores):
    the ``answers`` table's rows, and the model door's final texts for the turns that have no row."""
    try:
        rows = answers_of(db, run)
        door = model_door_answers(db, run)
    except RecordingsError as exc:
        raise EvalInputError(str(exc)) from None
    out: Answers = {}
    for row in rows:
        out.setdefault((row.sample_id, row.trial), {})[row.turn] = row
    for row in door:
        out.setdefault((row.sample_id, row.trial), {}).setdefault(row.turn, row)  # a stored row wins
    return out


def model_door_answers(db: str | Path, run: str) -> list[StoredAnswer]:
    """The model door's final text of each tagged turn of ``run`` (source ``"model"``; none on PostgreSQL)."""
    if is_postgres_url(db):
        return []
    with open_trace_store(db, readonly=True) as store:
        texts = final_answers(store, run)
    return [
        StoredAnswer(run, sample, trial, turn, text, source="model")
        for (sample, trial, turn), text in sorted(texts.items(), key=lambda kv: str(kv[0]))
        if sample is not None and turn is not None
    ]


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
