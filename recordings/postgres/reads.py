"""Reading traces from the shared PostgreSQL store with the API and row shapes of SQLite's reads.

:class:`PgTraceReader` has the read API of :class:`recordings.trace_read.TraceReadMixin` -- ``calls``,
``runs``, ``sessions``, ``messages`` -- with the same arguments, ordering and dict keys, so every
command that reads a trace store works on either engine. Two differences are of meaning only:

- ``id`` of a call or message is the store-wide row id (unique across proxies, increasing in arrival
  order), not the id the row had in its proxy's local SQLite file (that one is ``local_id``, kept
  with the proxy's ``origin`` in the table and not part of the returned dicts);
- ties that SQLite breaks by its local id are broken by the store-wide id (arrival order).

Text sorts as SQLite sorts it (byte order, ``COLLATE "C"``) and NULLs first, whatever the
database's collation, so both engines list rows in the same order.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import Any

from recordings.errors import RecordingsError, SchemaVersionError
from recordings.postgres.connection import connect, redacted_url
from recordings.postgres.schema import SCHEMA_VERSION, current_version, migrate
from recordings.schema import CALLS_COLUMNS, MESSAGE_COLUMNS
from recordings.trace import SESSION_FIELDS
from recordings.trace_read import call_from_row, message_from_row, run_from_row

STREAM_BATCH = 5000
"""Rows fetched per round trip by a server-side cursor."""


def asc(column: str, text: bool = False) -> str:
    """``column`` ascending as SQLite orders it: NULLs first, text by bytes."""
    collate = ' COLLATE "C"' if text else ""
    return f"{column}{collate} ASC NULLS FIRST"


def order_by(*columns: tuple[str, bool]) -> str:
    """`` ORDER BY`` over (column, is_text) pairs in SQLite's order."""
    return " ORDER BY " + ", ".join(asc(name, text) for name, text in columns)


def where_equal(**filters: object) -> tuple[str, list[Any]]:
    """``" WHERE a = %s AND ..."`` over the filters that are not None, and their values."""
    names = [name for name, value in filters.items() if value is not None]
    if not names:
        return "", []
    return " WHERE " + " AND ".join(f"{name} = %s" for name in names), [filters[name] for name in names]


def open_store(url: str) -> Any:
    """A psycopg connection to an existing finmcp trace store at ``url``, for reading.

    Refuses (:class:`RecordingsError`) an unreachable server, a database with no finmcp tables and one
    newer than this code; an older finmcp schema is migrated first.
    """
    conn = connect(url, migrate_schema=False)
    try:
        version = current_version(conn)
        if version == 0:
            raise RecordingsError(
                f"{redacted_url(url)} is not a finmcp trace store yet (no finmcp tables: nothing was "
                "shipped to it)"
            )
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{redacted_url(url)} is at schema version {version}, newer than this finmcp "
                f"understands (up to {SCHEMA_VERSION}); upgrade finmcp to read it"
            )
        if version < SCHEMA_VERSION:
            migrate(conn)
    except BaseException:
        conn.close()
        raise
    return conn


class PgTraceReader:
    """The trace read API over a PostgreSQL store (see the module docstring for ``id``)."""

    def __init__(self, url: str, conn: Any | None = None) -> None:
        self.url = url
        self.label = redacted_url(url)
        self.conn = conn if conn is not None else open_store(url)

    def __enter__(self) -> PgTraceReader:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return list(self.conn.execute(sql, params).fetchall())

    def calls(
        self,
        run_id: str,
        sample_id: str | None = None,
        *,
        turn: int | None = None,
        parse_json: bool = True,
    ) -> list[dict[str, Any]]:
        """Calls of a run (optionally one sample / turn), ordered by sample_id, turn, seq, id.

        Same shape as :meth:`recordings.trace_read.TraceReadMixin.calls`.
        """
        where, params = where_equal(run_id=run_id, sample_id=sample_id, turn=turn)
        sql = f"SELECT {', '.join(CALLS_COLUMNS)} FROM calls{where}" + order_by(
            ("sample_id", True), ("turn", False), ("seq", False), ("id", False)
        )
        return [call_from_row(row, parse_json) for row in self._rows(sql, params)]

    def runs(self) -> list[dict[str, Any]]:
        """Every run with ``run_id, created, meta`` (decoded) and counts: ``calls, samples, sessions``."""
        sql = (
            "SELECT r.run_id, r.created, r.meta, coalesce(c.n, 0), coalesce(c.samples, 0),"
            " coalesce(s.n, 0) FROM runs r"
            " LEFT JOIN (SELECT run_id, count(*) AS n, count(DISTINCT sample_id) AS samples"
            "  FROM calls GROUP BY run_id) c ON c.run_id = r.run_id"
            " LEFT JOIN (SELECT run_id, count(*) AS n FROM sessions GROUP BY run_id) s"
            "  ON s.run_id = r.run_id" + order_by(("r.created", True), ("r.run_id", True))
        )
        return [run_from_row(row) for row in self._rows(sql)]

    def sessions(self, run_id: str | None = None) -> list[dict[str, Any]]:
        """Session rows (all, or one run's), ordered by start time."""
        columns = ("session_key", *SESSION_FIELDS)
        where, params = where_equal(run_id=run_id)
        sql = f"SELECT {', '.join(columns)} FROM sessions{where}" + order_by(
            ("started", True), ("session_key", True), ("id", False)
        )
        return [dict(zip(columns, row, strict=True)) for row in self._rows(sql, params)]

    def messages(self, session_key: str | None = None, run_id: str | None = None) -> list[dict[str, Any]]:
        """Logged messages (filtered by session and/or run), ordered by session_key, seq, id."""
        where, params = where_equal(session_key=session_key, run_id=run_id)
        sql = f"SELECT {', '.join(MESSAGE_COLUMNS)} FROM messages{where}" + order_by(
            ("session_key", True), ("seq", False), ("id", False)
        )
        return [message_from_row(row) for row in self._rows(sql, params)]

    def stream(self, sql: str, params: Sequence[Any] = (), batch: int = STREAM_BATCH) -> Iterator[tuple]:
        """Rows of ``sql`` through a server-side cursor, ``batch`` per round trip (bounded memory)."""
        with self.conn.transaction(), self.conn.cursor(name="finmcp_stream") as cursor:
            cursor.itersize = batch
            cursor.execute(sql, params)
            yield from cursor

    def run_ids(self, limit: int = 50) -> list[str]:
        """Distinct run ids that have calls (byte order, at most ``limit``)."""
        sql = 'SELECT DISTINCT run_id COLLATE "C" FROM calls WHERE run_id IS NOT NULL ORDER BY 1 LIMIT %s'
        return [run_id for (run_id,) in self._rows(sql, (limit,))]


def in_flight(conn: Any, run_id: str) -> list[dict[str, Any]]:
    """Origins (proxies) whose shipper still holds unshipped rows of ``run_id``.

    Each: ``origin``, ``label``, ``pending_rows`` and ``heartbeat_age_s`` (seconds since the shipper
    last reported). An origin counts when ``pending_rows > 0`` and its ``pending_runs`` JSON array
    names the run.
    """
    rows = conn.execute(
        "SELECT origin, label, pending_rows, pending_runs, extract(epoch FROM now() - heartbeat)"
        ' FROM origins WHERE pending_rows > 0 ORDER BY origin COLLATE "C"'
    ).fetchall()
    out = []
    for origin, label, pending_rows, pending_runs, age in rows:
        try:
            runs = json.loads(pending_runs) if pending_runs else []
        except json.JSONDecodeError:
            runs = []
        if isinstance(runs, list) and run_id in runs:
            out.append(
                {
                    "origin": origin,
                    "label": label,
                    "pending_rows": int(pending_rows),
                    "heartbeat_age_s": float(age),
                }
            )
    return out
