"""Helpers of the evaluator tests: a trace DB writer and official-format sample builders."""

from __future__ import annotations

import copy
import json
import sqlite3
from pathlib import Path
from typing import Any

CALLS_DDL = """
CREATE TABLE calls (
  id INTEGER PRIMARY KEY, run_id TEXT, sample_id TEXT, turn INTEGER, session_key TEXT, client_name TEXT,
  protocol_version TEXT, jsonrpc_id TEXT, seq INTEGER, tool TEXT, arguments TEXT, result TEXT,
  rpc_error TEXT, status TEXT, t_req_ns INTEGER, t_resp_ns INTEGER, wall_time TEXT, latency_ms REAL,
  call_group INTEGER, group_source TEXT, trial INTEGER DEFAULT 0
)
"""


def write_trace_db(path: Path, rows: list[dict[str, Any]]) -> Path:
    """A trace DB following the proxy's ``calls`` column contract, filled with ``rows``."""
    con = sqlite3.connect(path)
    con.execute(CALLS_DDL)
    for seq, row in enumerate(rows):
        result = row.get("result", {"content": [{"type": "text", "text": "{}"}], "isError": False})
        con.execute(
            "INSERT INTO calls (run_id, sample_id, turn, seq, tool, arguments, result, rpc_error, status, "
            "call_group, group_source, trial) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                row["run"],
                row["sample"],
                row.get("turn", 0),
                row.get("seq", seq),
                row["tool"],
                json.dumps(row.get("arguments", {}), ensure_ascii=False),
                None if result is None else json.dumps(result, ensure_ascii=False),
                None if row.get("rpc_error") is None else json.dumps(row["rpc_error"]),
                row.get("status", "ok"),
                row.get("group", 0),
                "explicit",
                row.get("trial", 0),
            ),
        )
    con.commit()
    con.close()
    return path


def assistant_call(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """An assistant message issuing ``calls`` in parallel (one group)."""
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
            }
            for i, (name, args) in enumerate(calls)
        ],
    }


def official_sample(
    sample_id: Any, turns: list[list[list[str]]], level: str | None = "easy", task: str = "multi step"
):
    """An official-format sample whose messages hold ``turns`` (groups of tool names)."""
    messages: list[dict[str, Any]] = []
    for t, groups in enumerate(turns):
        messages.append({"role": "user", "content": f"question {t}"})
        for group in groups:
            messages.append(assistant_call(*[(name, {"k": i}) for i, name in enumerate(group)]))
            for i, _ in enumerate(group):
                messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": "{}"})
        messages.append({"role": "assistant", "content": f"answer {t}", "tool_calls": None})
    sample = {"id": sample_id, "scenery": "场景A-二级-三级", "task": task, "messages": messages}
    if level is not None:
        sample["diff_level"] = {"turns": len(turns), "level": level}
    return sample


def predicted_messages(sample: dict[str, Any], turns: list[list[list[str]]]) -> list[dict[str, Any]]:
    """A ``messages_pred`` list with the sample's user messages and the predicted call groups."""
    users = [m for m in sample["messages"] if m.get("role") == "user"]
    out: list[dict[str, Any]] = []
    for t, user in enumerate(users):
        out.append(copy.deepcopy(user))
        for group in turns[t] if t < len(turns) else []:
            out.append(assistant_call(*[(name, {"k": i}) for i, name in enumerate(group)]))
        out.append({"role": "assistant", "content": "done", "tool_calls": None})
    return out
