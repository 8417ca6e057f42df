"""Opening a trace store read-only for the viewer: a SQLite file, or a ``postgresql://`` URL.

Both expose one method, :meth:`Source.rows`, taking SQL written with ``?`` placeholders (the
PostgreSQL source rewrites them to ``%s``); every query of :mod:`evaluator.viewer.queries` is plain
SQL that both dialects run alike. One connection per source, guarded by a lock (queries are short).
When ``recordings.trace_source.open_trace_reader`` lands, :func:`open_source` is the one place to
switch to it.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

from evaluator.errors import EvalInputError


class Source:
    """A read-only connection to a trace store; subclasses say how to connect and bind."""

    label = ""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self._lock = threading.Lock()

    def sql(self, text: str) -> str:
        """The statement in this store's placeholder style (``?`` is the written one)."""
        return text

    def rows(self, text: str, params: tuple[Any, ...] | list[Any] = ()) -> list[tuple[Any, ...]]:
        """All rows of one query."""
        with self._lock:
            cursor = self._conn.execute(self.sql(text), tuple(params))
            return list(cursor.fetchall())

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()


class SqliteSource(Source):
    """A SQLite trace store opened read-only (``mode=ro``): it sees the proxy's commits as they land."""

    def __init__(self, path: Path) -> None:
        if not path.is_file():
            raise EvalInputError(f"--db: trace store not found: {path}")
        try:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
            names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.Error as exc:
            raise EvalInputError(f"--db {path}: cannot open: {exc}") from None
        if "calls" not in names or "runs" not in names:
            conn.close()
            raise EvalInputError(f"--db {path}: not a finmcp trace store (no calls/runs tables)")
        super().__init__(conn)
        self.label = str(path)


class PostgresSource(Source):
    """The shared PostgreSQL trace store (same tables and columns as SQLite's)."""

    def __init__(self, url: str) -> None:
        from recordings.errors import RecordingsError
        from recordings.postgres.connection import connect, redacted_url

        try:
            conn = connect(url, migrate_schema=False)
        except RecordingsError as exc:
            raise EvalInputError(f"--db: {exc}") from None
        super().__init__(conn)
        self.label = redacted_url(url)

    def sql(self, text: str) -> str:
        return text.replace("%", "%%").replace("?", "%s")


def open_source(target: str) -> Source:
    """The trace store at ``target``: a ``postgresql://`` URL or a SQLite file path."""
    from recordings.postgres.connection import is_postgres_url

    if is_postgres_url(target):
        return PostgresSource(target)
    return SqliteSource(Path(target))
