"""FinToolBench JSONL: questions (``select_tools``) as references and result records as predictions.

Question ids are ``{dataset_name}_{line index}`` (what the released agent writes) unless the record
has an ``id``; result records are keyed like its evaluator does, ``str(id or line index)``, and a
later record with the same id wins.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.inputs.model import Call, Prediction, PredictionSet, Reference, Turn
from finmcp.evaluator.inputs.records import Problems


def parse_question(rec: dict[str, Any], sid: str, index: int, probs: Problems) -> Reference | None:
    """One FinToolBench question as a Reference: one unordered group of ``select_tools``, no arguments."""
    if "id" not in rec:
        name = rec.get("dataset_name")
        sid = f"{name}_{index}" if isinstance(name, str) and name else f"#{index}"
        probs.sample_id = sid
    question = rec.get("question") or rec.get("query")
    if not isinstance(question, str) or not question.strip():
        probs.add("question", "missing or not a non-empty string ('question' or 'query')")
        question = ""
    if "answer" not in rec and "ground_truth" not in rec:
        probs.add("answer", "missing ('answer' or 'ground_truth')")
    tools = rec.get("select_tools")
    if not isinstance(tools, list) or not tools:
        probs.add("select_tools", "missing or not a non-empty list")
        tools = []
    for ti, name in enumerate(tools):
        if not isinstance(name, str) or not name.strip():
            probs.add(f"select_tools[{ti}]", "not a non-empty string")
    if "tool_nums" in rec and rec["tool_nums"] != len(tools):
        probs.add("tool_nums", f"{rec['tool_nums']!r} != len(select_tools) = {len(tools)}")
    category = rec.get("category")
    if category is not None and not isinstance(category, str):
        probs.add("category", "must be a string")
    if probs.items:
        return None
    gold = rec.get("ground_truth", rec.get("answer"))
    gold_text = "" if gold is None else str(gold)
    return Reference(
        id=sid,
        type="single_tool" if len(tools) == 1 else "multi_tool",
        scenario=category or "uncategorised",
        sub_scenario=str(rec.get("dataset_name") or ""),
        turns=[Turn(question, [[Call(t, {}) for t in tools]], gold_text)],
        args_known=False,
        question=question,
        ground_truth=gold_text,
        source="fintoolbench",
    )


def result_predictions(path: str | Path, source: str) -> PredictionSet:
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
        pred = result_prediction(qid, item, problems)
        if pred is not None:
            by_sample[qid] = [pred]
    if problems:
        raise EvalInputError(f"predictions {source}: {len(problems)} problem(s)", problems)
    return PredictionSet(by_sample, "fintoolbench_result", source, "", warnings)


def result_prediction(qid: str, item: dict[str, Any], problems: list[str]) -> Prediction | None:
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
