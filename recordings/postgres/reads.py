"""The trace store on PostgreSQL: :class:`PgTraceStore`, the reads of SQLite's with the same rows.

:class:`PgTraceStore` is a :class:`recordings.trace_store.TraceStore`: every read takes the same
arguments and gives the same ordering and dict keys as on SQLite, so every command that reads a trace
store works on either engine. Two differences are of meaning only:

- ``id`` of a call or message is the store-wide row id (unique across proxies, increasing in arrival
  order), not the id the row had in its proxy's local SQLite file (that one is ``local_id``, kept
  with the proxy's ``origin`` in the table and not part of the returned dicts);
- ties that SQLite breaks by its local id are broken by the store-wide id (arrival order).

Text sorts as SQLite sorts it (byte order, ``COLLATE "C"``) and NULLs first, whatever the
database's collation, so both engines list rows in the same order.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from finmcp.recordings.errors import RecordingsError, SchemaVersionError
from finmcp.recordings.postgres.connection import connect, redacted_url
from finmcp.recordings.postgres.schema import SCHEMA_VERSION, current_version, migrate
from finmcp.recordings.trace_store_api import TraceStore
from finmcp.recordings.trace_types import InFlight

STREAM_BATCH = 5000
"""Rows fetched per round trip by a server-side cursor."""


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


class PgTraceStore(TraceStore):
    """The trace store on PostgreSQL (see the module docstring for ``id``); one connection, locked per query."""

    engine = "postgresql"
    IS = "IS NOT DISTINCT FROM"

    def __init__(self, url: str, conn: Any | None = None) -> None:
        self.url = url
        self.label = redacted_url(url)
        self.conn = conn if conn is not None else open_store(url)
        self._lock = threading.RLock()

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return list(self.conn.execute(pg_sql(sql), tuple(params)).fetchall())

    def _stream(
        self, sql: str, params: Sequence[Any], batch: int = STREAM_BATCH
    ) -> Iterator[tuple[Any, ...]]:
        """Rows through a server-side cursor, ``batch`` per round trip (bounded memory)."""
        with self._lock, self.conn.transaction(), self.conn.cursor(name="finmcp_stream") as cursor:
            cursor.itersize = batch
            cursor.execute(pg_sql(sql), tuple(params))
            yield from cursor

    def _update(self, sql: str, rows: Iterable[Sequence[Any]]) -> int:
        changed = 0
        with self._lock, self.conn.transaction():
            for params in rows:
                changed += self.conn.execute(pg_sql(sql), tuple(params)).rowcount
        return changed

    def _order_by(self, *columns: tuple[str, bool]) -> str:
        return " ORDER BY " + ", ".join(asc(name, text) for name, text in columns)

    def in_flight(self, run_id: str) -> list[InFlight]:
        """Origins (proxies) whose shipper still holds unshipped rows of ``run_id``.

        An origin counts when ``pending_rows > 0`` and its ``pending_runs`` JSON array names the run;
        ``heartbeat_age_s`` is the seconds since its shipper last reported.
        """
        rows = self._rows(
            "SELECT origin, label, pending_rows, pending_runs, extract(epoch FROM now() - heartbeat)"
            ' FROM origins WHERE pending_rows > 0 ORDER BY origin COLLATE "C"'
        )
        return [
            InFlight(origin, label, int(pending_rows), float(age))
            for origin, label, pending_rows, pending_runs, age in rows
            if run_id in _runs_named(pending_runs)
        ]


def pg_sql(text: str) -> str:
    """A statement written with ``?`` placeholders in psycopg's style (``%s``, a literal ``%`` doubled)."""
    return text.replace("%", "%%").replace("?", "%s")


def asc(column: str, text: bool = False) -> str:
    """``column`` ascending as SQLite orders it: NULLs first, text by bytes."""
    collate = ' COLLATE "C"' if text else ""
    return f"{column}{collate} ASC NULLS FIRST"


def _runs_named(pending_runs: str | None) -> list[Any]:
    try:
        runs = json.loads(pending_runs) if pending_runs else []
    except json.JSONDecodeError:
        return []
    return runs if isinstance(runs, list) else []
