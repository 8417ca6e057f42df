"""Official FinMCP-Bench JSON: references (``messages`` + ``scenery``) and predictions (``messages_pred``).

Turns are split at every user message; each assistant ``tool_calls`` message is one group. The
official script's extraction rules are kept: ``tool_calls`` of any message count, and a call without
``function.name`` makes the script skip the prediction (a ``KeyError`` there). The other way round,
:func:`gold_chat_turns` writes a reference's turns as the official ``messages`` hold them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from finmcp.evaluator.errors import EvalInputError, where
from finmcp.evaluator.inputs.model import Call, Prediction, PredictionSet, Reference, Turn, add_trial
from finmcp.evaluator.inputs.records import Problems, parse_arguments, sample_id, text
from finmcp.recordings.transcripts import ChatCall, ChatTurn, call_id

OFFICIAL_TASK_TO_TYPE = {"single step": "single_tool", "multi step": "multi_tool", "multi turn": "multi_turn"}
OutputLookup = Callable[[str, dict[str, Any]], str | None]
"""(tool, arguments) -> the gold output text, or None when unknown."""


def gold_chat_turns(
    ref: Reference, outputs: OutputLookup | None = None, upto: int | None = None
) -> list[ChatTurn]:
    """The reference's turns (the first ``upto``) as transcript turns: the user text, the gold groups
    (call ids ``call_id(sample, turn, group, index)``, outputs from ``outputs``, ``""`` when unknown)
    and the gold reply."""
    turns = []
    for t, gold in enumerate(ref.turns[:upto]):
        groups = [
            [
                ChatCall(call_id(ref.id, t, g, i), c.tool, c.arguments, _gold_output(outputs, c))
                for i, c in enumerate(group)
            ]
            for g, group in enumerate(gold.calls)
        ]
        turns.append(ChatTurn(gold.user, groups, gold.assistant))
    return turns


def _gold_output(outputs: OutputLookup | None, call: Call) -> str:
    text = outputs(call.tool, call.arguments) if outputs is not None else None
    return text if text is not None else ""


def official_groups(messages: list[Any], path: str, probs: Problems | None) -> tuple[list[Turn], bool]:
    """Split OpenAI-style messages into turns at every user message; one assistant tool_calls = one group.

    Returns (turns, ok). With ``probs`` set, malformed calls are reported; without it they make ``ok``
    False (the official script raises ``KeyError`` and skips such a prediction).
    """
    turns: list[Turn] = []
    ok = True
    current: Turn | None = None
    for mi, msg in enumerate(messages):
        if not isinstance(msg, dict):
            if probs is not None:
                probs.add(f"{path}[{mi}]", "a message must be an object")
            continue
        role = msg.get("role")
        if role == "user":
            current = Turn(text(msg.get("content")), [], "")
            turns.append(current)
        tool_calls = msg.get("tool_calls")
        if tool_calls:  # the official extraction takes tool_calls of any message, whatever its role
            if current is None:  # calls before any user message: an implicit first turn
                current = Turn("", [], "")
                turns.append(current)
            group = _official_group(tool_calls, f"{path}[{mi}].tool_calls", probs)
            if group is None:
                ok = False
                continue
            current.calls.append(group)
        elif role == "assistant" and current is not None and isinstance(msg.get("content"), str):
            current.assistant = msg["content"]
    return turns, ok


def _official_group(tool_calls: Any, path: str, probs: Problems | None) -> list[Call] | None:
    if not isinstance(tool_calls, list):
        if probs is not None:
            probs.add(path, "must be a list")
        return None
    group: list[Call] = []
    for ci, tc in enumerate(tool_calls):
        cpath = f"{path}[{ci}].function"
        fn = tc.get("function") if isinstance(tc, dict) else None
        if not isinstance(fn, dict) or "name" not in fn:
            if probs is not None:
                probs.add(f"{cpath}.name", "missing")
            return None
        name = fn["name"]
        if probs is not None and (not isinstance(name, str) or not name.strip()):
            probs.add(f"{cpath}.name", f"not a non-empty string: {name!r}")
            continue
        args, malformed = parse_arguments(fn.get("arguments"))
        if malformed and probs is not None:
            probs.add(f"{cpath}.arguments", "not a JSON object (string) or object")
            continue
        group.append(Call(str(name), args, malformed=malformed))
    return group


def parse_official_reference(
    rec: dict[str, Any], sid: str, probs: Problems, warnings: list[str]
) -> Reference | None:
    """One official FinMCP-Bench sample as a Reference (None when ``probs`` got problems)."""
    scenery = rec.get("scenery")
    if not isinstance(scenery, str) or not scenery.strip():
        probs.add("scenery", "missing or not a non-empty string")
        scenery = ""
    diff = rec.get("diff_level")
    level = ""
    if diff is not None:
        if not isinstance(diff, dict) or not isinstance(diff.get("level"), str) or not diff["level"]:
            probs.add("diff_level.level", "missing or not a string")
        else:
            level = diff["level"]
    task_raw = rec.get("task")
    if task_raw is not None and not isinstance(task_raw, str):
        probs.add("task", "must be a string")
        task_raw = None
    messages = rec.get("messages")
    if not isinstance(messages, list) or not messages:
        probs.add("messages", "missing or not a non-empty list")
        return None
    turns, _ok = official_groups(messages, "messages", probs)
    if not turns:
        probs.add("messages", "no user message")
    if probs.items:
        return None
    task = (task_raw if task_raw is not None else "any").replace(" ", "_")
    stype = OFFICIAL_TASK_TO_TYPE.get(task_raw or "")
    if stype is None:
        calls = sum(len(g) for t in turns for g in t.calls)
        stype = "multi_turn" if len(turns) > 1 else ("single_tool" if calls == 1 else "multi_tool")
    parts = scenery.split("-")
    _warn_tool_list(rec, turns, sid, warnings)
    return Reference(
        id=sid,
        type=stype,
        scenario=parts[0].strip(),
        sub_scenario="-".join(p.strip() for p in parts[1:]),
        turns=turns,
        difficulty=level,
        task=task,
        level1=parts[0].strip(),
        question=text(rec.get("question")) or turns[0].user,
        ground_truth=text(rec.get("answer")) or turns[-1].assistant,
    )


def _warn_tool_list(rec: dict[str, Any], turns: list[Turn], sid: str, warnings: list[str]) -> None:
    tool_list = rec.get("tool_list")
    if not isinstance(tool_list, list) or not tool_list or not all(isinstance(g, list) for g in tool_list):
        return  # multi-turn samples carry a flat, sorted list: groups come from messages only
    groups = [[c.tool for c in g] for t in turns for g in t.calls]
    if groups != tool_list:
        warnings.append(f"{where(sid, 'tool_list')}: differs from the groups in messages (messages used)")


def official_predictions(records: list[Any], source: str) -> PredictionSet:
    """Predictions of an official FinMCP-Bench prediction file (``messages_pred``); records kept."""
    by_sample: dict[str, list[Prediction]] = {}
    warnings: list[str] = []
    for index, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise EvalInputError(f"predictions {source}: record #{index} is not an object")
        sid = sample_id(rec, index)
        if sid in by_sample:
            warnings.append(f"sample {sid!r}: duplicate record #{index} kept as an extra trial")
        pred = Prediction(sid, [], trial=len(by_sample.get(sid, [])), error=rec.get("error") or None)
        messages = rec.get("messages_pred")
        if not isinstance(messages, list):
            pred.invalid = "field 'messages_pred' missing or not a list"
        else:
            turns, ok = official_groups(messages, "messages_pred", None)
            pred.turns = [t.calls for t in turns]
            pred.answer = turns[-1].assistant if turns else None
            if not ok:
                pred.invalid = "field 'messages_pred': a tool call lacks function.name"
        add_trial(by_sample, pred)
    return PredictionSet(by_sample, "finmcp_official", source, "", warnings, records)
