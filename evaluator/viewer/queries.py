"""Every query the viewer runs against a trace store, each bounded by an index.

- runs: :func:`list_runs` (counts come from the ``calls (run_id, sample_id, ...)`` index);
- samples of a run: :func:`sample_page`, keyset-paginated on ``sample_id`` (``after`` = the last id
  of the previous page): it walks the run's index entries in order and stops after ``limit + 1``
  matching samples, so a page costs the same on the first and the thousandth page;
- one sample: :func:`sample_calls` (an index range), and its live increment :func:`new_calls`
  (rows with ``id > since`` plus the rows the page still shows as pending);
- :func:`change_cursor`: ``max(id)`` of ``calls`` (the primary key's last entry) - it moves when a call
  is logged, so a page polls it cheaply and refetches only then.

The SQL is plain enough for SQLite and PostgreSQL alike (``?`` placeholders, see
:mod:`evaluator.viewer.source`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from evaluator.viewer.source import Source
from recordings.schema import CALLS_COLUMNS
from recordings.transcripts import failure

CALL_COLUMNS = tuple(
    c for c in CALLS_COLUMNS if c not in ("run_id", "sample_id", "client_name", "protocol_version")
)
"""The ``calls`` columns a sample's page shows (the run and sample are the page's own)."""
PAGE_MAX = 500
OUTPUT_MAX_CHARS = 200_000
"""A call's output larger than this is sent cut (with a note): a page stays responsive."""
FAILED_STATUSES = ("tool_error", "rpc_error", "transport_error", "cancelled")


def list_runs(source: Source) -> list[dict[str, Any]]:
    """Every run: id, created, meta (decoded), calls, samples; newest first."""
    rows = source.rows(
        "SELECT r.run_id, r.created, r.meta,"
        " (SELECT count(*) FROM calls c WHERE c.run_id = r.run_id),"
        " (SELECT count(DISTINCT c.sample_id) FROM calls c WHERE c.run_id = r.run_id)"
        " FROM runs r ORDER BY r.created DESC, r.run_id"
    )
    return [
        {"run_id": run, "created": created, "meta": _json(meta), "calls": calls, "samples": samples}
        for run, created, meta, calls, samples in rows
    ]


def run_exists(source: Source, run_id: str) -> bool:
    """True when the run has a row in ``runs`` or any call."""
    if source.rows("SELECT 1 FROM runs WHERE run_id = ?", [run_id]):
        return True
    return bool(source.rows("SELECT 1 FROM calls WHERE run_id = ? LIMIT 1", [run_id]))


def change_cursor(source: Source) -> int:
    """The newest call id of the whole store (0 when empty)."""
    value = source.rows("SELECT max(id) FROM calls")[0][0]
    return int(value or 0)


@dataclass(frozen=True)
class SampleFilter:
    """What the samples page asks for; every field optional."""

    status: str | None = None
    """Samples with at least one call of this status."""
    tool: str | None = None
    """Samples with at least one call to this tool."""
    failed: bool = False
    """Samples with at least one failed call (tool, RPC or transport error, cancelled)."""
    search: str | None = None
    """Substring of the sample id or of a tool name (case-insensitive)."""

    def having(self) -> tuple[str, list[Any]]:
        """The ``HAVING`` clause (``""`` for none) and its parameters."""
        clauses: list[str] = []
        params: list[Any] = []
        if self.status:
            clauses.append("sum(CASE WHEN status = ? THEN 1 ELSE 0 END) > 0")
            params.append(self.status)
        if self.tool:
            clauses.append("sum(CASE WHEN tool = ? THEN 1 ELSE 0 END) > 0")
            params.append(self.tool)
        if self.failed:
            marks = ", ".join("?" for _ in FAILED_STATUSES)
            clauses.append(f"sum(CASE WHEN status IN ({marks}) THEN 1 ELSE 0 END) > 0")
            params.extend(FAILED_STATUSES)
        if self.search:
            pattern = "%" + _like_escape(self.search.lower()) + "%"
            clauses.append(
                "sum(CASE WHEN lower(sample_id) LIKE ? ESCAPE '\\' OR lower(tool) LIKE ? ESCAPE '\\'"
                " THEN 1 ELSE 0 END) > 0"
            )
            params.extend([pattern, pattern])
        return (" HAVING " + " AND ".join(clauses) if clauses else ""), params


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


_SUMMARY = (
    "SELECT sample_id, count(*), count(DISTINCT trial), max(turn),"
    " sum(CASE WHEN status IN ('tool_error', 'rpc_error', 'transport_error', 'cancelled') THEN 1 ELSE 0 END),"
    " sum(CASE WHEN status = 'pending' THEN 1 ELSE 0 END), min(wall_time), max(wall_time),"
    " sum(latency_ms)"
    " FROM calls WHERE run_id = ?"
)


def sample_page(
    source: Source,
    run_id: str,
    after: str | None,
    limit: int,
    where: SampleFilter,
    only: Sequence[str] | None = None,
) -> tuple[list[dict[str, Any]], str | None]:
    """One page of a run's samples in sample-id order after ``after``, and the next page's cursor.

    ``only`` restricts the page to those sample ids (a score filter, already sorted and cut to the
    ids after ``after``).
    """
    limit = max(1, min(limit, PAGE_MAX))
    sql = _SUMMARY
    params: list[Any] = [run_id]
    if only is not None:
        if not only:
            return [], None
        sql += f" AND sample_id IN ({', '.join('?' for _ in only)})"
        params.extend(only)
    elif after is not None:
        sql += " AND sample_id > ?"
        params.append(after)
    else:
        sql += " AND sample_id IS NOT NULL"
    having, having_params = where.having()
    sql += " GROUP BY sample_id" + having + " ORDER BY sample_id LIMIT ?"
    rows = source.rows(sql, [*params, *having_params, limit + 1])
    more = len(rows) > limit
    rows = rows[:limit]
    samples = [
        {
            "sample_id": sid,
            "calls": n,
            "trials": trials,
            "turns": (last_turn + 1) if last_turn is not None else 0,
            "failed": failed or 0,
            "pending": pending or 0,
            "first_wall": first,
            "last_wall": last,
            "latency_ms": round(latency or 0.0, 3),
        }
        for sid, n, trials, last_turn, failed, pending, first, last, latency in rows
    ]
    _add_tools(source, run_id, samples)
    return samples, (samples[-1]["sample_id"] if more and samples else None)


def _add_tools(source: Source, run_id: str, samples: list[dict[str, Any]]) -> None:
    if not samples:
        return
    ids = [s["sample_id"] for s in samples]
    rows = source.rows(
        f"SELECT sample_id, tool, count(*) FROM calls WHERE run_id = ? AND sample_id IN ({', '.join('?' for _ in ids)})"
        " GROUP BY sample_id, tool ORDER BY sample_id, tool",
        [run_id, *ids],
    )
    tools: dict[str, dict[str, int]] = {}
    for sid, tool, n in rows:
        tools.setdefault(sid, {})[tool or ""] = n
    for sample in samples:
        sample["tools"] = tools.get(sample["sample_id"], {})


def sample_calls(source: Source, run_id: str, sample_id: str) -> list[dict[str, Any]]:
    """Every call of one sample (all trials), in trial, turn, seq order; JSON columns decoded."""
    rows = source.rows(
        f"SELECT {', '.join(CALL_COLUMNS)} FROM calls WHERE run_id = ? AND sample_id = ?"
        " ORDER BY trial, turn, seq, id",
        [run_id, sample_id],
    )
    return [call_view(row) for row in rows]


def new_calls(
    source: Source, run_id: str, sample_id: str, since: int, pending: Iterable[int]
) -> list[dict[str, Any]]:
    """Calls of one sample logged after id ``since``, plus the current rows of the ids in ``pending``."""
    open_ids = [int(i) for i in pending][:PAGE_MAX]
    sql = f"SELECT {', '.join(CALL_COLUMNS)} FROM calls WHERE run_id = ? AND sample_id = ? AND (id > ?"
    params: list[Any] = [run_id, sample_id, since]
    if open_ids:
        sql += f" OR id IN ({', '.join('?' for _ in open_ids)})"
        params.extend(open_ids)
    rows = source.rows(sql + ") ORDER BY trial, turn, seq, id", params)
    return [call_view(row) for row in rows]


def prediction_rows(source: Source, run_id: str, sample_ids: Sequence[str] | None = None) -> list[tuple]:
    """``(sample_id, trial, turn, call_group, seq, tool, arguments, result, rpc_error, status)`` rows of
    a run (or of some of its samples), in the order the evaluator groups them."""
    sql = (
        "SELECT sample_id, trial, turn, call_group, seq, tool, arguments, result, rpc_error, status"
        " FROM calls WHERE run_id = ?"
    )
    params: list[Any] = [run_id]
    if sample_ids is not None:
        if not sample_ids:
            return []
        sql += f" AND sample_id IN ({', '.join('?' for _ in sample_ids)})"
        params.extend(sample_ids)
    return source.rows(sql + " AND sample_id IS NOT NULL ORDER BY sample_id, trial, turn, seq, id", params)


def call_view(row: Sequence[Any]) -> dict[str, Any]:
    """One call row as the page shows it: JSON decoded, the error text, a cut output."""
    call = dict(zip(CALL_COLUMNS, row, strict=True))
    raw_result = call["result"]
    call["arguments"] = _json(call["arguments"])
    call["rpc_error"] = _json(call["rpc_error"])
    call["jsonrpc_id"] = _json(call["jsonrpc_id"])
    if isinstance(raw_result, str) and len(raw_result) > OUTPUT_MAX_CHARS:
        call["result"] = None
        call["output_cut"] = f"{len(raw_result)} characters; the first {OUTPUT_MAX_CHARS} follow"
        call["output_head"] = raw_result[:OUTPUT_MAX_CHARS]
    else:
        call["result"] = _json(raw_result)
    failed = failure(call["result"], call["rpc_error"], call["status"]) if call["status"] != "ok" else None
    call["error"] = failed[1] if failed is not None and call["status"] != "pending" else None
    return call


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value
