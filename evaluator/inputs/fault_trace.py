"""A robustness run's calls as the recovery metrics need them: outcome, fault marker, timing, read-only-ness.

The ``calls`` table keeps a result's ``content``/``structuredContent``/``isError`` but not its ``_meta``;
the fault marker (``io.finmcp/fault``, docs/server.md "Fault schedules") is read back from the stored
wire messages: the server's (or the proxy's) response to the call, found by (session, JSON-RPC id), its
``result._meta`` or its JSON-RPC ``error.data``. Which tools may act comes from the run's own
``tools/list`` answers (a tool without ``annotations.readOnlyHint: true`` may act).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from finmcp.evaluator.errors import EvalInputError
from finmcp.recordings.errors import RecordingsError
from finmcp.recordings.trace_store import open_trace_store

FAULT_KEY = "io.finmcp/fault"


@dataclass(frozen=True)
class TracedCall:
    """One ``tools/call`` of a run, in the order it was logged."""

    sample: str
    trial: int
    turn: int
    tool: str
    args: str
    """The arguments as canonical JSON text (sorted keys): what "the same call" compares."""
    ok: bool
    """A result without ``isError`` and no JSON-RPC error (a silent fault still counts as ok here)."""
    marker: dict[str, Any] | None
    t_req_ns: int | None
    t_resp_ns: int | None


@dataclass(frozen=True)
class FaultTrace:
    """A run's calls and which of its tools are read-only."""

    run_id: str
    calls: list[TracedCall]
    read_only: dict[str, bool]


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return None
    return value


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _key(session: Any, jsonrpc_id: Any) -> tuple[str, str]:
    return (str(session), json.dumps(_json(jsonrpc_id)))


def _markers_and_tools(messages: list[dict[str, Any]]) -> tuple[dict[tuple[str, str], Any], dict[str, bool]]:
    markers: dict[tuple[str, str], Any] = {}
    read_only: dict[str, bool] = {}
    for message in messages:
        if message.get("direction") != "s2c" or message.get("kind") not in ("response", "error"):
            continue
        body = message.get("body") or ""
        if FAULT_KEY not in body and '"tools"' not in body:
            continue
        obj = _json(body)
        if not isinstance(obj, dict):
            continue
        result = _object(obj.get("result"))
        meta, data = _object(result.get("_meta")), _object(_object(obj.get("error")).get("data"))
        marker = meta.get(FAULT_KEY, data.get(FAULT_KEY))
        if isinstance(marker, dict):
            markers[_key(message.get("session_key"), message.get("jsonrpc_id"))] = marker
        for tool in result.get("tools") or []:
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                read_only[tool["name"]] = _object(tool.get("annotations")).get("readOnlyHint") is True
    return markers, read_only


def load_fault_trace(db: str | Path, run_id: str) -> FaultTrace:
    """Run ``run_id``'s calls with their fault markers, from the trace store ``db`` (SQLite or PostgreSQL)."""
    try:
        with open_trace_store(db, readonly=True) as store:
            rows = store.calls(run_id)
            messages = store.messages(run_id=run_id)
    except RecordingsError as exc:
        raise EvalInputError(f"trace DB {db}: {exc}") from None
    markers, read_only = _markers_and_tools(messages)
    calls = []
    for row in sorted(rows, key=lambda r: (r.get("t_req_ns") or 0, r["id"])):
        result = row.get("result")
        ok = row.get("rpc_error") is None and isinstance(result, dict) and not result.get("isError")
        args = row.get("arguments")
        calls.append(
            TracedCall(
                sample=str(row.get("sample_id")),
                trial=int(row.get("trial") or 0),
                turn=int(row.get("turn") or 0),
                tool=str(row.get("tool")),
                args=json.dumps(args, sort_keys=True, ensure_ascii=False),
                ok=ok,
                marker=markers.get(_key(row.get("session_key"), row.get("jsonrpc_id"))),
                t_req_ns=row.get("t_req_ns"),
                t_resp_ns=row.get("t_resp_ns"),
            )
        )
    return FaultTrace(run_id, calls, read_only)
