"""Reading logged traces (the evaluator, the CLI, replay-for-audit): calls, runs, sessions, messages."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from recordings.connection import StoreConnection, where_equal
from recordings.schema import CALLS_COLUMNS, JSON_CALL_COLUMNS, MESSAGE_COLUMNS
from recordings.trace import SESSION_FIELDS


def call_from_row(row: Sequence[Any], parse_json: bool = True) -> dict[str, Any]:
    """A ``calls`` row (:data:`CALLS_COLUMNS` order) as a dict, its JSON columns decoded with ``parse_json``."""
    call = dict(zip(CALLS_COLUMNS, row, strict=True))
    if parse_json:
        for name in JSON_CALL_COLUMNS:
            if call[name] is not None:
                call[name] = json.loads(call[name])
    return call


def message_from_row(row: Sequence[Any]) -> dict[str, Any]:
    """A ``messages`` row (:data:`MESSAGE_COLUMNS` order) as a dict; ``headers`` and ``jsonrpc_id`` decoded."""
    message = dict(zip(MESSAGE_COLUMNS, row, strict=True))
    for name in ("headers", "jsonrpc_id"):
        if message[name] is not None:
            message[name] = json.loads(message[name])
    return message


def run_from_row(row: Sequence[Any]) -> dict[str, Any]:
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


class TraceReadMixin(StoreConnection):
    """The trace read API of :class:`recordings.store.RecordingStore`."""

    def calls(
        self,
        run_id: str,
        sample_id: str | None = None,
        *,
        turn: int | None = None,
        parse_json: bool = True,
    ) -> list[dict[str, Any]]:
        """Calls of a run (optionally one sample / turn), ordered by sample_id, turn, seq, id.

        Each dict has exactly the ``calls`` columns. With ``parse_json`` (default) the JSON columns
        ``arguments``, ``result``, ``rpc_error`` and ``jsonrpc_id`` are decoded to Python values;
        with ``parse_json=False`` they are the stored JSON text.
        """
        sql = f"SELECT {', '.join(CALLS_COLUMNS)} FROM calls WHERE run_id = ?"
        params: list[Any] = [run_id]
        if sample_id is not None:
            sql += " AND sample_id = ?"
            params.append(sample_id)
        if turn is not None:
            sql += " AND turn = ?"
            params.append(turn)
        sql += " ORDER BY sample_id, turn, seq, id"
        with self._locked():
            rows = self._execute(sql, params).fetchall()
        return [call_from_row(row, parse_json) for row in rows]

    def runs(self) -> list[dict[str, Any]]:
        """Every run with ``run_id, created, meta`` (decoded) and counts: ``calls, samples, sessions``."""
        sql = (
            "SELECT r.run_id, r.created, r.meta,"
            " (SELECT count(*) FROM calls c WHERE c.run_id = r.run_id),"
            " (SELECT count(DISTINCT sample_id) FROM calls c WHERE c.run_id = r.run_id),"
            " (SELECT count(*) FROM sessions s WHERE s.run_id = r.run_id)"
            " FROM runs r ORDER BY r.created, r.run_id"
        )
        with self._locked():
            rows = self._conn.execute(sql).fetchall()
        return [run_from_row(row) for row in rows]

    def sessions(self, run_id: str | None = None) -> list[dict[str, Any]]:
        """Session rows (all, or one run's), ordered by start time."""
        columns = ("session_key", *SESSION_FIELDS)
        where, params = where_equal(run_id=run_id)
        sql = f"SELECT {', '.join(columns)} FROM sessions{where}"
        with self._locked():
            rows = self._execute(sql + " ORDER BY started, session_key", params).fetchall()
        return [dict(zip(columns, row, strict=True)) for row in rows]

    def messages(self, session_key: str | None = None, run_id: str | None = None) -> list[dict[str, Any]]:
        """Logged messages (filtered by session and/or run), ordered by session_key, seq, id.

        ``body`` is the stored text; ``headers`` and ``jsonrpc_id`` are decoded.
        """
        where, params = where_equal(session_key=session_key, run_id=run_id)
        sql = f"SELECT {', '.join(MESSAGE_COLUMNS)} FROM messages{where}"
        with self._locked():
            rows = self._execute(sql + " ORDER BY session_key, seq, id", params).fetchall()
        return [message_from_row(row) for row in rows]
