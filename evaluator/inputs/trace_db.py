"""Predictions from a trace store: the proxy's SQLite file (read-only) or a ``postgresql://`` store.

The column contract is the proxy's ``calls`` table; predictions for (run, sample, trial, turn) are the
calls ordered by ``call_group`` then ``seq`` and grouped by ``call_group`` (a NULL group makes the
call a group of its own). Observations are written as a FinToolBench agent would have seen them (what
its metrics read), or in FinMCP-Bench's convention on request (:mod:`recordings.transcripts`).

Rows are read in the evaluator's order (sample, trial, turn, group, seq, row id) and turned into
predictions one sample at a time (:func:`iter_sample_predictions`), so a scorer can stream a run of any
size (:mod:`evaluator.reports.streaming`); :func:`load_predictions_db` collects them all.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.inputs.model import Call, Prediction, PredictionSet, add_trial
from finmcp.evaluator.inputs.records import parse_arguments
from finmcp.evaluator.inputs.trace_rows import TraceRows, open_trace_rows
from finmcp.recordings.trace_types import json_or_text
from finmcp.recordings.transcripts import observation

NO_OUTPUTS = "none"
"""The observation style that leaves ``output`` None (scoring that never reads tool outputs)."""

__all__ = [
    "NO_OUTPUTS",
    "TraceRows",
    "collect_predictions",
    "iter_sample_predictions",
    "load_predictions_db",
    "open_trace_rows",
]


def load_predictions_db(
    db: str | Path, run_id: str, turn_base: int = 0, observations: str = "fintoolbench"
) -> PredictionSet:
    """Predictions of run ``run_id`` from a trace store (a SQLite path, read-only, or a
    ``postgresql://`` URL); each call's ``output`` is the observation in the ``observations`` style
    (``fintoolbench`` or ``finmcp``)."""
    with open_trace_rows(db, run_id) as rows:
        return collect_predictions(rows, turn_base, observations)


def collect_predictions(
    rows: TraceRows, turn_base: int = 0, observations: str = "fintoolbench"
) -> PredictionSet:
    """Every prediction of an opened run (see :func:`load_predictions_db`)."""
    warnings: list[str] = []
    by_sample: dict[str, list[Prediction]] = {}
    stream = iter_sample_predictions(rows.rows(), rows.run_id, turn_base, rows.source, observations, warnings)
    for trials in stream:
        for pred in trials:
            add_trial(by_sample, pred)
    preds = PredictionSet(by_sample, "trace_db", rows.source, rows.run_id, warnings)
    preds.fingerprint = rows.fingerprint()
    return preds


def iter_sample_predictions(
    rows: Iterable[tuple],
    run_id: str,
    turn_base: int,
    source: str,
    style: str,
    warnings: list[str],
) -> Iterator[list[Prediction]]:
    """The trials of each sample (in trial order), one sample at a time, from rows in the evaluator's
    order: ``(sample_id, trial, turn, call_group, seq, tool, arguments, result, rpc_error, status)``.

    ``style`` is ``fintoolbench``, ``finmcp`` or :data:`NO_OUTPUTS`. Untagged calls are skipped; a warning counting them is appended to ``warnings`` at the end.
    """
    no_sample = 0
    current: str | None = None
    trials: dict[int, dict[int, dict[tuple[int, int], list[Call]]]] = {}
    for sample_id, trial, turn, group, seq, tool, arguments, result, rpc_error, status in rows:
        if sample_id is None or sample_id == "":
            no_sample += 1
            continue
        sid = str(sample_id)
        if sid != current:
            if current is not None:
                yield _sample(current, trials, run_id)
            current, trials = sid, {}
        turn_index = (turn if turn is not None else turn_base) - turn_base
        if turn_index < 0:
            raise EvalInputError(
                f"trace DB {source}: sample {sample_id!r}: field 'turn': {turn} is below the turn base "
                f"{turn_base} (use --turn-base)"
            )
        key = (0, group) if group is not None else (1, seq or 0)
        turns = trials.setdefault(int(trial or 0), {})
        call = _db_call(tool, arguments, result, rpc_error, status, style)
        turns.setdefault(turn_index, {}).setdefault(key, []).append(call)
    if current is not None:
        yield _sample(current, trials, run_id)
    if no_sample:
        warnings.append(f"{no_sample} call(s) of run {run_id!r} have no sample tag and were ignored")


def _sample(
    sample_id: str, trials: dict[int, dict[int, dict[tuple[int, int], list[Call]]]], run_id: str
) -> list[Prediction]:
    out = []
    for trial in sorted(trials):
        turns = trials[trial]
        n_turns = max(turns) + 1
        groups_by_turn = [
            [turns[t][k] for k in sorted(turns[t])] if t in turns else [] for t in range(n_turns)
        ]
        out.append(Prediction(sample_id, groups_by_turn, trial=trial, run_id=run_id))
    return out


def _db_call(tool: Any, arguments: Any, result: Any, rpc_error: Any, status: Any, style: str) -> Call:
    args, malformed = parse_arguments(arguments)
    return Call(
        str(tool or ""),
        args,
        status=status,
        output=None if style == NO_OUTPUTS else _db_output(result, rpc_error, status, style),
        malformed=malformed,
    )


def _db_output(result: Any, rpc_error: Any, status: Any, style: str) -> str:
    """The observation as an agent of ``style`` saw it (:func:`recordings.transcripts.observation`)."""
    return observation(
        json_or_text(result), json_or_text(rpc_error) if rpc_error else None, status, style=style
    )
