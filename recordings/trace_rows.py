"""Trace rows prepared for writing: checked, redacted and encoded, with no database access.

The write API of :mod:`recordings.trace` is two steps: ``prepare_*`` builds a row here (the Python
work: validation, secret redaction, JSON encoding) and the store writes it (the SQL). The proxy
prepares rows when a message arrives and writes them later in a batch, so the preparation of a
request's rows overlaps with the upstream's work instead of delaying the response.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from finmcp.recordings.clock import utc_now_iso
from finmcp.recordings.errors import InvalidValueError
from finmcp.recordings.redact import (
    has_secret_values,
    redact_headers,
    redact_text,
    redact_value,
    secret_header_value,
)
from finmcp.recordings.results import dumps, loose_result

CALL_STATUSES = frozenset({"ok", "tool_error", "rpc_error", "transport_error", "cancelled", "pending"})
GROUP_SOURCES = frozenset({"explicit", "overlap", "connection", "sequence", "gap"})
DIRECTIONS = frozenset({"c2s", "s2c"})
MESSAGE_KINDS = frozenset({"request", "notification", "response", "error", "invalid", "note"})
"""``note``: a row the proxy wrote itself, never on the wire (its ``method`` says what, e.g.
``finmcp/tool_drift``: a tool definition differs from the ``--tool-baseline``; docs/proxy.md)."""


def check_choice(value: Any, allowed: frozenset[str], field: str, optional: bool = False) -> Any:
    """``value`` if it is one of ``allowed`` (or None when ``optional``), else :class:`InvalidValueError`."""
    if value is None and optional:
        return None
    if value not in allowed:
        raise InvalidValueError(f"{field}: {value!r} is not one of {sorted(allowed)}")
    return value


def check_int(value: Any, field: str) -> int | None:
    """``value`` if it is an integer or None (``bool`` is refused)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidValueError(f"{field}: expected an integer, got {value!r}")
    return value


def check_text(value: Any, field: str) -> str | None:
    """``value`` if it is a string or None."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidValueError(f"{field}: expected a string, got {type(value).__name__}")
    return value


def jsonrpc_id_text(jsonrpc_id: Any) -> str | None:
    """A JSON-RPC id as stored: its JSON text (``1`` and ``"1"`` stay distinct)."""
    if jsonrpc_id is None:
        return None
    if type(jsonrpc_id) is int:  # the common case, without json.dumps
        return str(jsonrpc_id)
    if isinstance(jsonrpc_id, bool) or not isinstance(jsonrpc_id, int | str | float):
        raise InvalidValueError(f"jsonrpc_id: expected a string or number, got {jsonrpc_id!r}")
    return json.dumps(jsonrpc_id, ensure_ascii=False)


def _body_text(body: Any) -> str:
    if isinstance(body, bytes | bytearray):
        return bytes(body).decode("utf-8", errors="backslashreplace")
    if isinstance(body, str):
        return body
    raise InvalidValueError(f"body: expected the raw message as str or bytes, got {type(body).__name__}")


@lru_cache(maxsize=4096)
def _header_json(name: bytes | str, value: bytes | str) -> str:
    """One ``["name","value"]`` pair as stored (clients repeat the same headers on every request)."""
    name_s = name.decode("latin-1") if isinstance(name, bytes) else str(name)
    value_s = value.decode("latin-1") if isinstance(value, bytes) else str(value)
    return dumps([name_s, secret_header_value(name_s, value_s)])


def headers_json(headers: Mapping[str, Any] | Iterable[tuple[Any, Any]]) -> str:
    """Headers as stored: ``[[name, value], ...]`` JSON in their order, secret values redacted."""
    if isinstance(headers, Mapping) or has_secret_values():  # configured values: not in the pair cache
        return dumps(redact_headers(headers))
    try:
        return "[" + ",".join([_header_json(name, value) for name, value in headers]) + "]"
    except TypeError:  # an unhashable name or value: the general path
        return dumps(redact_headers(headers))


@dataclass(slots=True)
class MessageRow:
    """One ``messages`` row ready to insert; ``seq`` None means the next number in the session."""

    session_key: str | None
    run_id: str | None
    sample_id: str | None
    turn: int | None
    direction: str
    seq: int | None
    t_ns: int
    wall_time: str
    jsonrpc_id: str | None
    method: str | None
    kind: str
    body: str
    headers: str | None


def prepare_message(
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
) -> MessageRow:
    """A checked message row: ``body`` as sent with secrets redacted, headers as ``[[name, value]]`` JSON."""
    check_choice(direction, DIRECTIONS, "message direction")
    check_choice(kind, MESSAGE_KINDS, "message kind")
    for name, value in (("session_key", session_key), ("run_id", run_id), ("sample_id", sample_id)):
        check_text(value, f"message {name}")
    check_text(method, "message method")
    check_int(turn, "message turn")
    check_int(seq, "message seq")
    check_int(t_ns, "message t_ns")
    return message_row(
        direction,
        kind,
        body,
        session_key,
        run_id,
        sample_id,
        turn,
        time.time_ns() if t_ns is None else t_ns,
        wall_time or utc_now_iso(),
        jsonrpc_id,
        method,
        headers,
        seq,
    )


def message_row(
    direction: str,
    kind: str,
    body: str | bytes,
    session_key: str | None,
    run_id: str | None,
    sample_id: str | None,
    turn: int | None,
    t_ns: int,
    wall_time: str,
    jsonrpc_id: int | str | None,
    method: str | None,
    headers: Mapping[str, Any] | Iterable[tuple[Any, Any]] | None = None,
    seq: int | None = None,
) -> MessageRow:
    """:func:`prepare_message` without the checks, positional: for a caller that built every value (the proxy)."""
    return MessageRow(
        session_key,
        run_id,
        sample_id,
        turn,
        direction,
        seq,
        t_ns,
        wall_time,
        jsonrpc_id_text(jsonrpc_id),
        method,
        kind,
        redact_text(_body_text(body)),
        None if headers is None else headers_json(headers),
    )


@dataclass(slots=True)
class CallOutcome:
    """How a call ended, ready to store: status, result or error JSON, response time, latency."""

    status: str
    result: str | None
    rpc_error: str | None
    t_resp_ns: int
    latency_ms: float | None


def prepare_outcome(
    *,
    result: Mapping[str, Any] | None = None,
    rpc_error: Any = None,
    status: str | None = None,
    t_resp_ns: int | None = None,
    latency_ms: float | None = None,
    where: str = "call",
) -> CallOutcome:
    """A checked outcome, result and error redacted; ``status`` defaults from ``rpc_error`` or ``result["isError"]``.

    ``ok``/``tool_error`` need a result, ``rpc_error`` needs the error object;
    ``transport_error``/``cancelled`` may carry either or neither.
    """
    check_int(t_resp_ns, f"{where} t_resp_ns")
    stored_result = None if result is None else loose_result(result, where=f"{where} result")
    if status is None:
        if rpc_error is not None:
            status = "rpc_error"
        elif stored_result is not None:
            status = "tool_error" if stored_result["isError"] else "ok"
        else:
            raise InvalidValueError(f"{where}: give a result, an rpc_error or a status")
    check_choice(status, CALL_STATUSES - {"pending"}, f"{where} status")
    if status in ("ok", "tool_error") and stored_result is None:
        raise InvalidValueError(f"{where}: status {status!r} needs a result")
    if status == "rpc_error" and rpc_error is None:
        raise InvalidValueError(f"{where}: status 'rpc_error' needs the rpc_error object")
    if latency_ms is not None and (isinstance(latency_ms, bool) or not isinstance(latency_ms, int | float)):
        raise InvalidValueError(f"{where}: latency_ms must be a number, got {latency_ms!r}")
    return CallOutcome(  # redacted as message bodies are: an upstream may reflect a secret into its answer
        status,
        None if stored_result is None else redact_text(dumps(stored_result)),
        None if rpc_error is None else redact_text(dumps(rpc_error)),
        time.time_ns() if t_resp_ns is None else t_resp_ns,
        latency_ms,
    )


GroupRef = tuple[str, int]
"""A writer's own name for a group: ``(writer token, its group number)``; see :attr:`CallRow.group_ref`."""


@dataclass(slots=True)
class CallRow:
    """One ``calls`` row ready to insert: ``pending``, or already finished (one INSERT for both).

    ``group_ref``, when set, makes the store number the group: every row with the same ref (and
    scope ``run, sample, trial, turn``) gets one ``call_group``, a number no other group of the
    scope has, whichever process wrote it (``call_group`` is then ignored). Without it,
    ``call_group`` is stored as given.
    """

    run_id: str | None
    sample_id: str | None
    turn: int | None
    session_key: str | None
    client_name: str | None
    protocol_version: str | None
    jsonrpc_id: str | None
    seq: int | None
    tool: str
    arguments: str
    t_req_ns: int
    wall_time: str
    call_group: int | None
    group_source: str | None
    trial: int
    status: str = "pending"
    result: str | None = None
    rpc_error: str | None = None
    t_resp_ns: int | None = None
    latency_ms: float | None = None
    group_ref: GroupRef | None = None

    def finished(self, outcome: CallOutcome) -> CallRow:
        """This row with its outcome filled in (latency from the two timestamps unless given)."""
        latency = outcome.latency_ms
        if latency is None:
            latency = (outcome.t_resp_ns - self.t_req_ns) / 1e6
        return CallRow(  # spelled out: dataclasses.replace costs several times more
            self.run_id,
            self.sample_id,
            self.turn,
            self.session_key,
            self.client_name,
            self.protocol_version,
            self.jsonrpc_id,
            self.seq,
            self.tool,
            self.arguments,
            self.t_req_ns,
            self.wall_time,
            self.call_group,
            self.group_source,
            self.trial,
            outcome.status,
            outcome.result,
            outcome.rpc_error,
            outcome.t_resp_ns,
            latency,
            self.group_ref,
        )


def prepare_call(
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
    group_ref: GroupRef | None = None,
) -> CallRow:
    """A checked ``pending`` call row; ``arguments`` kept as sent, secret-named keys redacted.

    ``group_ref`` (a writer's own ``(token, number)`` for the group) lets the store number the
    group so that no other group of the scope shares it, across processes (:class:`CallRow`).
    """
    check_text(tool, "call tool")
    for name, value in (
        ("run_id", run_id),
        ("sample_id", sample_id),
        ("session_key", session_key),
        ("client_name", client_name),
        ("protocol_version", protocol_version),
        ("wall_time", wall_time),
    ):
        check_text(value, f"call {name}")
    for name, number in (("turn", turn), ("seq", seq), ("t_req_ns", t_req_ns), ("call_group", call_group)):
        check_int(number, f"call {name}")
    check_int(trial, "call trial")
    check_choice(group_source, GROUP_SOURCES, "call group_source", optional=True)
    if group_ref is not None and not (
        isinstance(group_ref, tuple)
        and len(group_ref) == 2
        and isinstance(group_ref[0], str)
        and check_int(group_ref[1], "call group_ref number") is not None
    ):
        raise InvalidValueError(f"call group_ref: expected (token, number), got {group_ref!r}")
    return call_row(
        tool,
        arguments,
        run_id,
        sample_id,
        turn,
        session_key,
        client_name,
        protocol_version,
        jsonrpc_id,
        time.time_ns() if t_req_ns is None else t_req_ns,
        wall_time or utc_now_iso(),
        call_group,
        group_source,
        trial,
        seq,
        group_ref,
    )


def call_row(
    tool: str,
    arguments: Any,
    run_id: str | None,
    sample_id: str | None,
    turn: int | None,
    session_key: str | None,
    client_name: str | None,
    protocol_version: str | None,
    jsonrpc_id: int | str | None,
    t_req_ns: int,
    wall_time: str,
    call_group: int | None,
    group_source: str | None,
    trial: int,
    seq: int | None = None,
    group_ref: GroupRef | None = None,
) -> CallRow:
    """:func:`prepare_call` without the checks, positional: for a caller that built every value (the proxy)."""
    return CallRow(
        run_id,
        sample_id,
        turn,
        session_key,
        client_name,
        protocol_version,
        jsonrpc_id_text(jsonrpc_id),
        seq,
        tool,
        dumps(redact_value(arguments)),
        t_req_ns,
        wall_time,
        call_group,
        group_source,
        trial,
        group_ref=group_ref,
    )
