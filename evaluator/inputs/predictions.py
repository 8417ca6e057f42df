"""Read prediction files: the exported JSONL, official FinMCP-Bench prediction files (``messages_pred``)
and FinToolBench result JSONL (``tool_calls`` with step/tool_name/parameters/output).

The format is detected from the first record; the official formats are read by
:mod:`evaluator.inputs.finmcp_json` and :mod:`evaluator.inputs.fintoolbench_jsonl`. The proxy's trace DB
is read by :mod:`evaluator.inputs.trace_db`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.inputs.finmcp_json import official_predictions
from finmcp.evaluator.inputs.fintoolbench_jsonl import result_predictions
from finmcp.evaluator.inputs.model import Call, Prediction, PredictionSet, add_trial
from finmcp.evaluator.inputs.records import parse_arguments, read_records


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
        return result_predictions(path, str(path))  # its evaluator skips unparsable lines: so do we
    records, _kind = read_records(path)
    if not isinstance(records, list) or not records:
        raise EvalInputError(f"predictions {path}: no records")
    fmt = detect_prediction_format(records)
    if fmt == "finmcp_official":
        return official_predictions(records, str(path))
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
            add_trial(by_sample, pred)
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
