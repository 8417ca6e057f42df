"""Where the audit's recorded side comes from: a run in a trace store, or a recordings file.

A run gives its logged calls and, as the recorded definitions, the ``tools/list`` answers logged in its
sessions. A recordings file gives its recorded responses as calls (one per stored response) and its
recorded declaration (``RecordingStore.declaration``) when the file has one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from finmcp.recordings.trace_store import describe, open_trace_store


@dataclass
class Recorded:
    """The recorded side: calls (rows shaped like the ``calls`` table), the recorded tool definitions
    (None when nothing was recorded) and a note for the report."""

    calls: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    label: str
    notes: list[str] = field(default_factory=list)


def tools_from_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The tools of the ``tools/list`` answers among logged messages (pages of one listing joined;
    across sessions, the last definition of a name wins); None when no listing was logged."""
    asked: set[tuple[Any, Any]] = set()
    found: dict[str, dict[str, Any]] = {}
    seen = False
    for m in messages:
        key = (m.get("session_key"), json.dumps(m.get("jsonrpc_id")))
        if m.get("direction") == "c2s" and m.get("kind") == "request" and m.get("method") == "tools/list":
            asked.add(key)
        elif m.get("direction") == "s2c" and m.get("kind") == "response" and key in asked:
            try:
                body = json.loads(m["body"]) if isinstance(m.get("body"), str) else m.get("body")
            except ValueError:
                continue
            tools = (body or {}).get("result", {}).get("tools") if isinstance(body, dict) else None
            if isinstance(tools, list):
                seen = True
                found.update({str(t.get("name")): t for t in tools if isinstance(t, dict)})
    return list(found.values()) if seen else None


def from_trace(db: str, run: str, sample: str | None = None) -> Recorded:
    """A run's calls (optionally one sample's) and its logged tool definitions."""
    with open_trace_store(db) as store:
        calls = store.calls(run, sample)
        messages = store.messages(run_id=run)
    tools = tools_from_messages(messages)
    notes = (
        [] if tools is not None else [f"run {run}: no tools/list answer was logged; definitions not compared"]
    )
    return Recorded(calls, tools, f"run {run} in {describe(db)}", notes)


def from_recordings(path: str | Path, inventory: str | None = None) -> Recorded:
    """A recordings file's responses as calls, and its recorded declaration when it has one."""
    from finmcp.recordings import RecordingStore

    with RecordingStore.open(str(path)) as store:
        rows = list(store.iter_responses(inventory))
        tools, notes = _declared_tools(store, inventory, rows)
    calls = []
    for i, row in enumerate(rows, 1):
        result = row["result"] if isinstance(row["result"], dict) else {}
        calls.append(
            {
                "id": i,
                "sample_id": row["inventory"],
                "session_key": row["inventory"],
                "trial": None,
                "turn": None,
                "call_group": i,
                "seq": i,
                "tool": row["tool"],
                "arguments": row["arguments"],
                "result": result,
                "rpc_error": None,
                "status": "ok",
            }
        )
    return Recorded(calls, tools, f"recordings {path}", notes)


def _declared_tools(
    store: Any, inventory: str | None, rows: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]] | None, list[str]]:
    declared = getattr(store, "declared_servers", None)
    declaration = getattr(store, "declaration", None)
    if declared is None or declaration is None:
        return None, ["this recordings file format records no server declaration: definitions not compared"]
    names = [inventory] if inventory else list(declared()) or sorted({r["inventory"] for r in rows})
    tools: dict[str, dict[str, Any]] = {}
    for name in names:
        found = declaration(name)
        listed = (found or {}).get("tools") if isinstance(found, dict) else None
        if isinstance(listed, list):
            tools.update({str(t.get("name")): t for t in listed if isinstance(t, dict)})
    if not tools:
        return None, ["no declaration was recorded in this file: definitions not compared"]
    return list(tools.values()), []
