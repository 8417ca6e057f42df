"""The trace store's interface (:class:`TraceStore`): every read, written once over each engine's hooks.

:mod:`recordings.trace_store` opens a store (:func:`~recordings.trace_store.open_trace_store`) and holds
the SQLite engine; :mod:`recordings.postgres.reads` holds the PostgreSQL one. Both import this module,
which imports neither.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from finmcp.recordings.client_order import in_client_order
from finmcp.recordings.connection import Closing, where_equal
from finmcp.recordings.errors import RecordingsError
from finmcp.recordings.schema import CALLS_COLUMNS, JSON_CALL_COLUMNS, MESSAGE_COLUMNS
from finmcp.recordings.trace_pages import TracePages, cut_select, marks
from finmcp.recordings.trace_types import (
    SESSION_COLUMNS,
    CallDict,
    InFlight,
    LoggedCall,
    MessageDict,
    PredictionRow,
    RunDict,
    SessionDict,
    call_from_row,
    message_from_row,
    run_from_row,
    session_from_row,
)

STREAMED = ("run_id", "sample_id", "turn", "seq", "tool", "arguments", "result", "rpc_error", "status")
"""Columns of ``calls`` the evaluator's stream needs (``call_group`` and ``trial`` are optional)."""
SQLITE_BATCH = 256
_JSONRPC_ID = CALLS_COLUMNS.index("jsonrpc_id")


def _cut_call(row: Sequence[Any], parse_json: bool, chars: int) -> CallDict:
    """A row of :meth:`TraceStore.calls` with ``result_chars``: the call dict and its ``result_length``."""
    length = row[-1]
    call = call_from_row(row[:-1], False)
    cut = length is not None and length > chars
    if parse_json:  # a cut result stays text: its JSON is not whole
        for name in JSON_CALL_COLUMNS:
            if call[name] is not None and not (cut and name == "result"):
                call[name] = json.loads(call[name])
    call["result_length"] = length
    return call


class TraceStore(TracePages, Closing):
    """The trace store's interface; each engine supplies the hooks at the bottom.

    A context manager (closes the store). ``label`` names it in messages (a URL's password
    redacted); ``engine`` is ``"sqlite"`` or ``"postgresql"``.
    """

    engine = ""
    label = ""
    ROW_ID = "id"
    """The column that breaks ties in arrival order (SQLite: ``rowid``, which every table has)."""
    IS = "IS"
    """SQL's null-safe equality in this dialect."""

    # ---------------------------------------------------------------- the tables

    def runs(self) -> list[RunDict]:
        """Every run with ``run_id, created, meta`` (decoded) and counts: ``calls, samples, sessions``."""
        sql = (
            "SELECT r.run_id, r.created, r.meta,"
            " (SELECT count(*) FROM calls c WHERE c.run_id = r.run_id),"
            " (SELECT count(DISTINCT c.sample_id) FROM calls c WHERE c.run_id = r.run_id),"
            " (SELECT count(*) FROM sessions s WHERE s.run_id = r.run_id)"
            " FROM runs r" + self._order_by(("r.created", True), ("r.run_id", True))
        )
        return [run_from_row(row) for row in self._rows(sql)]

    def run_meta(self, run_id: str) -> Any:
        """One run's ``meta`` (decoded JSON; the harness keeps its run fingerprint there), or None
        when the run is absent or has no meta."""
        rows = self._rows("SELECT meta FROM runs WHERE run_id = ?", [run_id])
        return json.loads(rows[0][0]) if rows and rows[0][0] is not None else None

    def sessions(self, run_id: str | None = None) -> list[SessionDict]:
        """Session rows (all, or one run's), ordered by start time."""
        where, params = where_equal(run_id=run_id)
        order = self._order_by(("started", True), ("session_key", True), (self.ROW_ID, False))
        sql = f"SELECT {', '.join(SESSION_COLUMNS)} FROM sessions{where}{order}"
        return [session_from_row(row) for row in self._rows(sql, params)]

    def session(self, session_key: str) -> SessionDict | None:
        """One session's row, or None."""
        sql = f"SELECT {', '.join(SESSION_COLUMNS)} FROM sessions WHERE session_key = ?"
        rows = self._rows(sql, [session_key])
        return session_from_row(rows[0]) if rows else None

    def messages(self, session_key: str | None = None, run_id: str | None = None) -> list[MessageDict]:
        """Logged messages (filtered by session and/or run), ordered by session_key, seq, id.

        ``body`` is the stored text; ``headers`` and ``jsonrpc_id`` are decoded.
        """
        where, params = where_equal(session_key=session_key, run_id=run_id)
        order = self._order_by(("session_key", True), ("seq", False), (self.ROW_ID, False))
        sql = f"SELECT {', '.join(MESSAGE_COLUMNS)} FROM messages{where}{order}"
        return [message_from_row(row) for row in self._rows(sql, params)]

    def tools_call_request(self, session_key: str | None, jsonrpc_id_text: str | None) -> MessageDict | None:
        """The last ``tools/call`` request the client sent in a session with this (stored) JSON-RPC id."""
        rows = self._rows(
            f"SELECT {', '.join(MESSAGE_COLUMNS)} FROM messages WHERE session_key = ? AND jsonrpc_id = ?"
            " AND kind = 'request' AND method = 'tools/call' AND direction = 'c2s' ORDER BY id DESC LIMIT 1",
            [session_key, jsonrpc_id_text],
        )
        return message_from_row(rows[0]) if rows else None

    def calls(
        self,
        run_id: str,
        sample_id: str | None = None,
        *,
        turn: int | None = None,
        parse_json: bool = True,
        result_chars: int | None = None,
    ) -> list[CallDict]:
        """Calls of a run (optionally one sample / turn), ordered by sample_id, turn, seq, id.

        Each dict has exactly the ``calls`` columns. With ``parse_json`` (default) the JSON columns
        ``arguments``, ``result``, ``rpc_error`` and ``jsonrpc_id`` are decoded to Python values;
        with ``parse_json=False`` they are the stored JSON text.

        ``result_chars``: a result longer than that many characters is never loaded whole (SQL
        ``substr``/``length``): its ``result`` is the first ``result_chars`` characters as text (not
        decoded) and the dict gains ``result_length``, the whole length in characters (on every row).
        """
        where, params = where_equal(run_id=run_id, sample_id=sample_id, turn=turn)
        order = self._order_by(("sample_id", True), ("turn", False), ("seq", False), (self.ROW_ID, False))
        sql = f"SELECT {cut_select(CALLS_COLUMNS, 'result', result_chars)} FROM calls{where}{order}"
        rows = self._rows(sql, params)
        if result_chars is None:
            return [call_from_row(row, parse_json) for row in rows]
        return [_cut_call(row, parse_json, result_chars) for row in rows]

    def calls_after(self, call_id: int, limit: int) -> list[LoggedCall]:
        """Up to ``limit`` calls with an id above ``call_id``, in id order (a live follower's next batch)."""
        rows = self._rows(
            f"SELECT {', '.join(CALLS_COLUMNS)} FROM calls WHERE id > ? ORDER BY id LIMIT ?", [call_id, limit]
        )
        return [LoggedCall(call_from_row(row), row[_JSONRPC_ID]) for row in rows]

    # ---------------------------------------------------------------- runs and counts

    def run_ids(self, limit: int = 50) -> list[str]:
        """Distinct run ids that have calls (byte order, at most ``limit``)."""
        sql = "SELECT run_id FROM calls WHERE run_id IS NOT NULL GROUP BY run_id"
        rows = self._rows(sql + self._order_by(("run_id", True)) + " LIMIT ?", [limit])
        return [run_id for (run_id,) in rows]

    def count_calls(self, run_id: str) -> int:
        """How many calls carry ``run_id``."""
        return int(self._rows("SELECT count(*) FROM calls WHERE run_id = ?", [run_id])[0][0])

    def calls_per_sample(self, run_id: str) -> dict[str | None, int]:
        """``{sample_id: number of calls}`` of a run (None: calls without a sample tag)."""
        rows = self._rows(
            "SELECT sample_id, count(*) FROM calls WHERE run_id = ? GROUP BY sample_id", [run_id]
        )
        return {sample: int(n) for sample, n in rows}

    def tool_ms_per_sample(self, run_id: str) -> dict[str, float]:
        """``{sample_id: milliseconds}``: the summed ``latency_ms`` of each tagged sample's calls in a run."""
        rows = self._rows(
            "SELECT sample_id, sum(latency_ms) FROM calls WHERE run_id = ? AND sample_id IS NOT NULL"
            " GROUP BY sample_id",
            [run_id],
        )
        return {sample: float(ms or 0.0) for sample, ms in rows}

    def call_statuses(self, run_id: str, sample_ids: Sequence[str]) -> dict[str, int]:
        """``{status: number of calls}`` of some samples of a run."""
        if not sample_ids:
            return {}
        rows = self._rows(
            f"SELECT status, count(*) FROM calls WHERE run_id = ? AND sample_id IN ({marks(sample_ids)})"
            " GROUP BY status",
            [run_id, *sample_ids],
        )
        return {str(status): int(n) for status, n in rows}

    # ---------------------------------------------------------------- the evaluator's stream

    def prediction_rows(
        self, run_id: str, *, outputs: bool = True, sample_ids: Sequence[str] | None = None
    ) -> Iterator[PredictionRow]:
        """The run's calls (or some samples') in the evaluator's order: sample, trial, turn, group
        (NULL first), seq, row id, a group's calls then in their client's order
        (:func:`recordings.client_order.in_client_order`); streamed a batch at a time, never the whole
        run at once.

        Without ``outputs``, ``result`` and ``rpc_error`` read as None and are not fetched. A file
        older than ``call_group``/``trial`` reads as one group per call and trial 0. The query is
        checked when called (:class:`RecordingsError` for a table without the needed columns).
        """
        present = self.calls_columns()
        group = "call_group" if "call_group" in present else "NULL"
        trial = "trial" if "trial" in present else "0"
        tail = "result, rpc_error" if outputs else "NULL, NULL"
        ids = "session_key, jsonrpc_id" if {"session_key", "jsonrpc_id"} <= present else "NULL, NULL"
        sql = (
            f"SELECT sample_id, {trial}, turn, {group}, seq, tool, arguments, {tail}, status, {ids}"
            " FROM calls WHERE run_id = ?"
        )
        params: list[Any] = [run_id]
        if sample_ids is not None:
            if not sample_ids:
                return iter(())
            sql += f" AND sample_id IN ({marks(sample_ids)})"
            params.extend(sample_ids)
        order = [("sample_id", True), ("2", False), ("turn", False), ("4", False), ("seq", False)]
        rows = self._stream(sql + self._order_by(*order, (self.ROW_ID, False)), params)
        return map(PredictionRow._make, in_client_order(rows))

    def calls_columns(self) -> set[str]:
        """The columns of ``calls``; :class:`RecordingsError` when one the evaluator's stream needs is missing."""
        present = self._call_columns()
        missing = [c for c in STREAMED if c not in present]
        if missing:
            raise RecordingsError(
                f"trace store {self.label}: table 'calls' lacks column(s) {', '.join(missing)}"
            )
        return present

    # ---------------------------------------------------------------- shipping and the harness

    def in_flight(self, run_id: str) -> list[InFlight]:
        """Proxies still holding unshipped rows of ``run_id`` (only a store that receives shipments has any)."""
        return []

    def outbox_status(self, now: float) -> str | None:
        """One line on the rows this file still has to ship (None: it does not ship)."""
        return None

    def set_aside(
        self, run_id: str, to_run: str, keep: set[tuple[str, int]], sample_ids: set[str] | None = None
    ) -> int:
        """Move the calls of each (sample, trial) of ``run_id`` not in ``keep`` to run ``to_run``, in one
        transaction; returns how many moved. With ``sample_ids``, other samples' calls stay."""
        pairs = self._rows("SELECT DISTINCT sample_id, trial FROM calls WHERE run_id = ?", [run_id])
        moves = [
            (sample_id, trial)
            for sample_id, trial in pairs
            if (str(sample_id), int(trial or 0)) not in keep
            and (sample_ids is None or str(sample_id) in sample_ids)
        ]
        sql = f"UPDATE calls SET run_id = ? WHERE run_id = ? AND sample_id {self.IS} ? AND trial = ?"
        return self._update(sql, [(to_run, run_id, sample_id, trial) for sample_id, trial in moves])

    # ---------------------------------------------------------------- the engine's hooks

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """All rows of one query written with ``?`` placeholders."""
        raise NotImplementedError

    def _stream(self, sql: str, params: Sequence[Any]) -> Iterator[tuple[Any, ...]]:
        """The rows of one query a batch at a time."""
        raise NotImplementedError

    def _update(self, sql: str, rows: Iterable[Sequence[Any]]) -> int:
        """Run one statement per parameter row in one transaction; returns the rows changed."""
        raise NotImplementedError

    def _order_by(self, *columns: tuple[str, bool]) -> str:
        """`` ORDER BY`` over (column, is_text) pairs: NULLs first, text by bytes."""
        return " ORDER BY " + ", ".join(name for name, _text in columns)

    def _call_columns(self) -> set[str]:
        """The columns ``calls`` has."""
        return set(CALLS_COLUMNS)
