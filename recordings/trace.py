"""Logged traces: runs, sessions, raw messages and one row per ``tools/call``.

The write side, used by the proxy: every write commits before the method returns (unless inside
``store.transaction()``), so a call logged with :meth:`TraceMixin.finish_call` is durable before the
proxy forwards the response. The read side is :mod:`recordings.trace_read`.

JSON-RPC ids are stored as JSON text (``1`` and ``"1"`` stay distinct). Timestamps default to
``time.time_ns()`` and :func:`recordings.clock.utc_now_iso`; the proxy normally passes its own.
Secrets are redacted from every stored body, header list and argument object.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from recordings.clock import utc_now_iso
from recordings.connection import StoreConnection
from recordings.errors import CallStateError, InvalidValueError, UnknownCallError
from recordings.redact import redact_headers, redact_text, redact_url, redact_value
from recordings.results import dumps, loose_result

CALL_STATUSES = frozenset({"ok", "tool_error", "rpc_error", "transport_error", "cancelled", "pending"})
GROUP_SOURCES = frozenset({"explicit", "overlap", "gap"})
DIRECTIONS = frozenset({"c2s", "s2c"})
MESSAGE_KINDS = frozenset({"request", "notification", "response", "error", "invalid"})
ERAS = frozenset({"handshake", "2026-07-28"})
SESSION_FIELDS = (
    "run_id",
    "client_name",
    "client_version",
    "protocol_version",
    "era",
    "transport",
    "upstream",
    "started",
    "ended",
)


def _check_choice(value: Any, allowed: frozenset[str], field: str, optional: bool = False) -> Any:
    if value is None and optional:
        return None
    if value not in allowed:
        raise InvalidValueError(f"{field}: {value!r} is not one of {sorted(allowed)}")
    return value


def _check_int(value: Any, field: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidValueError(f"{field}: expected an integer, got {value!r}")
    return value


def _check_text(value: Any, field: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidValueError(f"{field}: expected a string, got {type(value).__name__}")
    return value


def _jsonrpc_id_text(jsonrpc_id: Any) -> str | None:
    if jsonrpc_id is None:
        return None
    if isinstance(jsonrpc_id, bool) or not isinstance(jsonrpc_id, int | str | float):
        raise InvalidValueError(f"jsonrpc_id: expected a string or number, got {jsonrpc_id!r}")
    return json.dumps(jsonrpc_id, ensure_ascii=False)


def _body_text(body: Any) -> str:
    if isinstance(body, bytes | bytearray):
        return bytes(body).decode("utf-8", errors="backslashreplace")
    if isinstance(body, str):
        return body
    raise InvalidValueError(f"body: expected the raw message as str or bytes, got {type(body).__name__}")


class TraceMixin(StoreConnection):
    """The trace-table API of :class:`recordings.store.RecordingStore`."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path)
        self._known_runs: set[str] = set()
        self._next_message_seq: dict[str | None, int] = {}
        self._next_call_seq: dict[str | None, int] = {}
        self._data_version: int | None = None

    # ---------------------------------------------------------------- runs and sessions

    def ensure_run(self, run_id: str, meta: Mapping[str, Any] | None = None) -> None:
        """Create the run row if missing; ``meta`` (JSON object), when given, replaces the stored meta."""
        _check_text(run_id, "run_id")
        if meta is not None and not isinstance(meta, Mapping):
            raise InvalidValueError(f"run {run_id!r} meta: expected a JSON object")
        with self._locked():
            self._conn.execute(
                "INSERT INTO runs (run_id, created, meta) VALUES (?, ?, ?) ON CONFLICT(run_id) DO UPDATE"
                " SET meta = COALESCE(excluded.meta, runs.meta)",
                (run_id, utc_now_iso(), None if meta is None else dumps(meta)),
            )
            self._known_runs.add(run_id)

    def _touch_run(self, run_id: str | None) -> None:
        if run_id is not None and run_id not in self._known_runs:
            self._conn.execute(
                "INSERT OR IGNORE INTO runs (run_id, created) VALUES (?, ?)", (run_id, utc_now_iso())
            )
            self._known_runs.add(run_id)

    def start_session(self, session_key: str, **fields: Any) -> None:
        """Create or update a session row; fields given as None keep their stored value.

        Fields: ``run_id, client_name, client_version, protocol_version, era`` (``handshake`` |
        ``2026-07-28``), ``transport, upstream, started`` (default now), ``ended``. Calling it again
        later (e.g. after ``initialize`` reveals the client) fills in what is now known.
        """
        _check_text(session_key, "session_key")
        unknown = sorted(set(fields) - set(SESSION_FIELDS))
        if unknown:
            raise InvalidValueError(f"session {session_key!r}: unknown fields {unknown}")
        for name, value in fields.items():
            _check_text(value, f"session {session_key!r} {name}")
        _check_choice(fields.get("era"), ERAS, f"session {session_key!r} era", optional=True)
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
            self._conn.execute(
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

    def log_message(
        self,
        *,
        direction: str,
        kind: str,
        body: str | bytes,
        session_key: str | None = None,
        run_id: str | None = None,
        sample_id: str | None = None,
        turn: int | None = None,
        seq: int | None = None,
        t_ns: int | None = None,
        wall_time: str | None = None,
        jsonrpc_id: int | str | None = None,
        method: str | None = None,
        headers: Mapping[str, Any] | Iterable[tuple[Any, Any]] | None = None,
    ) -> int:
        """Store one raw JSON-RPC message (``body`` exactly as sent, secrets redacted); returns its id.

        ``direction`` is ``c2s`` | ``s2c``; ``kind`` is ``request`` | ``notification`` | ``response``
        | ``error`` | ``invalid``. ``seq`` defaults to the next number within the session.
        Headers are stored as ``[[name, value], ...]`` with secret values redacted.
        """
        _check_choice(direction, DIRECTIONS, "message direction")
        _check_choice(kind, MESSAGE_KINDS, "message kind")
        text = redact_text(_body_text(body))
        for name, value in (("session_key", session_key), ("run_id", run_id), ("sample_id", sample_id)):
            _check_text(value, f"message {name}")
        _check_text(method, "message method")
        _check_int(turn, "message turn")
        _check_int(seq, "message seq")
        _check_int(t_ns, "message t_ns")
        header_json = None if headers is None else dumps(redact_headers(headers))
        with self._locked():
            seq = self._assign_seq("messages", "session_key", session_key, seq, self._next_message_seq)
            self._touch_run(run_id)
            cursor = self._conn.execute(
                "INSERT INTO messages (session_key, run_id, sample_id, turn, direction, seq, t_ns, wall_time,"
                " jsonrpc_id, method, kind, body, headers) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session_key,
                    run_id,
                    sample_id,
                    turn,
                    direction,
                    seq,
                    time.time_ns() if t_ns is None else t_ns,
                    wall_time or utc_now_iso(),
                    _jsonrpc_id_text(jsonrpc_id),
                    method,
                    kind,
                    text,
                    header_json,
                ),
            )
            return int(cursor.lastrowid)

    def _assign_seq(
        self, table: str, column: str, value: str | None, seq: int | None, cache: dict[str | None, int]
    ) -> int:
        """The given ``seq`` (remembered), or the next free one for ``column = value`` in ``table``."""
        if seq is not None:
            if value in cache:
                cache[value] = max(cache[value], seq + 1)
            return seq
        # Another process writing to the same file (e.g. several stdio proxies logging one run) makes
        # the cached next numbers stale: SQLite bumps data_version when another connection commits.
        version = self._conn.execute("PRAGMA data_version").fetchone()[0]
        if version != self._data_version:
            self._data_version = version
            self._next_message_seq.clear()
            self._next_call_seq.clear()
        if value not in cache:
            row = self._conn.execute(
                f"SELECT COALESCE(MAX(seq), -1) + 1 FROM {table} WHERE {column} IS ?", (value,)
            ).fetchone()
            cache[value] = int(row[0])
        seq = cache[value]
        cache[value] = seq + 1
        return seq

    # ---------------------------------------------------------------- calls

    def begin_call(
        self,
        *,
        tool: str,
        arguments: Any,
        run_id: str | None = None,
        sample_id: str | None = None,
        turn: int | None = None,
        session_key: str | None = None,
        client_name: str | None = None,
        protocol_version: str | None = None,
        jsonrpc_id: int | str | None = None,
        seq: int | None = None,
        t_req_ns: int | None = None,
        wall_time: str | None = None,
        call_group: int | None = None,
        group_source: str | None = None,
        trial: int = 0,
    ) -> int:
        """Log a ``tools/call`` request as a ``pending`` row (committed at once); returns the call id.

        ``arguments`` is stored as sent (normally a JSON object; anything JSON is kept, so malformed
        calls are not lost), with secret-named keys redacted. ``seq`` defaults to the order of
        arrival within the run (0, 1, 2, ...).
        """
        _check_text(tool, "call tool")
        for name, value in (
            ("run_id", run_id),
            ("sample_id", sample_id),
            ("session_key", session_key),
            ("client_name", client_name),
            ("protocol_version", protocol_version),
            ("wall_time", wall_time),
        ):
            _check_text(value, f"call {name}")
        for name, value in (("turn", turn), ("seq", seq), ("t_req_ns", t_req_ns), ("call_group", call_group)):
            _check_int(value, f"call {name}")
        _check_int(trial, "call trial")
        _check_choice(group_source, GROUP_SOURCES, "call group_source", optional=True)
        args_json = dumps(redact_value(arguments))
        with self._locked():
            seq = self._assign_seq("calls", "run_id", run_id, seq, self._next_call_seq)
            self._touch_run(run_id)
            cursor = self._conn.execute(
                "INSERT INTO calls (run_id, sample_id, turn, session_key, client_name, protocol_version,"
                " jsonrpc_id, seq, tool, arguments, status, t_req_ns, wall_time, call_group, group_source,"
                " trial) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?)",
                (
                    run_id,
                    sample_id,
                    turn,
                    session_key,
                    client_name,
                    protocol_version,
                    _jsonrpc_id_text(jsonrpc_id),
                    seq,
                    tool,
                    args_json,
                    time.time_ns() if t_req_ns is None else t_req_ns,
                    wall_time or utc_now_iso(),
                    call_group,
                    group_source,
                    trial,
                ),
            )
            return int(cursor.lastrowid)

    def finish_call(
        self,
        call_id: int,
        *,
        result: Mapping[str, Any] | None = None,
        rpc_error: Any = None,
        status: str | None = None,
        t_resp_ns: int | None = None,
        latency_ms: float | None = None,
    ) -> str:
        """Complete a pending call and commit before returning; returns the stored status.

        ``status`` defaults to ``rpc_error`` when ``rpc_error`` is given, else ``tool_error`` or
        ``ok`` from ``result["isError"]``. ``ok``/``tool_error`` need a result, ``rpc_error`` needs
        the error object; ``transport_error``/``cancelled`` may carry either or neither.
        ``latency_ms`` defaults to ``(t_resp_ns - t_req_ns) / 1e6``.
        """
        _check_int(call_id, "call_id")
        _check_int(t_resp_ns, f"call {call_id} t_resp_ns")
        stored_result = None if result is None else loose_result(result, where=f"call {call_id} result")
        if status is None:
            if rpc_error is not None:
                status = "rpc_error"
            elif stored_result is not None:
                status = "tool_error" if stored_result["isError"] else "ok"
            else:
                raise InvalidValueError(f"call {call_id}: give a result, an rpc_error or a status")
        _check_choice(status, CALL_STATUSES - {"pending"}, f"call {call_id} status")
        if status in ("ok", "tool_error") and stored_result is None:
            raise InvalidValueError(f"call {call_id}: status {status!r} needs a result")
        if status == "rpc_error" and rpc_error is None:
            raise InvalidValueError(f"call {call_id}: status 'rpc_error' needs the rpc_error object")
        if latency_ms is not None and (
            isinstance(latency_ms, bool) or not isinstance(latency_ms, int | float)
        ):
            raise InvalidValueError(f"call {call_id}: latency_ms must be a number, got {latency_ms!r}")
        t_resp = time.time_ns() if t_resp_ns is None else t_resp_ns
        with self._locked():  # one UPDATE statement: it commits on its own (autocommit)
            cursor = self._conn.execute(
                "UPDATE calls SET result = ?, rpc_error = ?, status = ?, t_resp_ns = ?,"
                " latency_ms = COALESCE(?, (? - t_req_ns) / 1e6) WHERE id = ? AND status = 'pending'",
                (
                    None if stored_result is None else dumps(stored_result),
                    None if rpc_error is None else dumps(rpc_error),
                    status,
                    t_resp,
                    latency_ms,
                    t_resp,
                    call_id,
                ),
            )
            if cursor.rowcount == 0:
                row = self._conn.execute("SELECT status FROM calls WHERE id = ?", (call_id,)).fetchone()
                if row is None:
                    raise UnknownCallError(f"call {call_id} does not exist")
                raise CallStateError(f"call {call_id} is already finished (status {row[0]!r})")
        return status

    def set_groups(self, assignments: Iterable[tuple[int, int, str]]) -> int:
        """Set ``(call_id, call_group, group_source)`` for many calls in one transaction; returns the count.

        Every id must exist (else nothing is changed and :class:`UnknownCallError` is raised).
        """
        rows = []
        for item in assignments:
            call_id, group, source = item
            _check_int(call_id, "call_id")
            if _check_int(group, f"call {call_id} call_group") is None:
                raise InvalidValueError(f"call {call_id}: call_group must be an integer")
            _check_choice(source, GROUP_SOURCES, f"call {call_id} group_source")
            rows.append((group, source, call_id))
        with self.transaction():
            for group, source, call_id in rows:
                cursor = self._conn.execute(
                    "UPDATE calls SET call_group = ?, group_source = ? WHERE id = ?", (group, source, call_id)
                )
                if cursor.rowcount == 0:
                    raise UnknownCallError(f"call {call_id} does not exist; no groups were changed")
        return len(rows)
