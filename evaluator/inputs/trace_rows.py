"""The rows of one run's calls in the evaluator's order, streamed from SQLite or PostgreSQL.

:func:`open_trace_rows` checks that the store is readable and holds the run, then
:meth:`TraceRows.rows` yields ``(sample_id, trial, turn, call_group, seq, tool, arguments, result,
rpc_error, status)`` ordered by sample, trial, turn, group (NULL first), seq and row id -- from a
SQLite cursor or a PostgreSQL server-side cursor, a batch at a time, never the whole run at once.
Text sorts by bytes on both engines, so both give the same order.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Generator, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

from evaluator.errors import EvalInputError
from recordings.errors import RecordingsError
from recordings.postgres.connection import is_postgres_url

NEEDED_COLUMNS = ("run_id", "sample_id", "turn", "seq", "tool", "arguments", "result", "rpc_error", "status")
SQLITE_BATCH = 256
ROW_TAIL = "tool, arguments, result, rpc_error, status"
ROW_TAIL_NO_OUTPUTS = "tool, arguments, NULL, NULL, status"


class TraceRows:
    """One run's call rows in one store; a context manager (closes the connection)."""

    def __init__(self, source: str, run_id: str) -> None:
        self.source = source
        self.run_id = run_id
        self._streams: list[Generator[tuple, None, None]] = []

    def rows(self, outputs: bool = True) -> Iterator[tuple]:
        """The run's rows in the evaluator's order (see the module docstring); without ``outputs``,
        ``result`` and ``rpc_error`` read as None and are not fetched (scoring FinMCP metrics)."""
        stream = self._rows(ROW_TAIL if outputs else ROW_TAIL_NO_OUTPUTS)
        self._streams.append(stream)
        return stream

    def _rows(self, tail: str) -> Generator[tuple, None, None]:
        raise NotImplementedError

    def close(self) -> None:
        """Stop every stream handed out, then release the connection."""
        for stream in self._streams:
            stream.close()
        self._streams.clear()
        self._disconnect()

    def _disconnect(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> TraceRows:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class SqliteTraceRows(TraceRows):
    """Rows from a SQLite trace file opened read-only (older files without ``call_group``/``trial``
    read as one group per call and trial 0)."""

    def __init__(self, path: Path, run_id: str) -> None:
        super().__init__(str(path), run_id)
        self.con = sqlite_connect(path)
        try:
            cols = self._columns()
            group = "call_group" if "call_group" in cols else "NULL"
            trial = "trial" if "trial" in cols else "0"
            self.sql = (
                f"SELECT sample_id, {trial}, turn, {group}, seq, {{tail}} FROM calls WHERE run_id = ? "
                "ORDER BY sample_id, 2, turn, 4, seq, rowid"
            )
            self._require_run()
        except BaseException:
            self.con.close()
            raise

    def _columns(self) -> set[str]:
        try:
            cols = {r[1] for r in self.con.execute("PRAGMA table_info(calls)")}
        except sqlite3.Error as exc:
            raise EvalInputError(f"trace DB {self.source}: {exc}") from None
        if not cols:
            raise EvalInputError(f"trace DB {self.source}: no table 'calls' (is this a finmcp trace DB?)")
        missing = [c for c in NEEDED_COLUMNS if c not in cols]
        if missing:
            raise EvalInputError(
                f"trace DB {self.source}: table 'calls' lacks column(s) {', '.join(missing)}"
            )
        return cols

    def _require_run(self) -> None:
        try:
            if self.con.execute("SELECT 1 FROM calls WHERE run_id = ? LIMIT 1", (self.run_id,)).fetchone():
                return
            runs = [
                r[0] for r in self.con.execute("SELECT DISTINCT run_id FROM calls ORDER BY run_id LIMIT 50")
            ]
        except sqlite3.Error as exc:
            raise EvalInputError(f"trace DB {self.source}: {exc}") from None
        raise EvalInputError(
            f"trace DB {self.source}: run {self.run_id!r} not found; runs present: {runs or 'none'}"
        )

    def _rows(self, tail: str) -> Generator[tuple, None, None]:
        try:
            cursor = self.con.execute(self.sql.format(tail=tail), (self.run_id,))
        except sqlite3.Error as exc:
            raise EvalInputError(f"trace DB {self.source}: {exc}") from None
        while True:
            try:
                batch = cursor.fetchmany(SQLITE_BATCH)
            except sqlite3.Error as exc:
                raise EvalInputError(f"trace DB {self.source}: {exc}") from None
            if not batch:
                return
            yield from batch

    def _disconnect(self) -> None:
        self.con.close()


class PgTraceRows(TraceRows):
    """Rows from a PostgreSQL trace store through a server-side cursor."""

    def __init__(self, url: str, run_id: str) -> None:
        from recordings.postgres.reads import PgTraceReader

        try:
            self.reader = PgTraceReader(url)
        except RecordingsError as exc:
            raise EvalInputError(str(exc)) from None
        super().__init__(self.reader.label, run_id)
        try:
            self._require_run()
        except BaseException:
            self.reader.close()
            raise

    def _require_run(self) -> None:
        found = self.reader.conn.execute("SELECT 1 FROM calls WHERE run_id = %s LIMIT 1", (self.run_id,))
        if found.fetchone():
            return
        runs = self.reader.run_ids()
        raise EvalInputError(
            f"trace DB {self.source}: run {self.run_id!r} not found; runs present: {runs or 'none'}"
        )

    def _rows(self, tail: str) -> Generator[tuple, None, None]:
        from recordings.postgres.reads import order_by

        sql = (
            f"SELECT sample_id, trial, turn, call_group, seq, {tail} FROM calls WHERE run_id = %s"
            + order_by(
                ("sample_id", True),
                ("trial", False),
                ("turn", False),
                ("call_group", False),
                ("seq", False),
                ("id", False),
            )
        )
        yield from self.reader.stream(sql, (self.run_id,))

    def in_flight(self) -> list[dict[str, Any]]:
        """Proxies still holding unshipped rows of this run (:func:`recordings.postgres.reads.in_flight`)."""
        from recordings.postgres.reads import in_flight

        return in_flight(self.reader.conn, self.run_id)

    def _disconnect(self) -> None:
        self.reader.close()


def open_trace_rows(db: str | Path, run_id: str) -> TraceRows:
    """The rows of run ``run_id`` in the store ``db`` (a SQLite path or a ``postgresql://`` URL).

    Raises :class:`EvalInputError` for a missing file, an unreachable server (password redacted), a
    store that is not a finmcp trace store, and a run that is not there (naming the runs that are).
    """
    if is_postgres_url(db):
        return PgTraceRows(str(db), run_id)
    return SqliteTraceRows(Path(db), run_id)


def sqlite_connect(path: Path) -> sqlite3.Connection:
    """A read-only connection to the SQLite file at ``path`` (clear errors when it is not one)."""
    if not path.is_file():
        raise EvalInputError(f"trace DB not found: {path}")
    try:
        return sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise EvalInputError(f"trace DB {path}: cannot open: {exc}") from None
