"""The rows a trace store returns, typed: what each read of :class:`recordings.trace_store.TraceStore` gives.

The four table reads (``runs``, ``sessions``, ``messages``, ``calls``) return dicts with exactly the
table's columns, typed as :class:`typing.TypedDict` (their JSON is what exports, ``inspect`` and the
viewer print, key for key); the other reads return the dataclasses and named tuples below.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypedDict, cast

from finmcp.recordings.schema import CALLS_COLUMNS, JSON_CALL_COLUMNS, MESSAGE_COLUMNS

SESSION_FIELDS = (
    "run_id",
    "client_name",
    "client_version",
    "protocol_version",
    "era",
    "transport",
    "upstream",
    "started",
    "ended",
)
"""The ``sessions`` columns after ``session_key`` (what the proxy may set)."""
SESSION_COLUMNS = ("session_key", *SESSION_FIELDS)


class RunDict(TypedDict):
    """A run: its row in ``runs`` (``meta`` decoded) and counts of its calls, samples and sessions."""

    run_id: str
    created: str
    meta: Any
    calls: int
    samples: int
    sessions: int


class SessionDict(TypedDict):
    """A ``sessions`` row."""

    session_key: str
    run_id: str | None
    client_name: str | None
    client_version: str | None
    protocol_version: str | None
    era: str | None
    transport: str | None
    upstream: str | None
    started: str | None
    ended: str | None


CallDict = dict[str, Any]
"""A ``calls`` row: exactly :data:`recordings.schema.CALLS_COLUMNS`, JSON columns decoded or as text."""
MessageDict = dict[str, Any]
"""A ``messages`` row: exactly :data:`recordings.schema.MESSAGE_COLUMNS`, ``headers``/``jsonrpc_id`` decoded."""


class PredictionRow(NamedTuple):
    """One call as the evaluator groups it (the order of :meth:`TraceStore.prediction_rows`)."""

    sample_id: str | None
    trial: int | None
    turn: int | None
    call_group: int | None
    seq: int | None
    tool: str | None
    arguments: str | None
    result: str | None
    rpc_error: str | None
    status: str | None


@dataclass(frozen=True)
class InFlight:
    """A proxy (shipper origin) still holding unshipped rows of a run."""

    origin: str
    label: str | None
    pending_rows: int
    heartbeat_age_s: float


@dataclass(frozen=True)
class LoggedCall:
    """A call row (decoded) with its JSON-RPC id as stored text, as the ``messages`` table holds it."""

    call: CallDict
    jsonrpc_id_text: str | None


@dataclass
class RunSummary:
    """A run as the viewer lists it (newest first)."""

    run_id: str
    created: str
    meta: Any
    calls: int
    samples: int


@dataclass
class SampleSummary:
    """One sample of a run as the viewer's samples page lists it."""

    sample_id: str
    calls: int
    trials: int
    turns: int
    failed: int
    pending: int
    first_wall: str | None
    last_wall: str | None
    latency_ms: float
    tools: dict[str, int] = field(default_factory=dict)


def call_from_row(row: Sequence[Any], parse_json: bool = True) -> CallDict:
    """A ``calls`` row (:data:`CALLS_COLUMNS` order) as a dict, its JSON columns decoded with ``parse_json``."""
    call = dict(zip(CALLS_COLUMNS, row, strict=True))
    if parse_json:
        for name in JSON_CALL_COLUMNS:
            if call[name] is not None:
                call[name] = json.loads(call[name])
    return call


def message_from_row(row: Sequence[Any]) -> MessageDict:
    """A ``messages`` row (:data:`MESSAGE_COLUMNS` order) as a dict; ``headers`` and ``jsonrpc_id`` decoded."""
    message = dict(zip(MESSAGE_COLUMNS, row, strict=True))
    for name in ("headers", "jsonrpc_id"):
        if message[name] is not None:
            message[name] = json.loads(message[name])
    return message


def session_from_row(row: Sequence[Any]) -> SessionDict:
    """A ``sessions`` row (:data:`SESSION_COLUMNS` order) as a dict."""
    return cast(SessionDict, dict(zip(SESSION_COLUMNS, row, strict=True)))


def run_from_row(row: Sequence[Any]) -> RunDict:
    """A ``(run_id, created, meta, calls, samples, sessions)`` row as a run summary, ``meta`` decoded."""
    run_id, created, meta, n_calls, n_samples, n_sessions = row
    return {
        "run_id": run_id,
        "created": created,
        "meta": None if meta is None else json.loads(meta),
        "calls": int(n_calls),
        "samples": int(n_samples),
        "sessions": int(n_sessions),
    }


def json_or_text(value: Any) -> Any:
    """``value`` decoded when it is JSON text; any other text or value as it is."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value
