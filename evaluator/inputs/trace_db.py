"""Predictions from the proxy's trace DB (``runs.sqlite``), read-only with :mod:`sqlite3`.

The column contract is the proxy's ``calls`` table; predictions for (run, sample, trial, turn) are the
calls ordered by ``call_group`` then ``seq`` and grouped by ``call_group`` (a NULL group makes the
call a group of its own). Observations are written as a FinToolBench agent would have seen them (what
its metrics read), or in FinMCP-Bench's convention on request (:mod:`recordings.transcripts`).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from evaluator.errors import EvalInputError
from evaluator.inputs.model import Call, Prediction, PredictionSet, add_trial
from evaluator.inputs.records import parse_arguments
from recordings.transcripts import observation

DB_COLUMNS = ("run_id", "sample_id", "turn", "seq", "tool", "arguments", "result", "rpc_error", "status")
"""Columns of ``calls`` the evaluator needs (``call_group`` and ``trial`` are optional)."""


def load_predictions_db(
    db_path: str | Path, run_id: str, turn_base: int = 0, observations: str = "fintoolbench"
) -> PredictionSet:
    """Predictions of run ``run_id`` from the proxy's trace DB (read-only); each call's ``output`` is the
    observation in the ``observations`` style (``fintoolbench`` or ``finmcp``)."""
    path = Path(db_path)
    if not path.is_file():
        raise EvalInputError(f"trace DB not found: {path}")
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise EvalInputError(f"trace DB {path}: cannot open: {exc}") from None
    try:
        cols = _db_columns(con, path)
        group_col = "call_group" if "call_group" in cols else "NULL"
        trial_col = "trial" if "trial" in cols else "0"
        rows = con.execute(
            f"SELECT sample_id, {trial_col}, turn, {group_col}, seq, tool, arguments, result, rpc_error, status "
            "FROM calls WHERE run_id = ? ORDER BY sample_id, 2, turn, 4, seq",
            (run_id,),
        ).fetchall()
        if not rows:
            runs = [r[0] for r in con.execute("SELECT DISTINCT run_id FROM calls ORDER BY run_id LIMIT 50")]
            raise EvalInputError(f"trace DB {path}: run {run_id!r} not found; runs present: {runs or 'none'}")
    except sqlite3.Error as exc:
        raise EvalInputError(f"trace DB {path}: {exc}") from None
    finally:
        con.close()
    return _predictions_from_rows(rows, run_id, turn_base, str(path), observations)


def _db_columns(con: sqlite3.Connection, path: Path) -> set[str]:
    cols = {r[1] for r in con.execute("PRAGMA table_info(calls)")}
    if not cols:
        raise EvalInputError(f"trace DB {path}: no table 'calls' (is this a finmcp trace DB?)")
    missing = [c for c in DB_COLUMNS if c not in cols]
    if missing:
        raise EvalInputError(f"trace DB {path}: table 'calls' lacks column(s) {', '.join(missing)}")
    return cols


def _predictions_from_rows(
    rows: list[tuple], run_id: str, turn_base: int, source: str, style: str
) -> PredictionSet:
    warnings: list[str] = []
    grouped: dict[tuple[str, int], dict[int, dict[tuple[int, int], list[Call]]]] = {}
    no_sample = 0
    for sample_id, trial, turn, group, seq, tool, arguments, result, rpc_error, status in rows:
        if sample_id is None or sample_id == "":
            no_sample += 1
            continue
        turn_index = (turn if turn is not None else turn_base) - turn_base
        if turn_index < 0:
            raise EvalInputError(
                f"trace DB {source}: sample {sample_id!r}: field 'turn': {turn} is below the turn base "
                f"{turn_base} (use --turn-base)"
            )
        key = (0, group) if group is not None else (1, seq or 0)
        turns = grouped.setdefault((str(sample_id), int(trial or 0)), {})
        call = _db_call(tool, arguments, result, rpc_error, status, style)
        turns.setdefault(turn_index, {}).setdefault(key, []).append(call)
    if no_sample:
        warnings.append(f"{no_sample} call(s) of run {run_id!r} have no sample tag and were ignored")
    by_sample: dict[str, list[Prediction]] = {}
    for (sample_id, trial), turns in grouped.items():
        n_turns = max(turns) + 1
        groups_by_turn = [
            [turns[t][k] for k in sorted(turns[t])] if t in turns else [] for t in range(n_turns)
        ]
        add_trial(by_sample, Prediction(sample_id, groups_by_turn, trial=trial, run_id=run_id))
    return PredictionSet(by_sample, "trace_db", source, run_id, warnings)


def _db_call(tool: Any, arguments: Any, result: Any, rpc_error: Any, status: Any, style: str) -> Call:
    args, malformed = parse_arguments(arguments)
    return Call(
        str(tool or ""),
        args,
        status=status,
        output=_db_output(result, rpc_error, status, style),
        malformed=malformed,
    )


def _db_output(result: Any, rpc_error: Any, status: Any, style: str) -> str:
    """The observation as an agent of ``style`` saw it (:func:`recordings.transcripts.observation`)."""
    return observation(_loads(result), _loads(rpc_error) if rpc_error else None, status, style=style)


def _loads(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value
