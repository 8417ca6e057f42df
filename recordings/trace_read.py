"""Reading logged traces (the evaluator, the CLI, replay-for-audit): calls, runs, sessions, messages."""

from __future__ import annotations

import json
from typing import Any

from recordings.connection import StoreConnection, where_equal
from recordings.schema import CALLS_COLUMNS
from recordings.trace import SESSION_FIELDS

_JSON_CALL_COLUMNS = ("arguments", "result", "rpc_error", "jsonrpc_id")
MESSAGE_COLUMNS = (
    "id",
    "session_key",
    "run_id",
    "sample_id",
    "turn",
    "direction",
    "seq",
    "t_ns",
    "wall_time",
    "jsonrpc_id",
    "method",
    "kind",
    "body",
    "headers",
)


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
        out = []
        for row in rows:
            call = dict(zip(CALLS_COLUMNS, row, strict=True))
            if parse_json:
                for name in _JSON_CALL_COLUMNS:
                    if call[name] is not None:
                        call[name] = json.loads(call[name])
            out.append(call)
        return out

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
        return [
            {
                "run_id": run_id,
                "created": created,
                "meta": None if meta is None else json.loads(meta),
                "calls": n_calls,
                "samples": n_samples,
                "sessions": n_sessions,
            }
            for run_id, created, meta, n_calls, n_samples, n_sessions in rows
        ]

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
        columns = MESSAGE_COLUMNS
        where, params = where_equal(session_key=session_key, run_id=run_id)
        sql = f"SELECT {', '.join(columns)} FROM messages{where}"
        with self._locked():
            rows = self._execute(sql + " ORDER BY session_key, seq, id", params).fetchall()
        out = []
        for row in rows:
            message = dict(zip(columns, row, strict=True))
            for name in ("headers", "jsonrpc_id"):
                if message[name] is not None:
                    message[name] = json.loads(message[name])
            out.append(message)
        return out
