"""The one versioned schema of a finmcp database: recorded responses and logged traces.

The schema version lives in ``PRAGMA user_version``. ``MIGRATIONS[i]`` upgrades a database from
version ``i`` to ``i + 1``; opening a database runs the missing steps in one ``BEGIN IMMEDIATE``
transaction (DDL is transactional in SQLite, so a failed or concurrent migration leaves no half
schema). A database whose version is newer than :data:`SCHEMA_VERSION` is refused with
:class:`SchemaVersionError` rather than misread. Never edit a released step: append a new one.

Durability: the database runs in WAL mode with ``synchronous=NORMAL``. A committed transaction is in
the WAL file (handed to the OS with ``write()``) before ``COMMIT`` returns, so it survives the writing
process being killed (``kill -9``, crash). Only an OS crash or power loss can drop the last
transactions since the most recent checkpoint; the database is never corrupted either way.

Tables (enumerated values are checked by the store, not by SQL):

``responses``
    one recorded tool output per (inventory, tool, args_key); ``arguments`` is the canonical JSON,
    ``content`` the JSON list of MCP content blocks, ``structured_content`` JSON or NULL,
    ``provenance`` is ``simulated`` | ``recorded:<upstream>`` | ``imported:<file>``.
``runs``
    run_id, created, meta (JSON).
``sessions``
    one row per client session (handshake era) or client key (2026-07-28 era).
``messages``
    every raw JSON-RPC message both ways, secrets redacted.
``calls``
    one row per ``tools/call`` (the evaluator's contract; column names are fixed).
``response_steps``
    every recorded answer in the order the upstream gave it, per (inventory, tool, args_key): ``step``
    counts from 0; an answer is a result (``content`` JSON list, ``structured_content``, ``is_error``)
    or a JSON-RPC error (``rpc_error`` JSON ``{code, message, data?}``, ``content`` NULL). Sequence
    replay (``finmcp-server --replay sequence``) serves them in order. ``notifications`` (schema 5) is
    the JSON list of the notifications the upstream sent while answering that call (progress, log
    messages), in order, each ``{method, params}``; NULL: none (or recorded before schema 5).
``model_exchanges`` (schema 7)
    one row per request through the proxy's model door (:mod:`recordings.model_schema`).
``servers`` (schema 5)
    what a recorded upstream declared, one row per server name (the name its answers are stored
    under): ``protocol_version``, ``server_info`` / ``capabilities`` JSON, ``instructions``, ``tools``
    (JSON, the whole ``tools/list`` as declared, every page joined), ``provenance``, ``created`` /
    ``updated``. ``finmcp-server --recordings FILE`` serves such a server as it was (docs/server.md).
``answers`` (schema 6)
    an agent's final answer per (run_id, sample_id, trial, turn): ``answer`` text (NULL: none),
    ``error`` (why there is none, or what went wrong), ``source`` (``harness`` | ``import:<file>`` |
    ``model``), ``created``. One row per key; a later write replaces it (:mod:`recordings.answers`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sqlite_utils import Database

from finmcp.recordings.errors import SchemaError, SchemaVersionError
from finmcp.recordings.model_schema import create_model_exchanges

BUSY_TIMEOUT_MS = 10_000
"""How long a writer waits for another process's write lock before failing."""


@dataclass(frozen=True)
class Migration:
    """One schema step: ``apply`` turns version ``version - 1`` into ``version``."""

    version: int
    description: str
    apply: Callable[[Database], None]


# The DDL is written out rather than generated (sqlite-utils spells a float column FLOAT in 3.x and
# REAL in 4.x), so every installation creates the same schema. The text is what sqlite-utils 4 wrote
# when these steps were released, so databases created before and after read alike.

RESPONSES_DDL = (
    """CREATE TABLE "responses" (
   "id" INTEGER PRIMARY KEY,
   "inventory" TEXT NOT NULL,
   "tool" TEXT NOT NULL,
   "args_key" TEXT NOT NULL,
   "arguments" TEXT NOT NULL,
   "content" TEXT NOT NULL,
   "structured_content" TEXT,
   "is_error" INTEGER NOT NULL DEFAULT 0,
   "latency_ms" REAL,
   "provenance" TEXT NOT NULL,
   "created" TEXT NOT NULL
)""",
    """CREATE UNIQUE INDEX "responses_inventory_tool_args_key"
    ON "responses" ("inventory", "tool", "args_key")""",
)


def _create_responses(db: Database) -> None:
    for statement in RESPONSES_DDL:
        db.execute(statement)


CALLS_COLUMNS: tuple[str, ...] = (
    "id",
    "run_id",
    "sample_id",
    "turn",
    "session_key",
    "client_name",
    "protocol_version",
    "jsonrpc_id",
    "seq",
    "tool",
    "arguments",
    "result",
    "rpc_error",
    "status",
    "t_req_ns",
    "t_resp_ns",
    "wall_time",
    "latency_ms",
    "call_group",
    "group_source",
    "trial",
)
"""The exact column list of ``calls``, in table order (the evaluator's contract)."""
JSON_CALL_COLUMNS: tuple[str, ...] = ("arguments", "result", "rpc_error", "jsonrpc_id")
"""The ``calls`` columns that hold JSON text."""
MESSAGE_COLUMNS: tuple[str, ...] = (
    "id",
    "session_key",
    "run_id",
    "sample_id",
    "turn",
    "direction",
    "seq",
    "t_ns",
    "wall_time",
    "jsonrpc_id",
    "method",
    "kind",
    "body",
    "headers",
)
"""The column list of ``messages``, in table order."""

TRACES_DDL = (
    """CREATE TABLE "runs" (
   "run_id" TEXT PRIMARY KEY,
   "created" TEXT NOT NULL,
   "meta" TEXT
)""",
    """CREATE TABLE "sessions" (
   "session_key" TEXT PRIMARY KEY,
   "run_id" TEXT,
   "client_name" TEXT,
   "client_version" TEXT,
   "protocol_version" TEXT,
   "era" TEXT,
   "transport" TEXT,
   "upstream" TEXT,
   "started" TEXT,
   "ended" TEXT
)""",
    """CREATE TABLE "messages" (
   "id" INTEGER PRIMARY KEY,
   "session_key" TEXT,
   "run_id" TEXT,
   "sample_id" TEXT,
   "turn" INTEGER,
   "direction" TEXT NOT NULL,
   "seq" INTEGER,
   "t_ns" INTEGER,
   "wall_time" TEXT,
   "jsonrpc_id" TEXT,
   "method" TEXT,
   "kind" TEXT NOT NULL,
   "body" TEXT NOT NULL,
   "headers" TEXT
)""",
    """CREATE INDEX "messages_session_seq"
    ON "messages" ("session_key", "seq")""",
    """CREATE INDEX "messages_run_sample_turn"
    ON "messages" ("run_id", "sample_id", "turn")""",
    """CREATE TABLE "calls" (
   "id" INTEGER PRIMARY KEY,
   "run_id" TEXT,
   "sample_id" TEXT,
   "turn" INTEGER,
   "session_key" TEXT,
   "client_name" TEXT,
   "protocol_version" TEXT,
   "jsonrpc_id" TEXT,
   "seq" INTEGER,
   "tool" TEXT,
   "arguments" TEXT,
   "result" TEXT,
   "rpc_error" TEXT,
   "status" TEXT NOT NULL DEFAULT 'pending',
   "t_req_ns" INTEGER,
   "t_resp_ns" INTEGER,
   "wall_time" TEXT,
   "latency_ms" REAL,
   "call_group" INTEGER,
   "group_source" TEXT,
   "trial" INTEGER NOT NULL DEFAULT 0
)""",
    """CREATE INDEX "calls_run_sample_turn_seq"
    ON "calls" ("run_id", "sample_id", "turn", "seq")""",
    """CREATE INDEX "calls_session_jsonrpc_id"
    ON "calls" ("session_key", "jsonrpc_id")""",
)


def _create_traces(db: Database) -> None:
    for statement in TRACES_DDL:
        db.execute(statement)


def _drop_call_id_index(db: Database) -> None:
    """No query looks calls up by (session, JSON-RPC id), and each index costs every commit a page.

    The proxy commits a call's row before forwarding its response; this index was a third of that
    commit's WAL pages (about 10 us of the response's critical path).
    """
    db.execute("DROP INDEX IF EXISTS calls_session_jsonrpc_id")


RESPONSE_STEPS_DDL = (
    """CREATE TABLE "response_steps" (
   "id" INTEGER PRIMARY KEY,
   "inventory" TEXT NOT NULL,
   "tool" TEXT NOT NULL,
   "args_key" TEXT NOT NULL,
   "step" INTEGER NOT NULL,
   "arguments" TEXT NOT NULL,
   "content" TEXT,
   "structured_content" TEXT,
   "is_error" INTEGER NOT NULL DEFAULT 0,
   "rpc_error" TEXT,
   "latency_ms" REAL,
   "provenance" TEXT NOT NULL,
   "created" TEXT NOT NULL
)""",
    """CREATE UNIQUE INDEX "response_steps_inventory_tool_args_key_step"
    ON "response_steps" ("inventory", "tool", "args_key", "step")""",
)


def _create_response_steps(db: Database) -> None:
    """Every recorded answer in order, errors included (sequence replay; issue 16)."""
    for statement in RESPONSE_STEPS_DDL:
        db.execute(statement)


SERVERS_DDL = (
    """CREATE TABLE "servers" (
   "name" TEXT PRIMARY KEY,
   "protocol_version" TEXT,
   "server_info" TEXT,
   "capabilities" TEXT,
   "instructions" TEXT,
   "tools" TEXT,
   "provenance" TEXT NOT NULL,
   "created" TEXT NOT NULL,
   "updated" TEXT NOT NULL
)""",
    'ALTER TABLE "response_steps" ADD COLUMN "notifications" TEXT',
)


def _create_servers(db: Database) -> None:
    """What recorded upstreams declared, and the notifications sent with each recorded answer (issue 28)."""
    for statement in SERVERS_DDL:
        db.execute(statement)


ANSWERS_DDL = (
    """CREATE TABLE "answers" (
   "id" INTEGER PRIMARY KEY,
   "run_id" TEXT NOT NULL,
   "sample_id" TEXT NOT NULL,
   "trial" INTEGER NOT NULL DEFAULT 0,
   "turn" INTEGER NOT NULL,
   "answer" TEXT,
   "error" TEXT,
   "source" TEXT NOT NULL,
   "created" TEXT NOT NULL
)""",
    """CREATE UNIQUE INDEX "answers_run_sample_trial_turn"
    ON "answers" ("run_id", "sample_id", "trial", "turn")""",
)


def _create_answers(db: Database) -> None:
    """Agents' final answers per (run, sample, trial, turn) (issue 27)."""
    for statement in ANSWERS_DDL:
        db.execute(statement)


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "recorded tool responses", _create_responses),
    Migration(2, "trace tables: runs, sessions, messages, calls", _create_traces),
    Migration(3, "drop the unused calls (session_key, jsonrpc_id) index", _drop_call_id_index),
    Migration(4, "response_steps: every recorded answer in order, errors included", _create_response_steps),
    Migration(5, "servers: what recorded upstreams declared; response_steps.notifications", _create_servers),
    Migration(6, "answers: agents' final answers per run, sample, trial and turn", _create_answers),
    Migration(7, "model_exchanges: the model door's exchanges", create_model_exchanges),
)
SCHEMA_VERSION = MIGRATIONS[-1].version
"""The newest schema this code knows; ``PRAGMA user_version`` of a fully migrated database."""

OWN_TABLES = frozenset(
    {
        "responses",
        "runs",
        "sessions",
        "messages",
        "calls",
        "response_steps",
        "servers",
        "answers",
        "model_exchanges",
    }
)


def user_version(db: Database) -> int:
    """The schema version stored in the database header."""
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def connect(path: str | Path) -> Database:
    """Open (or create) a SQLite file with the store's connection settings, without migrating.

    Autocommit at the driver level (``isolation_level=None``): every statement commits on its own
    unless an explicit ``BEGIN`` is open. WAL mode, ``synchronous=NORMAL``, a busy timeout.
    """
    target = str(path)
    if target != ":memory:":
        parent = Path(target).parent
        if not parent.is_dir():
            raise SchemaError(f"cannot open database {target}: folder {parent} does not exist")
    try:
        conn = sqlite3.connect(
            target, check_same_thread=False, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000
        )
    except sqlite3.Error as exc:
        raise SchemaError(f"cannot open database {target}: {exc}") from exc
    db = Database(conn, execute_plugins=False)
    try:
        db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        if target != ":memory:":
            db.enable_wal()
        db.execute("PRAGMA synchronous=NORMAL")
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise SchemaError(f"cannot open database {target}: {exc}") from exc
    return db


def migrate(db: Database, target: int | None = None) -> int:
    """Bring the database to ``target`` (default: :data:`SCHEMA_VERSION`); returns the new version.

    Raises :class:`SchemaVersionError` for a database newer than this code, :class:`SchemaError` for a
    downgrade request or a non-empty file that is not a finmcp database.
    """
    target = SCHEMA_VERSION if target is None else target
    if not 0 <= target <= SCHEMA_VERSION:
        raise SchemaError(f"unknown schema version {target}; this finmcp knows versions 0..{SCHEMA_VERSION}")
    current = _checked_version(db)
    if current == target:
        return current
    db.execute("BEGIN IMMEDIATE")
    try:
        current = _checked_version(db)  # another process may have migrated while we waited
        if current > target:
            raise SchemaError(f"database is at schema version {current}; cannot downgrade to {target}")
        if current == 0:
            _refuse_foreign_tables(db)
        for step in MIGRATIONS[current:target]:
            step.apply(db)
        db.execute(f"PRAGMA user_version={int(target)}")
        db.execute("COMMIT")
    except BaseException:
        if db.conn.in_transaction:
            db.execute("ROLLBACK")
        raise
    return target


def open_database(path: str | Path) -> Database:
    """Connect and migrate to the current schema; the database the store uses."""
    db = connect(path)
    try:
        migrate(db)
    except BaseException:
        db.close()
        raise
    return db


def _checked_version(db: Database) -> int:
    version = user_version(db)
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"database schema version {version} is newer than this finmcp understands "
            f"(knows up to {SCHEMA_VERSION}); upgrade finmcp to open it"
        )
    if version < 0:
        raise SchemaError(f"database has an invalid schema version {version}")
    return version


def _refuse_foreign_tables(db: Database) -> None:
    foreign = sorted(name for name in db.table_names() if not name.startswith("sqlite_"))
    if foreign:
        raise SchemaError(
            "file is not a finmcp recordings database (schema version 0 but it already has tables: "
            + ", ".join(foreign)
            + ")"
        )
