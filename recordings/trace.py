"""Logged traces: runs, sessions, raw messages and one row per ``tools/call``.

The write side, used by the proxy: every write commits before the method returns (unless inside
``store.transaction()``), so a call logged with :meth:`TraceWrites.finish_call` is durable before the
proxy forwards the response. Each write has a prepared form (``write_message``, ``write_call``,
``write_outcome``) taking a row built by :mod:`recordings.trace_rows`, so a caller can do the Python
work early and the SQL later in a batch. The reads are :class:`recordings.trace_store.TraceStore`'s.

JSON-RPC ids are stored as JSON text (``1`` and ``"1"`` stay distinct). Timestamps default to
``time.time_ns()`` and :func:`recordings.clock.utc_now_iso`; the proxy normally passes its own.
Secrets are redacted from every stored body, header list and argument object.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from finmcp.recordings.clock import utc_now_iso
from finmcp.recordings.connection import StoreConnection
from finmcp.recordings.errors import CallStateError, InvalidValueError, UnknownCallError
from finmcp.recordings.plumbing.protocol import ERA_LABELS
from finmcp.recordings.redact import redact_url
from finmcp.recordings.results import dumps
from finmcp.recordings.trace_rows import (
    GROUP_SOURCES,
    CallOutcome,
    CallRow,
    GroupRef,
    MessageRow,
    check_choice,
    check_int,
    check_text,
    prepare_call,
    prepare_message,
    prepare_outcome,
)
from finmcp.recordings.trace_types import SESSION_FIELDS

Scope = tuple[str | None, str | None, int, int | None]
"""Where group numbers are unique: ``(run_id, sample_id, trial, turn)``."""

GROUP_SCOPES_KEPT = 4096
"""Scopes whose group numbers a store remembers (the oldest is forgotten first); a run's scopes are
short-lived (one sample turn), and a late call of a forgotten scope's group only opens a new group."""
GROUP_REFS_KEPT = 4096
"""Group refs whose numbers a store remembers (all scopes together), the least recently written
forgotten first. A client that awaits each answer opens a group per call, so without a bound a
long-lived proxy kept one entry per call (``bench/bench_proxy.py``'s 10^5-call soak grew by ~200
bytes per call). A group gets more calls only while it is its client's current group, so a ref
forgotten after 4096 other groups were written is long closed; if one came back, its call would
open a new group."""


@dataclass(slots=True)
class _ScopeGroups:
    """The call groups of one scope a store has numbered: the next number to hand out."""

    next: int = 0
    checked_at: int | None = None  # the data_version at which ``next`` was last checked against the table


_INSERT_MESSAGE = (
    "INSERT INTO messages (session_key, run_id, sample_id, turn, direction, seq, t_ns, wall_time,"
    " jsonrpc_id, method, kind, body, headers) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_CALL = (
    "INSERT INTO calls (run_id, sample_id, turn, session_key, client_name, protocol_version, jsonrpc_id,"
    " seq, tool, arguments, t_req_ns, wall_time, call_group, group_source, trial, status, result,"
    " rpc_error, t_resp_ns, latency_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_FINISH_CALL = (
    "UPDATE calls SET result = ?, rpc_error = ?, status = ?, t_resp_ns = ?,"
    " latency_ms = COALESCE(?, (? - t_req_ns) / 1e6) WHERE id = ? AND status = 'pending'"
)


class TraceWrites(StoreConnection):
    """The proxy's writes of :class:`recordings.trace_store.SqliteTraceStore`."""

    def __init__(self, path: str | Path, **options: Any) -> None:
        super().__init__(path, **options)
        self._known_runs: set[str] = set()
        self._next_message_seq: dict[str | None, int] = {}
        self._next_call_seq: dict[str | None, int] = {}
        self._data_version: int | None = None
        self._seq_checked_in = -1  # the txn_epoch in which data_version was last checked
        self._groups: dict[Scope, _ScopeGroups] = {}  # call groups numbered from CallRow.group_ref
        self._group_numbers: dict[tuple[Scope, GroupRef], int] = {}  # the last GROUP_REFS_KEPT written

    # ---------------------------------------------------------------- runs and sessions

    def ensure_run(self, run_id: str, meta: Mapping[str, Any] | None = None) -> None:
        """Create the run row if missing; ``meta`` (JSON object), when given, replaces the stored meta."""
        check_text(run_id, "run_id")
        if meta is not None and not isinstance(meta, Mapping):
            raise InvalidValueError(f"run {run_id!r} meta: expected a JSON object")
        with self._locked():
            self._execute(
                "INSERT INTO runs (run_id, created, meta) VALUES (?, ?, ?) ON CONFLICT(run_id) DO UPDATE"
                " SET meta = COALESCE(excluded.meta, runs.meta)",
                (run_id, utc_now_iso(), None if meta is None else dumps(meta)),
            )
            self._known_runs.add(run_id)

    def _touch_run(self, run_id: str | None) -> None:
        if run_id is not None and run_id not in self._known_runs:
            self._execute(
                "INSERT OR IGNORE INTO runs (run_id, created) VALUES (?, ?)", (run_id, utc_now_iso())
            )
            self._known_runs.add(run_id)

    def start_session(self, session_key: str, **fields: Any) -> None:
        """Create or update a session row; fields given as None keep their stored value.

        Fields: ``run_id, client_name, client_version, protocol_version, era`` (``handshake`` |
        ``stateless``), ``transport, upstream, started`` (default now), ``ended``. Calling it again
        later (e.g. after ``initialize`` reveals the client) fills in what is now known.
        """
        check_text(session_key, "session_key")
        unknown = sorted(set(fields) - set(SESSION_FIELDS))
        if unknown:
            raise InvalidValueError(f"session {session_key!r}: unknown fields {unknown}")
        for name, value in fields.items():
            check_text(value, f"session {session_key!r} {name}")
        check_choice(fields.get("era"), ERA_LABELS, f"session {session_key!r} era", optional=True)
        values = {name: fields.get(name) for name in SESSION_FIELDS}
        if values["upstream"] is not None:  # an upstream URL may carry ?api_key=... or user:password@
            values["upstream"] = redact_url(values["upstream"])
        values["started"] = values["started"] or utc_now_iso()
        columns = ", ".join(("session_key", *SESSION_FIELDS))
        marks = ", ".join("?" * (len(SESSION_FIELDS) + 1))
        updates = ", ".join(
            f"{name} = COALESCE(excluded.{name}, sessions.{name})"
            for name in SESSION_FIELDS
            if name != "started"
        )
        with self.transaction():
            self._touch_run(values["run_id"])
            self._execute(
                f"INSERT INTO sessions ({columns}) VALUES ({marks})"
                f" ON CONFLICT(session_key) DO UPDATE SET {updates}",
                (session_key, *values.values()),
            )

    def update_session(self, session_key: str, **fields: Any) -> None:
        """Fill in session fields learned later (same rules as :meth:`start_session`)."""
        self.start_session(session_key, **fields)

    def end_session(self, session_key: str, ended: str | None = None) -> None:
        """Stamp the session's end time (default now)."""
        self.start_session(session_key, ended=ended or utc_now_iso())

    # ---------------------------------------------------------------- messages

    def log_message(self, **fields: Any) -> int:
        """Store one raw JSON-RPC message (``body`` exactly as sent, secrets redacted); returns its id.

        Fields as :func:`recordings.trace_rows.prepare_message`: ``direction`` is ``c2s`` | ``s2c``;
        ``kind`` is ``request`` | ``notification`` | ``response`` | ``error`` | ``invalid`` | ``note``
        (a row the proxy wrote itself, e.g. a ``--tool-baseline`` drift); ``seq``
        defaults to the next number within the session. Headers are stored as
        ``[[name, value], ...]`` with secret values redacted.
        """
        return self.write_message(prepare_message(**fields))

    def write_message(self, row: MessageRow) -> int:
        """Insert a prepared message row; returns its id."""
        with self._locked():
            seq = self._assign_seq(
                "messages", "session_key", row.session_key, row.seq, self._next_message_seq
            )
            self._touch_run(row.run_id)
            cursor = self._execute(
                _INSERT_MESSAGE,
                (
                    row.session_key,
                    row.run_id,
                    row.sample_id,
                    row.turn,
                    row.direction,
                    seq,
                    row.t_ns,
                    row.wall_time,
                    row.jsonrpc_id,
                    row.method,
                    row.kind,
                    row.body,
                    row.headers,
                ),
            )
            rowid = cursor.lastrowid
            assert rowid is not None  # every INSERT into a rowid table sets it
            return rowid

    def _assign_seq(
        self, table: str, column: str, value: str | None, seq: int | None, cache: dict[str | None, int]
    ) -> int:
        """The given ``seq`` (remembered), or the next free one for ``column = value`` in ``table``."""
        if seq is not None:
            if value in cache:
                cache[value] = max(cache[value], seq + 1)
            return seq
        self._notice_other_writers()
        if value not in cache:
            row = self._execute(
                f"SELECT COALESCE(MAX(seq), -1) + 1 FROM {table} WHERE {column} IS ?", (value,)
            ).fetchone()
            cache[value] = int(row[0])
        seq = cache[value]
        cache[value] = seq + 1
        return seq

    def _notice_other_writers(self) -> None:
        """Forget cached next numbers once another connection has committed to the file.

        Another process writing to the same file (e.g. several stdio proxies logging one run) makes
        the cached next ``seq`` and group numbers stale: SQLite bumps ``data_version`` when another
        connection commits. Inside a transaction (BEGIN IMMEDIATE holds the write lock) one check
        serves every row.
        """
        if self._conn.in_transaction and self._seq_checked_in == self.txn_epoch:
            return
        version = self._conn.execute("PRAGMA data_version").fetchone()[0]
        self._seq_checked_in = self.txn_epoch if self._conn.in_transaction else -1
        if version != self._data_version:
            self._data_version = version
            self._next_message_seq.clear()
            self._next_call_seq.clear()

    def _assign_group(
        self, row: CallRow
    ) -> tuple[int | None, tuple[_ScopeGroups, tuple[Scope, GroupRef]] | None]:
        """The ``call_group`` to store for ``row``, and where to remember it once the row is written.

        A ref seen before keeps its number. A new one gets the next number of its scope: one above
        every number in the table for that scope and every number this store handed out (so the
        groups of two processes, or of a process and its successor, never share a number), in the
        order their first calls are written, which for one process is their order of arrival. A run
        logged by one process numbers its groups 0, 1, 2, ... exactly as before.
        """
        ref = row.group_ref
        if ref is None:
            return row.call_group, None
        scope: Scope = (row.run_id, row.sample_id, row.trial, row.turn)
        groups = self._groups.get(scope)
        if groups is None:
            if len(self._groups) >= GROUP_SCOPES_KEPT:  # the oldest scope is long finished
                del self._groups[next(iter(self._groups))]
            groups = self._groups[scope] = _ScopeGroups()
        numbers = self._group_numbers
        key = (scope, ref)
        known = numbers.get(key)
        if known is not None:
            numbers[key] = numbers.pop(key)  # the most recently written last: the first is forgotten first
            return known, None
        self._notice_other_writers()
        if groups.checked_at != self._data_version:  # first sight, or another writer committed since
            found = self._execute(
                "SELECT COALESCE(MAX(call_group), -1) + 1 FROM calls"
                " WHERE run_id IS ? AND sample_id IS ? AND trial = ? AND turn IS ?",
                scope,
            ).fetchone()
            groups.next = max(groups.next, int(found[0]))
            groups.checked_at = self._data_version
        return groups.next, (groups, key)

    # ---------------------------------------------------------------- calls

    def begin_call(self, **fields: Any) -> int:
        """Log a ``tools/call`` request as a ``pending`` row (committed at once); returns the call id.

        Fields as :func:`recordings.trace_rows.prepare_call`. ``arguments`` is stored as sent
        (normally a JSON object; anything JSON is kept, so malformed calls are not lost), with
        secret-named keys redacted. ``seq`` defaults to the order of arrival within the run.
        """
        return self.write_call(prepare_call(**fields))

    def write_call(self, row: CallRow) -> int:
        """Insert a prepared call row (pending, or finished when its outcome is filled in); returns its id.

        Its ``seq`` and (with a ``group_ref``) its ``call_group`` are numbered inside the write
        transaction, so processes writing the same file never hand out the same number.
        """
        with self._locked():
            if self._conn.in_transaction:
                return self._insert_call(row)
            with self.transaction():
                return self._insert_call(row)

    def _insert_call(self, row: CallRow) -> int:
        seq = self._assign_seq("calls", "run_id", row.run_id, row.seq, self._next_call_seq)
        group, new_group = self._assign_group(row)
        self._touch_run(row.run_id)
        cursor = self._execute(
            _INSERT_CALL,
            (
                row.run_id,
                row.sample_id,
                row.turn,
                row.session_key,
                row.client_name,
                row.protocol_version,
                row.jsonrpc_id,
                seq,
                row.tool,
                row.arguments,
                row.t_req_ns,
                row.wall_time,
                group,
                row.group_source,
                row.trial,
                row.status,
                row.result,
                row.rpc_error,
                row.t_resp_ns,
                row.latency_ms,
            ),
        )
        if new_group is not None and group is not None:  # written: the ref keeps its number
            groups, key = new_group
            numbers = self._group_numbers
            numbers[key] = group
            if len(numbers) > GROUP_REFS_KEPT:
                del numbers[next(iter(numbers))]
            groups.next = group + 1
        rowid = cursor.lastrowid
        assert rowid is not None  # every INSERT into a rowid table sets it
        return rowid

    def finish_call(self, call_id: int, **fields: Any) -> str:
        """Complete a pending call and commit before returning; returns the stored status.

        Fields as :func:`recordings.trace_rows.prepare_outcome` (``result``, ``rpc_error``,
        ``status``, ``t_resp_ns``, ``latency_ms``). ``status`` defaults to ``rpc_error`` when
        ``rpc_error`` is given, else ``tool_error`` or ``ok`` from ``result["isError"]``.
        ``latency_ms`` defaults to ``(t_resp_ns - t_req_ns) / 1e6``.
        """
        check_int(call_id, "call_id")
        return self.write_outcome(call_id, prepare_outcome(**fields, where=f"call {call_id}"))

    def write_outcome(self, call_id: int, outcome: CallOutcome) -> str:
        """Store a prepared outcome on a pending call; returns its status."""
        with self._locked():  # one UPDATE statement: it commits on its own (autocommit)
            cursor = self._execute(
                _FINISH_CALL,
                (
                    outcome.result,
                    outcome.rpc_error,
                    outcome.status,
                    outcome.t_resp_ns,
                    outcome.latency_ms,
                    outcome.t_resp_ns,
                    call_id,
                ),
            )
            if cursor.rowcount == 0:
                row = self._conn.execute("SELECT status FROM calls WHERE id = ?", (call_id,)).fetchone()
                if row is None:
                    raise UnknownCallError(f"call {call_id} does not exist")
                raise CallStateError(f"call {call_id} is already finished (status {row[0]!r})")
        return outcome.status

    def set_groups(self, assignments: Iterable[tuple[int, int, str]]) -> int:
        """Set ``(call_id, call_group, group_source)`` for many calls in one transaction; returns the count.

        Every id must exist (else nothing is changed and :class:`UnknownCallError` is raised).
        """
        rows = []
        for item in assignments:
            call_id, group, source = item
            check_int(call_id, "call_id")
            if check_int(group, f"call {call_id} call_group") is None:
                raise InvalidValueError(f"call {call_id}: call_group must be an integer")
            check_choice(source, GROUP_SOURCES, f"call {call_id} group_source")
            rows.append((group, source, call_id))
        with self.transaction():
            for group, source, call_id in rows:
                cursor = self._conn.execute(
                    "UPDATE calls SET call_group = ?, group_source = ? WHERE id = ?", (group, source, call_id)
                )
                if cursor.rowcount == 0:
                    raise UnknownCallError(f"call {call_id} does not exist; no groups were changed")
        return len(rows)
