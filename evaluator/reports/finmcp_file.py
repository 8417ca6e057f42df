"""The official FinMCP-Bench file of a run: what ``finmcp-eval export --format finmcp`` writes.

FinMCP-Bench's ``DianJin-TIR/eval/evaluation.py`` reads one JSON list in which every sample carries its
reference and the model's answer. Per sample it reads ``scenery`` (the part before the first ``-`` is the
level-1 group), ``diff_level.level``, ``task`` (optional, default ``any``; spaces become ``_``), the
names in the ``tool_calls`` of the gold ``messages`` and of ``messages_pred``; a sample without
``messages_pred`` stops it. :func:`official_file` writes every reference sample, in reference order:

- a sample read from an official FinMCP-Bench JSON file is written back as it was, every field kept;
- one of finmcp's own references (``finmcp-sim``) gets the official fields: ``id``; ``scenery``
  (``scenario-sub_scenario``); ``diff_level`` with ``turns`` (user turns), ``tool_number`` (calls; distinct
  tools in a multi-turn sample, as in the official samples), ``para_tool_call_number`` (calls made in
  groups of two or more; not in multi-turn samples) and ``level``; ``tool_list`` (the groups; a flat,
  sorted list of names in a multi-turn sample); ``question`` and ``answer`` (not in multi-turn samples);
  ``task info`` (multi-turn samples that have one); ``messages`` (each gold turn: user, one assistant
  ``tool_calls`` message per group, the tool outputs when a recordings file knows them, the reply);
  ``first-class`` and ``sub-class``; ``task`` (``single step``, ``multi step`` or ``multi turn``);
- ``messages_pred``: the run's calls on the sample (its first trial), turn by turn: the reference's
  user message, one assistant ``tool_calls`` message per group and one ``tool`` message per call with the
  observation as the official inference writes it (:func:`recordings.transcripts.observation`, style
  ``finmcp``); ``[]`` when the agent made no call. A trace holds no final answers, so there is no reply.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.inputs.finmcp_json import OFFICIAL_TASK_TO_TYPE, OutputLookup, gold_chat_turns
from finmcp.evaluator.inputs.model import Prediction, PredictionSet, Reference, ReferenceSet
from finmcp.evaluator.inputs.records import sample_id
from finmcp.evaluator.inputs.references import detect_reference_format
from finmcp.recordings.transcripts import ChatCall, ChatTurn, call_id, chat_messages

TYPE_TO_OFFICIAL_TASK = {stype: task for task, stype in OFFICIAL_TASK_TO_TYPE.items()}


def official_file(
    refs: ReferenceSet,
    preds: PredictionSet,
    raw_records: Sequence[Any] = (),
    outputs: OutputLookup | None = None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """``(records, warnings)``: every reference sample in the official shape with its ``messages_pred``.

    ``raw_records`` are the records the references were read from (official samples are copied from
    them; a multi-turn sample's ``task_info`` becomes ``task info``); ``outputs`` looks up gold tool
    outputs for the ``messages`` of finmcp's own references.
    """
    if any(ref.source == "fintoolbench" for ref in refs.samples):
        raise EvalInputError(
            "the official FinMCP-Bench file needs FinMCP-Bench references; for FinToolBench result lines "
            "use finmcp-proxy export --format fintoolbench"
        )
    raw = {sample_id(rec, i): rec for i, rec in enumerate(raw_records) if isinstance(rec, dict)}
    first = preds.first_trial()
    records: list[dict[str, Any]] = []
    warnings: list[str] = []
    for ref in refs.samples:
        source = raw.get(ref.id)
        if source is not None and detect_reference_format(source) == "finmcp_official":
            record = {k: v for k, v in source.items() if k not in ("messages_pred", "error", "error_message")}
        else:
            record = official_reference(ref, source, outputs)
            if "-" in ref.level1:
                warnings.append(
                    f"sample {ref.id!r}: scenario {ref.level1!r} contains '-': the official script's level-1 "
                    f"group is {ref.level1.split('-')[0].strip()!r}"
                )
        record["messages_pred"] = messages_pred(ref, first.get(ref.id), preds.run_id)
        records.append(record)
    unknown = sorted(set(first) - {ref.id for ref in refs.samples})
    if unknown:
        shown = ", ".join(repr(s) for s in unknown[:10]) + (" ..." if len(unknown) > 10 else "")
        warnings.append(f"{len(unknown)} traced sample(s) match no reference and were left out: {shown}")
    return records, warnings


def official_reference(
    ref: Reference, raw: Mapping[str, Any] | None, outputs: OutputLookup | None
) -> dict[str, Any]:
    """One of finmcp's own references with the fields of an official sample (see the module docstring)."""
    multi_turn = ref.type == "multi_turn"
    groups = [[c.tool for c in group] for turn in ref.turns for group in turn.calls]
    names = [name for group in groups for name in group]
    diff: dict[str, Any] = {
        "turns": len(ref.turns),
        "tool_number": len(set(names)) if multi_turn else len(names),
    }
    if not multi_turn:
        diff["para_tool_call_number"] = sum(len(group) for group in groups if len(group) > 1)
    diff["level"] = ref.difficulty
    record: dict[str, Any] = {
        "id": ref.id,
        "scenery": "-".join(part for part in (ref.level1, ref.sub_scenario) if part),
        "diff_level": diff,
        "tool_list": sorted(set(names)) if multi_turn else groups,
    }
    task_info = (raw or {}).get("task_info")
    if multi_turn and isinstance(task_info, dict):
        record["task info"] = task_info
    elif not multi_turn:
        record["question"] = ref.question or (ref.turns[0].user if ref.turns else "")
        record["answer"] = ref.ground_truth or (ref.turns[-1].assistant if ref.turns else "")
    record["messages"] = chat_messages(gold_chat_turns(ref, outputs), index=True)
    record["first-class"] = ref.scenario
    record["sub-class"] = ref.sub_scenario
    record["task"] = TYPE_TO_OFFICIAL_TASK.get(ref.type, ref.task) if ref.task == ref.type else ref.task
    return record


def messages_pred(ref: Reference, pred: Prediction | None, run_id: str) -> list[dict[str, Any]]:
    """The run's turns on ``ref`` as the official inference writes them; ``[]`` when it made no call."""
    if pred is None or not pred.calls():
        return []
    turns = []
    for t in range(max(len(ref.turns), len(pred.turns))):
        groups = pred.turns[t] if t < len(pred.turns) else []
        chat_groups = [
            [
                ChatCall(
                    call_id(run_id, ref.id, t, g, i),
                    c.tool,
                    c.arguments,
                    "" if c.output is None else str(c.output),
                )
                for i, c in enumerate(group)
            ]
            for g, group in enumerate(groups)
        ]
        turns.append(ChatTurn(ref.turns[t].user if t < len(ref.turns) else "", chat_groups))
    return chat_messages(turns, index=True)
