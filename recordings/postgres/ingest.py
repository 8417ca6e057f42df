"""Storing a batch from a proxy's outbox in the PostgreSQL trace store, once, in one transaction.

Each table's rows are ``COPY``'d into a temporary staging table (created once per connection, emptied
at every commit), then moved with one ``INSERT … SELECT … ON CONFLICT`` keyed by where the row came
from, so a batch shipped twice is stored once:

- ``calls`` on ``(origin, local_id)``: the latest state wins (a pending row becomes final; a final
  row is never turned back into a pending one, should an older copy arrive late);
- ``messages`` on ``(origin, local_id)``: appended once, ``DO NOTHING``;
- ``sessions`` on ``(origin, session_key)``: every field known now fills in (never erases) what is stored;
- ``runs`` on ``run_id`` (shared by every proxy of a run): created once; a missing ``meta`` is filled in.

The same transaction updates the origin's row in ``origins`` (label, heartbeat, rows still waiting
and their runs, rows shipped), so what the scorer reads about a proxy is exactly as current as its rows.
"""

from __future__ import annotations

from typing import Any

from finmcp.recordings.outbox import COLUMNS, Backlog, Batch

_STAGED: dict[str, tuple[str, ...]] = {
    "runs": COLUMNS["runs"],
    "sessions": COLUMNS["sessions"],
    "calls": ("local_id", *COLUMNS["calls"][1:]),
    "messages": ("local_id", *COLUMNS["messages"][1:]),
}
"""Staging columns per table: the outbox's columns, with the local ``id`` as ``local_id``."""

STAGING_PREFIX = "ship_stage_"


def _insert_sql(table: str) -> str:
    staged = _STAGED[table]
    columns = ", ".join(staged)
    if table == "runs":
        return (
            f"INSERT INTO runs ({columns}) SELECT {columns} FROM {STAGING_PREFIX}runs"
            " ON CONFLICT (run_id) DO UPDATE SET meta = EXCLUDED.meta"
            " WHERE runs.meta IS NULL AND EXCLUDED.meta IS NOT NULL"
        )
    target = f"origin, {columns}"
    source = f"%(origin)s, {columns}"
    if table == "messages":
        return (
            f"INSERT INTO messages ({target}) SELECT {source} FROM {STAGING_PREFIX}messages"
            " ON CONFLICT (origin, local_id) DO NOTHING"
        )
    if table == "calls":
        updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in staged if c != "local_id")
        return (
            f"INSERT INTO calls ({target}) SELECT {source} FROM {STAGING_PREFIX}calls"
            f" ON CONFLICT (origin, local_id) DO UPDATE SET {updates}"
            " WHERE calls.status = 'pending' OR EXCLUDED.status <> 'pending'"
        )
    updates = ", ".join(f"{c} = COALESCE(EXCLUDED.{c}, sessions.{c})" for c in staged if c != "session_key")
    return (
        f"INSERT INTO sessions ({target}) SELECT {source} FROM {STAGING_PREFIX}sessions"
        f" ON CONFLICT (origin, session_key) DO UPDATE SET {updates}"
    )


INSERTS = {table: _insert_sql(table) for table in _STAGED}
ORIGIN_UPSERT = (
    "INSERT INTO origins (origin, label, heartbeat, pending_rows, pending_runs, shipped_rows)"
    " VALUES (%(origin)s, %(label)s, now(), %(pending)s, %(runs)s, %(shipped)s)"
    " ON CONFLICT (origin) DO UPDATE SET label = EXCLUDED.label, heartbeat = now(),"
    " pending_rows = EXCLUDED.pending_rows, pending_runs = EXCLUDED.pending_runs,"
    " shipped_rows = origins.shipped_rows + EXCLUDED.shipped_rows"
)


class Ingest:
    """Ships batches of one origin over one psycopg connection (autocommit; each batch a transaction)."""

    def __init__(self, conn: Any, origin: str, label: str) -> None:
        self.conn = conn
        self.origin = origin
        self.label = label
        self._staged = False

    def _create_staging(self) -> None:
        for table, columns in _STAGED.items():
            self.conn.execute(
                f"CREATE TEMP TABLE {STAGING_PREFIX}{table} ON COMMIT DELETE ROWS AS"
                f" SELECT {', '.join(columns)} FROM {table} WITH NO DATA"
            )
        self._staged = True

    def ship(self, batch: Batch) -> int:
        """Store ``batch`` and the origin's progress in one transaction; returns the rows shipped."""
        with self.conn.transaction():
            if not self._staged:
                self._create_staging()
            for table in ("runs", "sessions", "calls", "messages"):
                rows = batch.rows.get(table)
                if not rows:
                    continue
                self._copy(table, rows)
                self.conn.execute(INSERTS[table], {"origin": self.origin})
            shipped = batch.row_count()
            self._origin_row(batch.after, shipped)
        return shipped

    def heartbeat(self, waiting: Backlog) -> None:
        """Update the origin's row (nothing to ship, or only to say what still waits)."""
        with self.conn.transaction():
            self._origin_row(waiting, 0)

    def _origin_row(self, waiting: Backlog, shipped: int) -> None:
        self.conn.execute(
            ORIGIN_UPSERT,
            {
                "origin": self.origin,
                "label": self.label,
                "pending": waiting.rows,
                "runs": waiting.runs_json(),
                "shipped": shipped,
            },
        )

    def _copy(self, table: str, rows: list[tuple[Any, ...]]) -> None:
        columns = ", ".join(_STAGED[table])
        with (
            self.conn.cursor() as cur,
            cur.copy(f"COPY {STAGING_PREFIX}{table} ({columns}) FROM STDIN") as copy,
        ):
            for row in rows:
                copy.write_row(_clean(row))


def _clean(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """PostgreSQL text holds no NUL character: a raw NUL (only ever in an unparseable body) becomes U+FFFD."""
    for value in row:
        if isinstance(value, str) and "\x00" in value:
            return tuple(v.replace("\x00", "\ufffd") if isinstance(v, str) else v for v in row)
    return row
