"""The model door's rows (``model_exchanges``, schema 7): the proxy's writes and the evaluator's reads.

The proxy writes each exchange twice: :func:`open_exchange` when the request goes upstream (so a
proxy killed mid-answer leaves the row, ``status = 'open'``, with the request and the answer so far
written by :func:`progress`) and :func:`close_exchange` with the whole answer, committed before the
answer's last byte reaches the agent. Both are operations for :class:`proxy.writer.TraceWriter`
(callables taking the store); the row's id travels in a :class:`Slot`.

Reads take any :class:`recordings.trace_store_api.TraceStore` on SQLite (the model door does not
ship to PostgreSQL yet: docs/proxy.md, "Model door").
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from finmcp.recordings.errors import RecordingsError
from finmcp.recordings.trace_store_api import TraceStore

STATUSES = ("open", "ok", "http_error", "upstream_error", "cut", "cancelled")
APIS = ("chat", "responses", "messages", "other")


@dataclass(slots=True)
class ExchangeRow:
    """What is known of one exchange; fields as the table's columns (``recordings.model_schema``)."""

    run_id: str | None
    sample_id: str | None
    trial: int | None
    turn: int | None
    api: str
    method: str
    path: str
    t_req_ns: int
    wall_time: str
    model: str | None = None
    stream: bool = False
    status: str = "open"
    http_status: int | None = None
    request: str | None = None
    request_headers: str | None = None
    answer: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    usage_note: str | None = None
    finish_reason: str | None = None
    tool_calls: str | None = None
    final_text: str | None = None
    error: str | None = None
    ttft_ms: float | None = None
    duration_ms: float | None = None


COLUMNS = tuple(ExchangeRow.__slots__)
_INSERT = f"INSERT INTO model_exchanges ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
_UPDATE = f"UPDATE model_exchanges SET {', '.join(c + ' = ?' for c in COLUMNS)} WHERE id = ?"


@dataclass(slots=True)
class Slot:
    """The id of an exchange's row once its insert ran (None before, or when it failed)."""

    id: int | None = None
    values: list[Any] = field(default_factory=list)


def _values(row: ExchangeRow) -> list[Any]:
    if row.status not in STATUSES:
        raise RecordingsError(f"model exchange status {row.status!r}: expected one of {STATUSES}")
    values = [getattr(row, name) for name in COLUMNS]
    values[COLUMNS.index("stream")] = int(row.stream)
    return values


def open_exchange(row: ExchangeRow, slot: Slot) -> Any:
    """An operation inserting ``row`` (status ``open``) and keeping its id in ``slot``."""
    values = _values(row)

    def op(store: Any) -> int:
        slot.id = int(store._execute(_INSERT, values).lastrowid)
        return slot.id

    return op


def close_exchange(row: ExchangeRow, slot: Slot) -> Any:
    """An operation writing the whole ``row`` over its open row (inserting it if that insert failed)."""
    values = _values(row)

    def op(store: Any) -> int:
        if slot.id is None:
            slot.id = int(store._execute(_INSERT, values).lastrowid)
        else:
            store._execute(_UPDATE, [*values, slot.id])
        return slot.id

    return op


def progress(slot: Slot, answer: str, ttft_ms: float | None) -> Any:
    """An operation storing the answer received so far on an open row (what a SIGKILL would leave)."""

    def op(store: Any) -> None:
        if slot.id is not None:
            store._execute(
                "UPDATE model_exchanges SET answer = ?, ttft_ms = ? WHERE id = ? AND status = 'open'",
                (answer, ttft_ms, slot.id),
            )

    return op


# ---------------------------------------------------------------- reads


def _require(store: TraceStore) -> None:
    if store.engine != "sqlite":
        raise RecordingsError(
            f"trace store {store.label}: model exchanges are read from the proxy's SQLite store only"
            " (the model door does not ship to PostgreSQL yet)"
        )


def _has_table(store: TraceStore) -> bool:
    rows = store._rows("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'model_exchanges'")
    return bool(rows)


def exchanges(store: TraceStore, run_id: str | None) -> list[dict[str, Any]]:
    """Every exchange of a run (``None``: the untagged ones), in the order they were sent; JSON columns parsed."""
    _require(store)
    if not _has_table(store):
        return []
    where = "run_id IS NULL" if run_id is None else "run_id = ?"
    params: Sequence[Any] = () if run_id is None else (run_id,)
    rows = store._rows(
        f"SELECT id, {', '.join(COLUMNS)} FROM model_exchanges WHERE {where} ORDER BY id", params
    )
    out = []
    for row in rows:
        item = dict(zip(("id", *COLUMNS), row, strict=True))
        item["tool_calls"] = json.loads(item["tool_calls"]) if item["tool_calls"] else []
        item["stream"] = bool(item["stream"])
        out.append(item)
    return out


def final_answers(store: TraceStore, run_id: str) -> dict[tuple[str | None, int, int | None], str]:
    """``{(sample, trial, turn): text}``: the final text of each turn's last answer that had one.

    A turn's final text is the content of a model answer that asked for no tool; when a turn has
    several (an agent that asked twice), the last one counts.
    """
    _require(store)
    if not _has_table(store):
        return {}
    rows = store._rows(
        "SELECT sample_id, trial, turn, final_text FROM model_exchanges"
        " WHERE run_id = ? AND final_text IS NOT NULL ORDER BY id",
        (run_id,),
    )
    return {(sample, trial or 0, turn): text for sample, trial, turn, text in rows}


@dataclass(slots=True)
class SampleUsage:
    """A sample's model traffic over all its turns and trials: tokens as reported, time spent waiting."""

    exchanges: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    unreported: int = 0  # exchanges whose upstream reported no usage (their tokens are not counted)
    model_ms: float = 0.0
    errors: int = 0
    by_model: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # model -> (in, out, cached)


def usage_by_sample(store: TraceStore, run_id: str) -> dict[str, SampleUsage]:
    """Per sample of ``run_id``: exchanges, tokens (input, output, cached), model time, errors."""
    _require(store)
    if not _has_table(store):
        return {}
    rows = store._rows(
        "SELECT sample_id, model, status, input_tokens, output_tokens, cached_tokens, duration_ms"
        " FROM model_exchanges WHERE run_id = ? AND sample_id IS NOT NULL ORDER BY id",
        (run_id,),
    )
    out: dict[str, SampleUsage] = {}
    for sample, model, status, tin, tout, cached, ms in rows:
        usage = out.setdefault(sample, SampleUsage())
        usage.exchanges += 1
        usage.model_ms += ms or 0.0
        if status != "ok":
            usage.errors += 1
        if tin is None and tout is None:
            usage.unreported += 1
            continue
        usage.input_tokens += tin or 0
        usage.output_tokens += tout or 0
        usage.cached_tokens += cached or 0
        key = model or "?"
        a, b, c = usage.by_model.get(key, (0, 0, 0))
        usage.by_model[key] = (a + (tin or 0), b + (tout or 0), c + (cached or 0))
    return out


def tool_ms_by_sample(store: TraceStore, run_id: str) -> dict[str, float]:
    """Per sample of ``run_id``: the milliseconds its tool calls took upstream (``calls.latency_ms`` summed)."""
    return store.tool_ms_per_sample(run_id)


TEXT_SHOWN = 4000
"""Characters of a model turn's final text the viewer gets (the store keeps it whole)."""


def sample_turns(store: TraceStore, run_id: str, sample_id: str) -> list[dict[str, Any]]:
    """The model exchanges of one sample (all trials) for the viewer's timeline, in the order they were sent.

    Each: ``id``, ``trial``, ``turn``, ``t_req_ns`` (the proxy's clock, as the calls'), ``ttft_ms``,
    ``duration_ms``, ``api``, ``model``, ``status``, the tokens, ``tools`` (names asked for),
    ``final_text`` (cut to :data:`TEXT_SHOWN` characters), ``error``. Empty on PostgreSQL (the door
    logs to SQLite only) or before schema 7.
    """
    if store.engine != "sqlite" or not _has_table(store):
        return []
    rows = store._rows(
        "SELECT id, trial, turn, t_req_ns, ttft_ms, duration_ms, api, model, status, input_tokens, output_tokens,"
        " cached_tokens, tool_calls, final_text, error FROM model_exchanges WHERE run_id = ? AND sample_id = ?"
        " ORDER BY id",
        (run_id, sample_id),
    )
    names = (
        "id", "trial", "turn", "t_req_ns", "ttft_ms", "duration_ms", "api", "model", "status", "input_tokens",
        "output_tokens", "cached_tokens", "tools", "final_text", "error",
    )  # fmt: skip
    out = []
    for row in rows:
        item = dict(zip(names, row, strict=True))
        item["trial"] = item["trial"] or 0
        item["tools"] = [c.get("name") for c in json.loads(item["tools"])] if item["tools"] else []
        text = item["final_text"]
        if text is not None and len(text) > TEXT_SHOWN:
            item["final_text"] = text[:TEXT_SHOWN] + f"… {len(text) - TEXT_SHOWN} more characters"
        out.append(item)
    return out
