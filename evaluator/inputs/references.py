"""Read gold references: the project's format, official FinMCP-Bench JSON, FinToolBench questions JSONL.

Every problem is reported with the file, the sample id and the field path; all problems of a file are
collected before raising one :class:`EvalInputError` (or the bad samples are skipped and listed when
``skip_invalid`` is set, which is what the official FinMCP script does on a ``KeyError``). The format
is detected per record; the official formats are read by :mod:`evaluator.inputs.finmcp_json` and
:mod:`evaluator.inputs.fintoolbench_jsonl`. Shipped benchmarks are resolved by name in the command
line layer (:func:`evaluator.benchmarks.open_references`), not here.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.inputs.finmcp_json import parse_official_reference
from finmcp.evaluator.inputs.fintoolbench_jsonl import parse_question
from finmcp.evaluator.inputs.model import DIFFICULTIES, SAMPLE_TYPES, Call, Reference, ReferenceSet, Turn
from finmcp.evaluator.inputs.records import Problems, read_records, sample_id


def detect_reference_format(record: Any) -> str:
    """'own', 'finmcp_official' or 'fintoolbench' from the keys of one record."""
    if isinstance(record, dict):
        if "turns" in record and "messages" not in record:
            return "own"
        if "select_tools" in record and "messages" not in record:
            return "fintoolbench"
        if "messages" in record:
            return "finmcp_official"
    return "unknown"


def load_references(
    path: str | Path,
    known_tools: Collection[str] | None = None,
    inventory_name: str = "",
    skip_invalid: bool = False,
) -> ReferenceSet:
    """Load and validate a reference file of any supported format.

    ``known_tools`` (e.g. ``load_inventory(name).names``) makes unknown tool names an error.
    """
    records, _kind = read_records(path)
    if not isinstance(records, list):
        raise EvalInputError(f"references {path}: expected a list of samples")
    return parse_references(records, str(path), known_tools, inventory_name, skip_invalid)


def parse_references(
    records: Iterable[Any],
    origin: str = "<memory>",
    known_tools: Collection[str] | None = None,
    inventory_name: str = "",
    skip_invalid: bool = False,
) -> ReferenceSet:
    """Validate already-parsed records (see :func:`load_references`)."""
    records = list(records)
    if not records:
        raise EvalInputError(f"references {origin}: no samples")
    fmt = detect_reference_format(records[0])
    samples: list[Reference] = []
    problems: list[str] = []
    warnings: list[str] = []
    skipped: list[dict[str, str]] = []
    seen: dict[str, int] = {}
    for index, rec in enumerate(records):
        rec_fmt = detect_reference_format(rec)
        sid = sample_id(rec, index)
        probs = Problems(sid)
        if rec_fmt == "unknown":
            probs.add("<record>", "not a reference sample (expected 'turns', 'messages' or 'select_tools')")
            ref = None
        elif rec_fmt == "own":
            ref = _parse_own(rec, sid, probs)
        elif rec_fmt == "finmcp_official":
            ref = parse_official_reference(rec, sid, probs, warnings)
        else:
            ref = parse_question(rec, sid, index, probs)
            sid = ref.id if ref else sid
        if ref is not None and known_tools is not None:
            _check_names(ref, known_tools, inventory_name, probs)
        if ref is not None and ref.id in seen:
            probs.add("id", f"duplicate id (also record #{seen[ref.id]})")
        if probs.items:
            if skip_invalid:
                skipped.append({"id": str(sid), "reason": "; ".join(probs.items)})
                continue
            problems.extend(probs.items)
            continue
        assert ref is not None
        seen[ref.id] = index
        samples.append(ref)
    if problems:
        raise EvalInputError(f"references {origin}: {len(problems)} problem(s)", problems)
    if not samples:
        raise EvalInputError(f"references {origin}: every sample was invalid and skipped")
    return ReferenceSet(samples, fmt, origin, warnings, skipped)


def _check_names(ref: Reference, known: Collection[str], inventory_name: str, probs: Problems) -> None:
    label = f"inventory {inventory_name!r}" if inventory_name else "the inventory"
    for ti, turn in enumerate(ref.turns):
        for gi, group in enumerate(turn.calls):
            for ci, call in enumerate(group):
                if call.tool not in known:
                    probs.add(
                        f"turns[{ti}].calls[{gi}][{ci}].tool", f"unknown tool {call.tool!r} (not in {label})"
                    )


# ---------------------------------------------------------------- own format


def _parse_own(rec: dict[str, Any], sid: str, probs: Problems) -> Reference | None:
    if "id" not in rec:
        probs.add("id", "missing")
    stype = rec.get("type")
    if not isinstance(stype, str) or stype not in SAMPLE_TYPES:
        probs.add("type", f"must be one of {', '.join(SAMPLE_TYPES)}, got {stype!r}")
        stype = ""
    scenario = rec.get("scenario")
    if not isinstance(scenario, str) or not scenario.strip():
        probs.add("scenario", "missing or not a non-empty string")
        scenario = ""
    for key in ("sub_scenario", "inventory"):
        if key in rec and rec[key] is not None and not isinstance(rec[key], str):
            probs.add(key, "must be a string")
    difficulty = rec.get("difficulty")
    if difficulty is not None and difficulty not in DIFFICULTIES:
        probs.add("difficulty", f"must be one of {', '.join(DIFFICULTIES)}, got {difficulty!r}")
    raw_turns = rec.get("turns")
    turns: list[Turn] = []
    if not isinstance(raw_turns, list) or not raw_turns:
        probs.add("turns", "missing or not a non-empty list")
    else:
        for ti, raw in enumerate(raw_turns):
            turn = _parse_own_turn(raw, f"turns[{ti}]", probs)
            if turn is not None:
                turns.append(turn)
    if stype == "multi_turn" and isinstance(raw_turns, list) and len(raw_turns) < 2:
        probs.add("turns", "a multi_turn sample needs at least 2 turns")
    if probs.items:
        return None
    return Reference(
        id=sid,
        type=stype,
        scenario=scenario.strip(),
        turns=turns,
        sub_scenario=rec.get("sub_scenario") or "",
        inventory=rec.get("inventory") or "",
        difficulty=difficulty or "",
        question=turns[0].user if turns else "",
        ground_truth=turns[-1].assistant if turns else "",
    )


def _parse_own_turn(raw: Any, path: str, probs: Problems) -> Turn | None:
    if not isinstance(raw, dict):
        probs.add(path, "must be an object with user, calls, assistant")
        return None
    if not isinstance(raw.get("user"), str):
        probs.add(f"{path}.user", "missing or not a string")
    if "assistant" in raw and raw["assistant"] is not None and not isinstance(raw["assistant"], str):
        probs.add(f"{path}.assistant", "must be a string")
    groups_raw = raw.get("calls")
    groups: list[list[Call]] = []
    if not isinstance(groups_raw, list):
        probs.add(f"{path}.calls", "missing or not a list of groups")
        return None
    for gi, group in enumerate(groups_raw):
        gpath = f"{path}.calls[{gi}]"
        if not isinstance(group, list) or not group:
            probs.add(gpath, "a group must be a non-empty list of calls")
            continue
        calls: list[Call] = []
        for ci, call in enumerate(group):
            cpath = f"{gpath}[{ci}]"
            if not isinstance(call, dict):
                probs.add(cpath, "a call must be an object {tool, arguments}")
                continue
            tool = call.get("tool")
            if not isinstance(tool, str) or not tool.strip():
                probs.add(f"{cpath}.tool", "missing or not a non-empty string")
                continue
            args = call.get("arguments", {})
            if args is None:
                args = {}
            if not isinstance(args, dict):
                probs.add(f"{cpath}.arguments", "must be an object")
                continue
            calls.append(Call(tool, args))
        groups.append(calls)
    return Turn(raw.get("user") or "", groups, raw.get("assistant") or "")
