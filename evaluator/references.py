"""Read gold references: the project's format, official FinMCP-Bench JSON, FinToolBench questions JSONL.

Every problem is reported with the file, the sample id and the field path; all problems of a file are
collected before raising one :class:`EvalInputError` (or the bad samples are skipped and listed when
``skip_invalid`` is set, which is what the official FinMCP script does on a ``KeyError``).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluator.errors import EvalInputError, where
from evaluator.model import DIFFICULTIES, SAMPLE_TYPES, Call, Reference, Turn

OFFICIAL_TASK_TO_TYPE = {"single step": "single_tool", "multi step": "multi_tool", "multi turn": "multi_turn"}


@dataclass
class ReferenceSet:
    """Loaded references plus what was noticed while loading them."""

    samples: list[Reference]
    format: str
    path: str = ""
    warnings: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)

    def by_id(self) -> dict[str, Reference]:
        """References keyed by sample id."""
        return {r.id: r for r in self.samples}


class _Problems:
    """Collects problems of one sample."""

    def __init__(self, sample_id: object) -> None:
        self.sample_id = sample_id
        self.items: list[str] = []

    def add(self, field_path: str, message: str) -> None:
        self.items.append(f"{where(self.sample_id, field_path)}: {message}")


def read_records(path: str | Path) -> tuple[list[Any], str]:
    """Read a JSON document (list, or object with 'samples') or a JSONL file, optionally gzipped, or a
    shipped benchmark by name (``finmcp-sim``); return (records, kind)."""
    from evaluator.benchmarks import BENCHMARKS, load_records

    if isinstance(path, str) and path in BENCHMARKS and not Path(path).exists():
        return load_records(path), "jsonl"
    path = Path(path)
    if not path.is_file():
        raise EvalInputError(f"file not found: {path}")
    raw = path.read_bytes()
    if path.suffix == ".gz":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise EvalInputError(f"{path}: not a valid gzip file: {exc}") from None
    text = raw.decode("utf-8-sig")
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise EvalInputError(f"{path}: not valid JSON: {exc}") from None
        return doc, "json"
    if stripped.startswith("{"):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError:
            doc = None
        if isinstance(doc, dict):
            return (doc["samples"] if isinstance(doc.get("samples"), list) else [doc]), "json"
    records: list[Any] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise EvalInputError(f"{path}: line {lineno}: not valid JSON: {exc}") from None
    return records, "jsonl"


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
        sample_id = _sample_id(rec, index)
        probs = _Problems(sample_id)
        if rec_fmt == "unknown":
            probs.add("<record>", "not a reference sample (expected 'turns', 'messages' or 'select_tools')")
            ref = None
        elif rec_fmt == "own":
            ref = _parse_own(rec, sample_id, probs)
        elif rec_fmt == "finmcp_official":
            ref = _parse_official(rec, sample_id, probs, warnings)
        else:
            ref = _parse_fintoolbench(rec, sample_id, index, probs)
            sample_id = ref.id if ref else sample_id
        if ref is not None and known_tools is not None:
            _check_names(ref, known_tools, inventory_name, probs)
        if ref is not None and ref.id in seen:
            probs.add("id", f"duplicate id (also record #{seen[ref.id]})")
        if probs.items:
            if skip_invalid:
                skipped.append({"id": str(sample_id), "reason": "; ".join(probs.items)})
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


def _sample_id(rec: Any, index: int) -> str:
    if isinstance(rec, dict):
        for key in ("id", "task_id"):
            value = rec.get(key)
            if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value) != "":
                return str(value)
    return f"#{index}"


def _check_names(ref: Reference, known: Collection[str], inventory_name: str, probs: _Problems) -> None:
    label = f"inventory {inventory_name!r}" if inventory_name else "the inventory"
    for ti, turn in enumerate(ref.turns):
        for gi, group in enumerate(turn.calls):
            for ci, call in enumerate(group):
                if call.tool not in known:
                    probs.add(
                        f"turns[{ti}].calls[{gi}][{ci}].tool", f"unknown tool {call.tool!r} (not in {label})"
                    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


# ---------------------------------------------------------------- own format


def _parse_own(rec: dict[str, Any], sample_id: str, probs: _Problems) -> Reference | None:
    if "id" not in rec:
        probs.add("id", "missing")
    stype = rec.get("type")
    if stype not in SAMPLE_TYPES:
        probs.add("type", f"must be one of {', '.join(SAMPLE_TYPES)}, got {stype!r}")
    scenario = rec.get("scenario")
    if not isinstance(scenario, str) or not scenario.strip():
        probs.add("scenario", "missing or not a non-empty string")
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
        id=sample_id,
        type=stype,
        scenario=scenario.strip(),
        turns=turns,
        sub_scenario=rec.get("sub_scenario") or "",
        inventory=rec.get("inventory") or "",
        difficulty=difficulty or "",
        question=turns[0].user if turns else "",
        ground_truth=turns[-1].assistant if turns else "",
    )


def _parse_own_turn(raw: Any, path: str, probs: _Problems) -> Turn | None:
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


# ------------------------------------------------------ official FinMCP-Bench


def official_groups(messages: list[Any], path: str, probs: _Problems | None) -> tuple[list[Turn], bool]:
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
            current = Turn(_text(msg.get("content")), [], "")
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


def _official_group(tool_calls: Any, path: str, probs: _Problems | None) -> list[Call] | None:
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


def parse_arguments(raw: Any) -> tuple[dict[str, Any], bool]:
    """Arguments given as an object or a JSON string; returns (arguments, malformed)."""
    if raw is None or raw == "":
        return {}, False
    if isinstance(raw, dict):
        return raw, False
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            return {}, True
        if isinstance(value, dict):
            return value, False
    return {}, True


def _parse_official(rec: dict[str, Any], sample_id: str, probs: _Problems, warnings: list[str]):
    scenery = rec.get("scenery")
    if not isinstance(scenery, str) or not scenery.strip():
        probs.add("scenery", "missing or not a non-empty string")
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
    _warn_tool_list(rec, turns, sample_id, warnings)
    return Reference(
        id=sample_id,
        type=stype,
        scenario=parts[0].strip(),
        sub_scenario="-".join(p.strip() for p in parts[1:]),
        turns=turns,
        difficulty=level,
        task=task,
        level1=parts[0].strip(),
        question=_text(rec.get("question")) or turns[0].user,
        ground_truth=_text(rec.get("answer")) or turns[-1].assistant,
    )


def _warn_tool_list(rec: dict[str, Any], turns: list[Turn], sample_id: str, warnings: list[str]) -> None:
    tool_list = rec.get("tool_list")
    if not isinstance(tool_list, list) or not tool_list or not all(isinstance(g, list) for g in tool_list):
        return  # multi-turn samples carry a flat, sorted list: groups come from messages only
    groups = [[c.tool for c in g] for t in turns for g in t.calls]
    if groups != tool_list:
        warnings.append(
            f"{where(sample_id, 'tool_list')}: differs from the groups in messages (messages used)"
        )


# ------------------------------------------------------ FinToolBench questions


def _parse_fintoolbench(rec: dict[str, Any], sample_id: str, index: int, probs: _Problems):
    if "id" not in rec:
        name = rec.get("dataset_name")
        sample_id = f"{name}_{index}" if isinstance(name, str) and name else f"#{index}"
        probs.sample_id = sample_id
    question = rec.get("question") or rec.get("query")
    if not isinstance(question, str) or not question.strip():
        probs.add("question", "missing or not a non-empty string ('question' or 'query')")
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
        id=sample_id,
        type="single_tool" if len(tools) == 1 else "multi_tool",
        scenario=category or "uncategorised",
        sub_scenario=str(rec.get("dataset_name") or ""),
        turns=[Turn(question, [[Call(t, {}) for t in tools]], gold_text)],
        args_known=False,
        question=question,
        ground_truth=gold_text,
        source="fintoolbench",
    )
