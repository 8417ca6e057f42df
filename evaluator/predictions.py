"""Read predictions: the trace DB (by run), the exported JSONL, official FinMCP-Bench prediction files
(``messages_pred``) and FinToolBench result JSONL (``tool_calls`` with step/tool_name/parameters/output).

The trace DB is read with :mod:`sqlite3` directly (read-only) using the column contract of the proxy's
``calls`` table; predictions for (run, sample, turn) are the calls ordered by ``call_group`` then ``seq``
and grouped by ``call_group``.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluator.errors import EvalInputError
from evaluator.model import Call, Prediction
from evaluator.references import _sample_id, official_groups, parse_arguments, read_records

DB_COLUMNS = ("run_id", "sample_id", "turn", "seq", "tool", "arguments", "result", "rpc_error", "status")
"""Columns of ``calls`` the evaluator needs (``call_group`` and ``trial`` are optional)."""


@dataclass
class PredictionSet:
    """Predictions of one run: per sample id, the trials in trial order."""

    by_sample: dict[str, list[Prediction]]
    format: str
    source: str
    run_id: str = ""
    warnings: list[str] = field(default_factory=list)
    records: list[Any] | None = None
    """Raw records of an official FinMCP prediction file (they embed the references)."""

    def first_trial(self) -> dict[str, Prediction]:
        """The lowest-numbered trial of every sample."""
        return {sid: trials[0] for sid, trials in self.by_sample.items() if trials}

    def trial_count(self) -> int:
        """Largest number of trials any sample has."""
        return max((len(t) for t in self.by_sample.values()), default=0)


def _add(by_sample: dict[str, list[Prediction]], pred: Prediction) -> None:
    trials = by_sample.setdefault(pred.sample_id, [])
    trials.append(pred)
    if len(trials) > 1:
        trials.sort(key=lambda p: p.trial)


# ---------------------------------------------------------------- trace DB


def load_predictions_db(db_path: str | Path, run_id: str, turn_base: int = 0) -> PredictionSet:
    """Predictions of run ``run_id`` from the proxy's trace DB (read-only)."""
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
    return _predictions_from_rows(rows, run_id, turn_base, str(path))


def _db_columns(con: sqlite3.Connection, path: Path) -> set[str]:
    cols = {r[1] for r in con.execute("PRAGMA table_info(calls)")}
    if not cols:
        raise EvalInputError(f"trace DB {path}: no table 'calls' (is this a finmcp trace DB?)")
    missing = [c for c in DB_COLUMNS if c not in cols]
    if missing:
        raise EvalInputError(f"trace DB {path}: table 'calls' lacks column(s) {', '.join(missing)}")
    return cols


def _predictions_from_rows(rows: list[tuple], run_id: str, turn_base: int, source: str) -> PredictionSet:
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
        call = _db_call(tool, arguments, result, rpc_error, status)
        turns.setdefault(turn_index, {}).setdefault(key, []).append(call)
    if no_sample:
        warnings.append(f"{no_sample} call(s) of run {run_id!r} have no sample tag and were ignored")
    by_sample: dict[str, list[Prediction]] = {}
    for (sample_id, trial), turns in grouped.items():
        n_turns = max(turns) + 1
        groups_by_turn = [
            [turns[t][k] for k in sorted(turns[t])] if t in turns else [] for t in range(n_turns)
        ]
        _add(by_sample, Prediction(sample_id, groups_by_turn, trial=trial, run_id=run_id))
    return PredictionSet(by_sample, "trace_db", source, run_id, warnings)


def _db_call(tool: Any, arguments: Any, result: Any, rpc_error: Any, status: Any) -> Call:
    args, malformed = parse_arguments(arguments)
    return Call(
        str(tool or ""),
        args,
        status=status,
        output=_db_output(result, rpc_error, status),
        malformed=malformed,
    )


def _db_output(result: Any, rpc_error: Any, status: Any) -> str:
    """The observation as a FinToolBench agent would have stored it: text, or ``{"error": ...}``."""
    res = _loads(result)
    text = ""
    is_error = False
    if isinstance(res, dict):
        is_error = bool(res.get("isError"))
        parts = [
            c.get("text", "")
            for c in res.get("content") or []
            if isinstance(c, dict) and c.get("type", "text") == "text"
        ]
        text = "\n".join(p for p in parts if isinstance(p, str))
        if not text and res.get("structuredContent") is not None:
            text = json.dumps(res["structuredContent"], ensure_ascii=False, indent=2)
    if rpc_error:
        err = _loads(rpc_error)
        message = err.get("message", err) if isinstance(err, dict) else err
        return json.dumps({"error": message}, ensure_ascii=False)
    if is_error or status == "tool_error":
        return json.dumps({"error": text or "tool error"}, ensure_ascii=False)
    if status in ("transport_error", "cancelled", "rpc_error"):
        return json.dumps({"error": status}, ensure_ascii=False)
    return text


def _loads(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


# ---------------------------------------------------------------- files


def detect_prediction_format(records: list[Any]) -> str:
    """'finmcp_official', 'fintoolbench_result' or 'exported' from the first record."""
    first = next((r for r in records if isinstance(r, dict)), None)
    if first is None:
        return "unknown"
    if "messages_pred" in first or ("messages" in first and "scenery" in first):
        return "finmcp_official"
    if "tool_calls" in first or "execution_result" in first:
        return "fintoolbench_result"
    if "turns" in first and ("sample_id" in first or "run_id" in first):
        return "exported"
    return "unknown"


def load_predictions_file(path: str | Path, run_id: str | None = None, turn_base: int = 0) -> PredictionSet:
    """Predictions from a file of any supported format (detected from the first record)."""
    if _first_jsonl_format(path) == "fintoolbench_result":
        return _from_fintoolbench(path, str(path))  # its evaluator skips unparsable lines: so do we
    records, _kind = read_records(path)
    if not isinstance(records, list) or not records:
        raise EvalInputError(f"predictions {path}: no records")
    fmt = detect_prediction_format(records)
    if fmt == "finmcp_official":
        return _from_official(records, str(path))
    if fmt == "exported":
        return _from_exported(records, str(path), run_id, turn_base)
    raise EvalInputError(
        f"predictions {path}: unknown format (expected an official FinMCP-Bench file with 'messages_pred', "
        "a FinToolBench result JSONL with 'tool_calls', or finmcp's exported JSONL with 'sample_id'/'turns')"
    )


def _first_jsonl_format(path: str | Path) -> str:
    """Format of the first parsable line of a JSONL file ('' for JSON documents or unreadable files)."""
    try:
        with open(path, encoding="utf-8-sig") as handle:
            for line in handle:
                if not line.strip():
                    continue
                if line.lstrip().startswith("["):
                    return ""
                try:
                    return detect_prediction_format([json.loads(line)])
                except json.JSONDecodeError:
                    continue
    except OSError:
        return ""
    return ""


def _from_official(records: list[Any], source: str) -> PredictionSet:
    by_sample: dict[str, list[Prediction]] = {}
    warnings: list[str] = []
    for index, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise EvalInputError(f"predictions {source}: record #{index} is not an object")
        sample_id = _sample_id(rec, index)
        if sample_id in by_sample:
            warnings.append(f"sample {sample_id!r}: duplicate record #{index} kept as an extra trial")
        pred = Prediction(
            sample_id, [], trial=len(by_sample.get(sample_id, [])), error=rec.get("error") or None
        )
        messages = rec.get("messages_pred")
        if not isinstance(messages, list):
            pred.invalid = "field 'messages_pred' missing or not a list"
        else:
            turns, ok = official_groups(messages, "messages_pred", None)
            pred.turns = [t.calls for t in turns]
            pred.answer = turns[-1].assistant if turns else None
            if not ok:
                pred.invalid = "field 'messages_pred': a tool call lacks function.name"
        _add(by_sample, pred)
    return PredictionSet(by_sample, "finmcp_official", source, "", warnings, records)


def _from_exported(records: list[Any], source: str, run_id: str | None, turn_base: int) -> PredictionSet:
    runs = sorted(
        {str(r.get("run_id")) for r in records if isinstance(r, dict) and r.get("run_id") is not None}
    )
    if run_id is None and len(runs) > 1:
        raise EvalInputError(f"predictions {source}: several runs {runs}; choose one with --run")
    by_sample: dict[str, list[Prediction]] = {}
    problems: list[str] = []
    for lineno, rec in enumerate(records, 1):
        if not isinstance(rec, dict):
            problems.append(f"line {lineno}: not an object")
            continue
        if run_id is not None and str(rec.get("run_id")) != run_id:
            continue
        pred = _exported_record(rec, lineno, turn_base, problems)
        if pred is not None:
            _add(by_sample, pred)
    if problems:
        raise EvalInputError(f"predictions {source}: {len(problems)} problem(s)", problems)
    if not by_sample:
        raise EvalInputError(f"predictions {source}: run {run_id!r} not found; runs present: {runs}")
    return PredictionSet(by_sample, "exported", source, run_id or (runs[0] if runs else ""))


def _exported_record(
    rec: dict[str, Any], lineno: int, turn_base: int, problems: list[str]
) -> Prediction | None:
    sample_id = rec.get("sample_id")
    label = f"line {lineno}: sample {sample_id!r}"
    if not isinstance(sample_id, (str, int)) or sample_id == "":
        problems.append(f"line {lineno}: field 'sample_id': missing")
        return None
    trial = rec.get("trial", 0) or 0
    if not isinstance(trial, int):
        problems.append(f"{label}: field 'trial': not an integer")
        return None
    raw_turns = rec.get("turns")
    if not isinstance(raw_turns, list):
        problems.append(f"{label}: field 'turns': missing or not a list")
        return None
    turns: dict[int, list[list[Call]]] = {}
    answer = rec.get("answer")
    for ti, raw in enumerate(raw_turns):
        path = f"turns[{ti}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("calls", []), list):
            problems.append(f"{label}: field '{path}': expected {{turn, calls: [[call, ...], ...]}}")
            continue
        number = raw.get("turn", ti + turn_base)
        if not isinstance(number, int) or number - turn_base < 0:
            problems.append(f"{label}: field '{path}.turn': not an integer >= {turn_base}")
            continue
        groups = []
        for gi, group in enumerate(raw.get("calls", [])):
            if not isinstance(group, list):
                problems.append(f"{label}: field '{path}.calls[{gi}]': a group must be a list")
                continue
            calls = []
            for ci, call in enumerate(group):
                if not isinstance(call, dict) or not isinstance(call.get("tool"), str):
                    problems.append(f"{label}: field '{path}.calls[{gi}][{ci}].tool': missing")
                    continue
                args, malformed = parse_arguments(call.get("arguments"))
                calls.append(Call(call["tool"], args, call.get("status"), call.get("output"), malformed))
            if calls:
                groups.append(calls)
        turns.setdefault(number - turn_base, []).extend(groups)
        if isinstance(raw.get("assistant"), str):
            answer = raw["assistant"]
    n_turns = max(turns) + 1 if turns else 0
    return Prediction(
        str(sample_id),
        [turns.get(t, []) for t in range(n_turns)],
        trial=trial,
        run_id=str(rec.get("run_id") or ""),
        answer=answer if isinstance(answer, str) else None,
    )


def _from_fintoolbench(path: str | Path, source: str) -> PredictionSet:
    """FinToolBench result JSONL, keyed like its evaluator: ``str(item.get('id', line_index))``, last wins."""
    data: dict[str, dict[str, Any]] = {}
    warnings: list[str] = []
    with open(path, encoding="utf-8") as handle:
        for idx, line in enumerate(handle):
            line = line.strip()
            if not line:
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                warnings.append(f"line {idx + 1}: skipped, not valid JSON ({exc})")
                continue
            if not isinstance(item, dict):
                warnings.append(f"line {idx + 1}: skipped, not an object")
                continue
            qid = str(item.get("id", idx))
            if qid in data:
                warnings.append(f"sample {qid!r}: repeated at line {idx + 1}; the later record wins")
            data[qid] = item
    problems: list[str] = []
    by_sample: dict[str, list[Prediction]] = {}
    for qid, item in data.items():
        pred = fintoolbench_prediction(qid, item, problems)
        if pred is not None:
            by_sample[qid] = [pred]
    if problems:
        raise EvalInputError(f"predictions {source}: {len(problems)} problem(s)", problems)
    return PredictionSet(by_sample, "fintoolbench_result", source, "", warnings)


def fintoolbench_prediction(qid: str, item: dict[str, Any], problems: list[str]) -> Prediction | None:
    """One FinToolBench result record as a Prediction (calls grouped by ``step``), record kept verbatim.

    Its ``error`` stays in the record: FinToolBench fails such a record, it does not drop it.
    """
    raw = item.get("tool_calls")
    trace = raw if isinstance(raw, list) else []
    steps: dict[int, list[Call]] = {}
    for i, tc in enumerate(trace):
        if not isinstance(tc, dict):
            problems.append(f"sample {qid!r}: field 'tool_calls[{i}]': not an object")
            return None
        step = tc.get("step", 0)
        if not isinstance(step, int) or isinstance(step, bool) or step < 0:
            problems.append(f"sample {qid!r}: field 'tool_calls[{i}].step': not a non-negative integer")
            return None
        args = tc.get("parameters")
        steps.setdefault(step, []).append(
            Call(
                str(tc.get("tool_name") or ""),
                args if isinstance(args, dict) else {},
                output=tc.get("output"),
            )
        )
    answer = item.get("execution_result") or item.get("answer")
    return Prediction(
        qid,
        [[steps[s] for s in sorted(steps)]],
        answer=None if answer is None else str(answer),
        question=item.get("question") or item.get("query"),
        ground_truth=None if item.get("ground_truth") is None else str(item.get("ground_truth")),
        record=item,
    )
