"""The store's single SQLite connection, its lock and its transactions."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from sqlite_utils import Database

from finmcp.recordings.checkpoint import BackgroundCheckpointer
from finmcp.recordings.errors import RecordingsError
from finmcp.recordings.results import escape_surrogates
from finmcp.recordings.schema import open_database, user_version


def open_readonly(path: str | Path) -> Database:
    """A read-only connection (shared across threads) to an existing SQLite trace file."""
    target = Path(path)
    if not target.is_file():
        raise RecordingsError(f"trace store not found: {target}")
    try:
        conn = sqlite3.connect(f"file:{target}?mode=ro", uri=True, check_same_thread=False)
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error as exc:
        raise RecordingsError(f"trace store {target}: cannot open: {exc}") from None
    if "calls" not in names:
        conn.close()
        raise RecordingsError(f"trace store {target}: not a finmcp trace store (no table 'calls')")
    return Database(conn, execute_plugins=False)


def where_equal(**filters: object) -> tuple[str, list[Any]]:
    """``" WHERE a = ? AND b = ?"`` over the filters that are not None, and their values (``""`` for none).

    Column names come from the keywords (code), values are bound parameters.
    """
    names = [name for name, value in filters.items() if value is not None]
    if not names:
        return "", []
    return " WHERE " + " AND ".join(f"{name} = ?" for name in names), [filters[name] for name in names]


class Closing:
    """A context manager that closes itself when the block ends (subclasses say what :meth:`close` does)."""

    def close(self) -> None:
        """Release what the object holds."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class StoreConnection(Closing):
    """One connection per store, shared by all threads of a process and guarded by a re-entrant lock.

    Every public operation takes the lock, so one store object may be used from many threads (and
    from ``anyio.to_thread``). Each write commits on its own unless it runs inside
    :meth:`transaction`. Other processes may open the same file at the same time (WAL mode, busy
    timeout).
    """

    def __init__(
        self, path: str | Path, *, readonly: bool = False, share: StoreConnection | None = None
    ) -> None:
        self.path = str(path)
        self._db: Database
        self._lock: threading.RLock
        if share is not None:  # a second view of another store's connection (same file, same lock)
            self._db, self._lock, self._owner = share._db, share._lock, False
        else:
            self._db = open_readonly(path) if readonly else open_database(path)
            self._lock, self._owner = threading.RLock(), True
        self._conn = self._db.conn
        self._closed = False
        self.txn_epoch = 0  # bumped when an outermost transaction begins or ends (per-transaction caches)
        self._checkpointer: BackgroundCheckpointer | None = None

    @classmethod
    def open(cls, path: str | Path) -> Self:
        """Open (creating or migrating as needed) the database at ``path``; ``":memory:"`` works too."""
        return cls(path)

    @classmethod
    def open_readonly(cls, path: str | Path) -> Self:
        """Open an existing file read-only (``mode=ro``): no migration, no write; it sees other
        processes' commits as they land. :class:`RecordingsError` when it is missing or not a store."""
        return cls(path, readonly=True)

    @classmethod
    def sharing(cls, other: StoreConnection) -> Self:
        """This class's API over ``other``'s open connection (one file, one lock, one transaction).

        The proxy records answers into its trace file this way: both writes share the writer's
        transaction. Closing the view leaves ``other`` open; closing ``other`` closes both.
        """
        return cls(other.path, share=other)

    def close(self) -> None:
        """Close the connection (a :meth:`sharing` view only stops itself); further use raises :class:`RecordingsError`."""
        with self._lock:
            if not self._closed:
                self._closed = True
                if self._checkpointer is not None:
                    self._checkpointer.close()
                if self._owner:
                    self._conn.close()

    def set_busy_timeout(self, milliseconds: int) -> None:
        """How long a write waits for another connection's write lock before "database is locked"."""
        with self._locked():
            self._conn.execute(f"PRAGMA busy_timeout={int(milliseconds)}")

    def checkpoint_in_background(self, interval: float = 0.25) -> None:
        """Stop checkpointing inside commits; a background thread checkpoints instead until :meth:`close`.

        For writers whose commits must stay fast (see :mod:`recordings.checkpoint`). No effect on
        an in-memory database or when already on.
        """
        with self._locked():
            if self.path == ":memory:" or self._checkpointer is not None:
                return
            self._conn.execute("PRAGMA wal_autocheckpoint=0")
            self._checkpointer = BackgroundCheckpointer(self.path, interval)

    @property
    def db(self) -> Database:
        """The sqlite-utils handle, for ad-hoc queries (take care: it bypasses the store's lock)."""
        self._check_open()
        return self._db

    @property
    def schema_version(self) -> int:
        """``PRAGMA user_version`` of the open database."""
        with self._locked():
            return user_version(self._db)

    @property
    def journal_mode(self) -> str:
        """The journal mode (``wal`` for files, ``memory`` for ``":memory:"``)."""
        with self._locked():
            return str(self._conn.execute("PRAGMA journal_mode").fetchone()[0])

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group writes into one atomic transaction (nested use becomes a savepoint).

        Holds the store's lock until it ends, so other threads wait rather than interleave.
        """
        with self._locked():
            if self._conn.in_transaction:
                self._conn.execute("SAVEPOINT store_nested")
                try:
                    yield
                except BaseException:
                    self._conn.execute("ROLLBACK TO SAVEPOINT store_nested")
                    self._conn.execute("RELEASE SAVEPOINT store_nested")
                    raise
                self._conn.execute("RELEASE SAVEPOINT store_nested")
                return
            self._conn.execute("BEGIN IMMEDIATE")
            self.txn_epoch += 1
            try:
                yield
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
            else:
                try:
                    self._conn.execute("COMMIT")
                except BaseException:  # e.g. disk full: do not leave the transaction open
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    raise
            finally:
                self.txn_epoch += 1

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        """Run one statement; a text value holding a lone surrogate is bound as its JSON escape.

        SQLite text must be UTF-8, which a lone surrogate (a client's JSON ``"\\ud800"``) is not, and
        the driver refuses to bind it. Escaped (:func:`recordings.results.escape_surrogates`), stored
        JSON decodes to exactly what was sent, and a plain text column holds the escape as text; a
        lookup by the same value finds it. Nothing is checked on the usual path: the driver's refusal
        is the check.
        """
        try:
            return self._conn.execute(sql, params)
        except UnicodeEncodeError:  # raised while binding: nothing was executed
            escaped = [escape_surrogates(v) if isinstance(v, str) else v for v in params]
            return self._conn.execute(sql, escaped)

    def _locked(self) -> threading.RLock:
        """The store's lock, after checking the store is open (``with self._locked(): ...``).

        A plain lock rather than a generator-based context manager: it is taken for every row.
        """
        self._check_open()
        return self._lock

    def _check_open(self) -> None:
        if self._closed:
            raise RecordingsError(f"recording store {self.path} is closed")
