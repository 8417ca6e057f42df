"""A trace file as an outbox: which rows changed since they were last shipped to PostgreSQL.

A proxy run with ``--ship-to`` turns its SQLite file into an outbox (:func:`install_outbox`): a table
``ship_outbox`` that SQLite triggers fill with one entry ``(seq, table, rowid, run_id, queued)`` for
every row inserted or updated in ``runs``, ``sessions``, ``calls`` and ``messages``, inside the same
transaction as the row itself. So the change log is exactly as durable as the trace (a row committed
before its response was forwarded has its entry committed with it), and capture needs no cooperation
from the code that writes rows: calls inserted at request time and updated when the answer arrives,
sessions updated at their end, messages and runs appended, all arrive in order of ``seq``.

The shipper reads a batch of entries and the *current* state of the rows they name in one read
snapshot (:func:`read_batch`), stores them elsewhere, then deletes the entries it shipped
(:func:`acknowledge`). A crash between the two re-ships the batch; the receiver's keys make that
harmless. Entries are only ever deleted by the one shipper holding :func:`shipper_lock`.

The file keeps its identity, ``ship_origin.origin`` (a UUID created with the outbox), so a proxy
restarted on the same file ships under the same name. Once installed, the triggers stay: a proxy
started later on the file without ``--ship-to`` keeps filling the outbox (nothing is lost; ``flush``
drains it). Files that never shipped have no triggers and pay nothing.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from finmcp.recordings.clock import utc_now_iso
from finmcp.recordings.schema import CALLS_COLUMNS, MESSAGE_COLUMNS, connect
from finmcp.recordings.trace_types import SESSION_FIELDS

TABLE_CODES = {"runs": 1, "sessions": 2, "calls": 3, "messages": 4}
"""The ``tbl`` number an outbox entry names its table by (smaller than text in every entry)."""
TABLE_NAMES = {code: name for name, code in TABLE_CODES.items()}

SESSION_COLUMNS: tuple[str, ...] = ("session_key", *SESSION_FIELDS)
RUN_COLUMNS: tuple[str, ...] = ("run_id", "created", "meta")
COLUMNS: dict[str, tuple[str, ...]] = {
    "runs": RUN_COLUMNS,
    "sessions": SESSION_COLUMNS,
    "calls": CALLS_COLUMNS,
    "messages": MESSAGE_COLUMNS,
}
"""The columns shipped per table, in the order :func:`read_batch` returns them (``id`` first where kept)."""

_NOW = "((julianday('now') - 2440587.5) * 86400.0)"  # Unix seconds with milliseconds (SQLite < 3.42)

OUTBOX_DDL = (
    """CREATE TABLE IF NOT EXISTS ship_outbox (
   seq INTEGER PRIMARY KEY,
   tbl INTEGER NOT NULL,
   row_id INTEGER NOT NULL,
   run_id TEXT,
   queued REAL NOT NULL
)""",
    "CREATE TABLE IF NOT EXISTS ship_origin (origin TEXT NOT NULL, created TEXT NOT NULL)",
)


def _trigger(table: str, event: str) -> str:
    return (
        f"CREATE TRIGGER IF NOT EXISTS ship_{table}_{event.lower()} AFTER {event} ON {table} BEGIN"
        f" INSERT INTO ship_outbox (tbl, row_id, run_id, queued)"
        f" VALUES ({TABLE_CODES[table]}, NEW.rowid, NEW.run_id, {_NOW}); END"
    )


TRIGGERS = tuple(
    _trigger(table, event)
    for table in ("runs", "sessions", "calls", "messages")
    for event in ("INSERT", "UPDATE")
    if not (table == "messages" and event == "UPDATE")  # messages are appended, never changed
)


def is_outbox(conn: sqlite3.Connection) -> bool:
    """Whether the file behind ``conn`` is a shipping outbox (its triggers are installed)."""
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'ship_outbox'").fetchone()
    return row is not None


def install_outbox(conn: sqlite3.Connection) -> str:
    """Make the (migrated) trace file behind ``conn`` an outbox; returns its origin (a UUID).

    Idempotent. The first installation also queues every row already in the file, so turning
    shipping on for a file that was written without it ships its whole history. ``conn`` must be in
    autocommit mode (the store's connection is); everything happens in one ``BEGIN IMMEDIATE``.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        fresh = not is_outbox(conn)
        for statement in OUTBOX_DDL:
            conn.execute(statement)
        if fresh:
            for table in ("runs", "sessions", "calls", "messages"):
                conn.execute(
                    f"INSERT INTO ship_outbox (tbl, row_id, run_id, queued)"
                    f" SELECT {TABLE_CODES[table]}, rowid, run_id, {_NOW} FROM {table} ORDER BY rowid"
                )
        for statement in TRIGGERS:
            conn.execute(statement)
        row = conn.execute("SELECT origin FROM ship_origin").fetchone()
        if row is None:
            origin = str(uuid.uuid4())
            conn.execute("INSERT INTO ship_origin (origin, created) VALUES (?, ?)", (origin, utc_now_iso()))
        else:
            origin = str(row[0])
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return origin


def open_outbox(path: str | Path, busy_timeout_ms: int = 2000) -> sqlite3.Connection:
    """A connection of its own to the outbox file at ``path`` (the shipper's; autocommit, WAL)."""
    db = connect(path)
    db.conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
    return db.conn


@dataclass
class Backlog:
    """What waits in an outbox: entries, the age of the oldest, and the runs they belong to."""

    rows: int = 0
    oldest: float | None = None  # Unix time the oldest waiting entry was queued
    runs: list[str] = field(default_factory=list)

    def lag_seconds(self, now: float) -> float:
        """Seconds the oldest waiting row has waited (0 when nothing waits)."""
        return 0.0 if self.oldest is None else max(0.0, now - self.oldest)

    def runs_json(self) -> str:
        """``runs`` as the JSON array stored in ``origins.pending_runs``."""
        return json.dumps(self.runs)


@dataclass
class Batch:
    """Entries ``seq <= last_seq`` of an outbox and the current state of the rows they name."""

    last_seq: int
    entries: int
    queued: list[float]  # when each entry was queued (for shipping lag)
    rows: dict[str, list[tuple[Any, ...]]]  # table -> rows, columns as COLUMNS[table]
    after: Backlog  # what will still wait once this batch is shipped

    def row_count(self) -> int:
        """Distinct rows in the batch (a call inserted and updated is one row)."""
        return sum(len(rows) for rows in self.rows.values())


def backlog(conn: sqlite3.Connection, after_seq: int = 0) -> Backlog:
    """What waits in the outbox beyond ``after_seq``."""
    count, oldest = conn.execute(
        "SELECT count(*), min(queued) FROM ship_outbox WHERE seq > ?", (after_seq,)
    ).fetchone()
    runs: list[str] = []
    if count:
        runs = [
            str(r[0])
            for r in conn.execute(
                "SELECT DISTINCT run_id FROM ship_outbox WHERE seq > ? AND run_id IS NOT NULL ORDER BY run_id",
                (after_seq,),
            )
        ]
    return Backlog(int(count), oldest, runs)


@contextmanager
def _snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """One read transaction: every query inside sees the same committed state."""
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")


def read_batch(conn: sqlite3.Connection, limit: int) -> Batch | None:
    """The oldest ``limit`` entries and their rows' current state, or None when the outbox is empty."""
    with _snapshot(conn):
        entries = conn.execute(
            "SELECT seq, queued FROM ship_outbox ORDER BY seq LIMIT ?", (int(limit),)
        ).fetchall()
        if not entries:
            return None
        last = int(entries[-1][0])
        rows: dict[str, list[tuple[Any, ...]]] = {}
        for table, code in TABLE_CODES.items():
            columns = ", ".join(COLUMNS[table])
            found = conn.execute(
                f"SELECT {columns} FROM {table} WHERE rowid IN"
                f" (SELECT row_id FROM ship_outbox WHERE seq <= ? AND tbl = ?) ORDER BY rowid",
                (last, code),
            ).fetchall()
            if found:
                rows[table] = found
        after = backlog(conn, last)
    return Batch(last, len(entries), [float(q) for _, q in entries], rows, after)


def acknowledge(conn: sqlite3.Connection, last_seq: int) -> None:
    """Forget the entries up to ``last_seq`` (they are stored at the receiver)."""
    conn.execute("DELETE FROM ship_outbox WHERE seq <= ?", (int(last_seq),))


def origin_of(conn: sqlite3.Connection) -> str | None:
    """The outbox's origin UUID, or None for a file that is not an outbox."""
    if not is_outbox(conn):
        return None
    row = conn.execute("SELECT origin FROM ship_origin").fetchone()
    return None if row is None else str(row[0])


def status_line(conn: sqlite3.Connection, now: float) -> str | None:
    """``outbox: N rows waiting (oldest S s), runs [...], origin U`` or None for a file that never shipped."""
    origin = origin_of(conn)
    if origin is None:
        return None
    with _snapshot(conn):
        waiting = backlog(conn)
    if not waiting.rows:
        return f"outbox: empty (everything shipped), origin {origin}"
    return (
        f"outbox: {waiting.rows} rows waiting to ship (oldest {waiting.lag_seconds(now):.1f} s),"
        f" runs {', '.join(waiting.runs) or '-'}, origin {origin}"
    )


class ShipperLockBusy(Exception):
    """Another process already ships this outbox."""


@contextmanager
def shipper_lock(path: str | Path) -> Iterator[None]:
    """Hold the one-shipper-per-outbox lock (``flock`` on ``PATH-shiplock``; freed when the process dies).

    Raises :class:`ShipperLockBusy` at once when another process holds it.
    """
    lock_path = f"{path}-shiplock"
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise ShipperLockBusy(f"another process ships {path}") from exc
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
