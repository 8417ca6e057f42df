"""The tool calls of FinMCP-Bench sample files, paired with their results by id (read independently of
``recordings.import_finmcp``, so the importer's own pairing is checked against it)."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

FILES = ("demo_infer.json", "train_data_demo.json")


def sample_calls(path: Path, known: Collection[str]) -> list[tuple[str, dict[str, Any], Any]]:
    """(tool, arguments, result text or None) of every call to a ``known`` tool in one sample file."""
    calls = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        for field in ("messages", "messages_list"):
            messages = sample.get(field) or []
            results = {m.get("tool_call_id"): m.get("content") for m in messages if m.get("role") == "tool"}
            for message in messages:
                for tool_call in message.get("tool_calls") or []:
                    tool = tool_call["function"]["name"]
                    if tool in known:
                        arguments = json.loads(tool_call["function"]["arguments"] or "{}")
                        calls.append((tool, arguments, results.get(tool_call["id"])))
    return calls


def official_calls(
    shared_dir: Path, known: Collection[str], files: Iterable[str] = FILES
) -> tuple[list[tuple[str, dict[str, Any]]], dict[tuple[str, str], set[Any]]]:
    """(tool, arguments) of every call in the sample files, and the texts recorded per (tool, arguments)."""
    calls, texts = [], defaultdict(set)
    for name in files:
        for tool, arguments, text in sample_calls(shared_dir / "finmcp" / name, known):
            calls.append((tool, arguments))
            texts[(tool, json.dumps(arguments, sort_keys=True))].add(text)
    return calls, texts
