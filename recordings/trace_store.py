"""The trace store: one interface over a SQLite file or a ``postgresql://`` store, opened by one function.

:func:`open_trace_store` opens either engine; both answer every read of :class:`TraceStore` with the
same rows in the same order (text sorts by bytes and NULLs first on both): the tables (``runs``,
``sessions``, ``messages``, ``calls``), the evaluator's stream (:meth:`TraceStore.prediction_rows`),
the viewer's pages (:class:`recordings.trace_pages.TracePages`), status counts, the rows a shipping
proxy still holds (:meth:`TraceStore.in_flight`) and the harness's one rewrite of the proxy's rows
(:meth:`TraceStore.set_aside`). :class:`SqliteTraceStore` also has the proxy's writes
(:class:`recordings.trace.TraceWrites`); PostgreSQL is written by the shipper's ingest only
(:mod:`recordings.postgres.ingest`). On PostgreSQL a row's ``id`` is the store-wide id (see
:mod:`recordings.postgres.reads`).

No module outside ``recordings/`` writes SQL against these tables (``tests/test_architecture.py``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from finmcp.recordings.errors import RecordingsError
from finmcp.recordings.postgres.connection import is_postgres_url
from finmcp.recordings.trace import TraceWrites
from finmcp.recordings.trace_store_api import SQLITE_BATCH, TraceStore


class SqliteTraceStore(TraceWrites, TraceStore):
    """A proxy's SQLite trace file: the proxy's writes and every read.

    ``SqliteTraceStore.open(path)`` creates or migrates the file; ``open_readonly(path)`` reads it
    as it is (``mode=ro``), seeing the proxy's commits as they land. Reads take the store's lock and
    turn SQLite errors into :class:`RecordingsError`.
    """

    engine = "sqlite"
    ROW_ID = "rowid"

    def __init__(self, path: str | Path, **options: Any) -> None:
        super().__init__(path, **options)
        self.label = self.path

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._locked(), sqlite_errors(self.path):
            return self._execute(sql, params).fetchall()

    def _stream(self, sql: str, params: Sequence[Any]) -> Iterator[tuple[Any, ...]]:
        with self._locked(), sqlite_errors(self.path):
            cursor = self._execute(sql, params)
        return self._batches(cursor)

    def _batches(self, cursor: sqlite3.Cursor) -> Iterator[tuple[Any, ...]]:
        while True:
            with self._locked(), sqlite_errors(self.path):
                batch = cursor.fetchmany(SQLITE_BATCH)
            if not batch:
                return
            yield from batch

    def _update(self, sql: str, rows: Iterable[Sequence[Any]]) -> int:
        changed = 0
        with sqlite_errors(self.path), self.transaction():
            for params in rows:
                changed += self._execute(sql, params).rowcount
        return changed

    def _call_columns(self) -> set[str]:
        cols = {row[1] for row in self._rows("PRAGMA table_info(calls)")}
        if not cols:
            raise RecordingsError(f"trace store {self.path}: not a finmcp trace store (no table 'calls')")
        return cols

    def outbox_status(self, now: float) -> str | None:
        from finmcp.recordings.outbox import status_line

        with self._locked():
            return status_line(self._conn, now)


@contextmanager
def sqlite_errors(path: str) -> Iterator[None]:
    """``with``: a :class:`sqlite3.Error` leaves as :class:`RecordingsError` naming the file."""
    try:
        yield
    except sqlite3.Error as exc:
        raise RecordingsError(f"trace store {path}: {exc}") from None


def open_trace_store(target: str | Path, *, readonly: bool = False) -> TraceStore:
    """The trace store at ``target``: a SQLite path or a ``postgresql://`` URL.

    A SQLite file must exist; it is migrated to the current schema unless ``readonly`` (then it is
    read as it is, with the connection shared across threads). A PostgreSQL store must hold finmcp
    tables (an older schema is migrated). Raises :class:`RecordingsError`, any password redacted,
    when the file does not exist, the server cannot be reached or it is not a finmcp trace store.
    """
    if is_postgres_url(target):
        from finmcp.recordings.postgres.reads import PgTraceStore

        return PgTraceStore(str(target))
    path = Path(target)
    if readonly:
        return SqliteTraceStore.open_readonly(path)
    if not path.is_file():
        raise RecordingsError(f"trace store not found: {path}")
    return SqliteTraceStore.open(path)


def describe(target: str | Path) -> str:
    """How to name ``target`` in a message (a URL's password replaced by ``***``)."""
    from finmcp.recordings.postgres.connection import redacted_url

    return redacted_url(str(target)) if is_postgres_url(target) else str(target)
