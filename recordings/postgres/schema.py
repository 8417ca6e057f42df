"""The PostgreSQL schema of the shared trace store, versioned with migrations.

The logical tables are SQLite's (:mod:`recordings.schema`): ``runs``, ``sessions``, ``messages`` and
``calls``, with the same column names and values (JSON stays text, byte for byte as logged), so every
reader sees the same rows from either engine. Each row that a proxy wrote also carries where it came
from: ``origin`` (the proxy's identity, kept in its local file) and ``local_id`` (the row's id
there); ``UNIQUE (origin, local_id)`` makes shipping idempotent. ``sessions`` are unique per
(origin, session_key). ``origins`` holds each shipper's progress, so a scorer can tell whether rows
of a run are still in flight.

The version lives in ``finmcp_schema (version)``; migrations run in one transaction under an
advisory lock, so several proxies starting at once migrate once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from finmcp.recordings.errors import SchemaError, SchemaVersionError
from finmcp.recordings.schema import CALLS_COLUMNS

MIGRATION_LOCK = 0x66696E6D6370  # pg_advisory_xact_lock key: "finmcp"


@dataclass(frozen=True)
class PgMigration:
    """One schema step: its statements turn version ``version - 1`` into ``version``."""

    version: int
    description: str
    statements: tuple[str, ...]


TRACE_TABLES = (
    """CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,
    created TEXT NOT NULL,
    meta TEXT
)""",
    """CREATE TABLE sessions (
    id BIGSERIAL PRIMARY KEY,
    origin TEXT NOT NULL,
    session_key TEXT NOT NULL,
    run_id TEXT,
    client_name TEXT,
    client_version TEXT,
    protocol_version TEXT,
    era TEXT,
    transport TEXT,
    upstream TEXT,
    started TEXT,
    ended TEXT,
    UNIQUE (origin, session_key)
)""",
    """CREATE TABLE messages (
    id BIGSERIAL PRIMARY KEY,
    origin TEXT NOT NULL,
    local_id BIGINT NOT NULL,
    session_key TEXT,
    run_id TEXT,
    sample_id TEXT,
    turn INTEGER,
    direction TEXT NOT NULL,
    seq BIGINT,
    t_ns BIGINT,
    wall_time TEXT,
    jsonrpc_id TEXT,
    method TEXT,
    kind TEXT NOT NULL,
    body TEXT NOT NULL,
    headers TEXT,
    UNIQUE (origin, local_id)
)""",
    "CREATE INDEX messages_session_seq ON messages (session_key, seq)",
    "CREATE INDEX messages_run_sample_turn ON messages (run_id, sample_id, turn)",
    """CREATE TABLE calls (
    id BIGSERIAL PRIMARY KEY,
    origin TEXT NOT NULL,
    local_id BIGINT NOT NULL,
    run_id TEXT,
    sample_id TEXT,
    turn INTEGER,
    session_key TEXT,
    client_name TEXT,
    protocol_version TEXT,
    jsonrpc_id TEXT,
    seq BIGINT,
    tool TEXT,
    arguments TEXT,
    result TEXT,
    rpc_error TEXT,
    status TEXT NOT NULL DEFAULT 'pending',
    t_req_ns BIGINT,
    t_resp_ns BIGINT,
    wall_time TEXT,
    latency_ms DOUBLE PRECISION,
    call_group INTEGER,
    group_source TEXT,
    trial INTEGER NOT NULL DEFAULT 0,
    UNIQUE (origin, local_id)
)""",
    # per-run/sample/turn reads (the evaluator's order) and time-range queries
    "CREATE INDEX calls_run_sample_turn_seq ON calls (run_id, sample_id, turn, seq)",
    "CREATE INDEX calls_wall_time ON calls (wall_time)",
    "CREATE INDEX messages_wall_time ON messages (wall_time)",
    """CREATE TABLE origins (
    origin TEXT PRIMARY KEY,
    label TEXT,
    first_seen TIMESTAMPTZ NOT NULL DEFAULT now(),
    heartbeat TIMESTAMPTZ NOT NULL DEFAULT now(),
    pending_rows BIGINT NOT NULL DEFAULT 0,
    pending_runs TEXT,
    shipped_rows BIGINT NOT NULL DEFAULT 0
)""",
)

MIGRATIONS: tuple[PgMigration, ...] = (
    PgMigration(1, "trace tables: runs, sessions, messages, calls; shipper origins", TRACE_TABLES),
)
SCHEMA_VERSION = MIGRATIONS[-1].version

PG_CALLS_COLUMNS: tuple[str, ...] = ("id", "origin", "local_id", *CALLS_COLUMNS[1:])
"""The columns of ``calls`` in table order: SQLite's contract plus where the row came from."""


def current_version(conn: Any) -> int:
    """The schema version of the database behind ``conn`` (0 for an empty database)."""
    exists = conn.execute("SELECT to_regclass('finmcp_schema') IS NOT NULL").fetchone()[0]
    if not exists:
        return 0
    row = conn.execute("SELECT version FROM finmcp_schema").fetchone()
    return int(row[0]) if row else 0


def migrate(conn: Any, target: int | None = None) -> int:
    """Bring the database to ``target`` (default: newest) in one transaction; returns the version.

    ``conn`` is a psycopg connection. Raises :class:`SchemaVersionError` for a database newer than this
    code and :class:`SchemaError` for a database that has tables of its own but no finmcp version.
    """
    target = SCHEMA_VERSION if target is None else target
    if not 0 <= target <= SCHEMA_VERSION:
        raise SchemaError(f"unknown schema version {target}; this finmcp knows versions 0..{SCHEMA_VERSION}")
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        current = current_version(conn)
        if current > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"PostgreSQL trace store is at schema version {current}, newer than this finmcp "
                f"understands (knows up to {SCHEMA_VERSION}); upgrade finmcp to use it"
            )
        if current > target:
            raise SchemaError(f"database is at schema version {current}; cannot downgrade to {target}")
        if current == 0:
            _refuse_foreign_tables(conn)
            conn.execute("CREATE TABLE finmcp_schema (version INTEGER NOT NULL)")
            conn.execute("INSERT INTO finmcp_schema (version) VALUES (0)")
        for step in MIGRATIONS[current:target]:
            for statement in step.statements:
                conn.execute(statement)
        conn.execute("UPDATE finmcp_schema SET version = %s", (target,))
    return target


def _refuse_foreign_tables(conn: Any) -> None:
    names: Sequence[tuple[str]] = conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
        "ORDER BY table_name"
    ).fetchall()
    if names:
        raise SchemaError(
            "database is not a finmcp trace store (no finmcp_schema table but it already has tables: "
            + ", ".join(name for (name,) in names)
            + "); give finmcp a database of its own"
        )
