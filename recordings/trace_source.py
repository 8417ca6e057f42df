"""Open a trace store for reading, whichever engine holds it: a SQLite file or a ``postgresql://`` URL.

Every command that reads traces (``finmcp-proxy sessions/show/export/replay``, ``finmcp-eval
score/compare/export``) opens its ``--db`` here, so both engines answer the same read API
(:class:`recordings.trace_read.TraceReadMixin`: ``calls``, ``runs``, ``sessions``, ``messages``) with
the same rows. On PostgreSQL a row's ``id`` is the store-wide id (see :mod:`recordings.postgres.reads`).
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

from recordings.errors import RecordingsError
from recordings.postgres.connection import is_postgres_url


class TraceReader(Protocol):
    """What :func:`open_trace_reader` returns: the trace read API, a context manager."""

    def calls(
        self,
        run_id: str,
        sample_id: str | None = None,
        *,
        turn: int | None = None,
        parse_json: bool = True,
    ) -> list[dict[str, Any]]: ...

    def runs(self) -> list[dict[str, Any]]: ...

    def sessions(self, run_id: str | None = None) -> list[dict[str, Any]]: ...

    def messages(self, session_key: str | None = None, run_id: str | None = None) -> list[dict[str, Any]]: ...

    def close(self) -> None: ...

    def __enter__(self) -> Any: ...

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> Any: ...


def describe(target: str | Path) -> str:
    """How to name ``target`` in a message (a URL's password replaced by ``***``)."""
    from recordings.postgres.connection import redacted_url

    return redacted_url(str(target)) if is_postgres_url(target) else str(target)


def open_trace_reader(target: str | Path) -> TraceReader:
    """A reader of the trace store at ``target``: a SQLite path or a ``postgresql://`` URL.

    Raises :class:`RecordingsError` (with any password redacted) when the file does not exist, the
    server cannot be reached or the database is not a finmcp trace store.
    """
    if is_postgres_url(target):
        from recordings.postgres.reads import PgTraceReader

        return PgTraceReader(str(target))
    path = Path(target)
    if not path.is_file():
        raise RecordingsError(f"trace store {path} does not exist")
    from recordings.store import RecordingStore

    return RecordingStore.open(path)
