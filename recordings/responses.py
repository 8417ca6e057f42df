"""Recorded tool responses: one MCP result per (inventory, tool, arguments), and every answer in order.

``responses`` holds one answer per key (the last successful one recorded): what simulation and the
default replay look up. ``response_steps`` holds every recorded answer of a key in the order the
upstream gave it, JSON-RPC errors and ``isError`` results included: what sequence replay serves.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

from finmcp.recordings.canonical import CanonicalArgs, canonicalize
from finmcp.recordings.clock import utc_now_iso
from finmcp.recordings.connection import StoreConnection, where_equal
from finmcp.recordings.errors import InvalidValueError
from finmcp.recordings.results import dumps, normalize_result, result_from_columns, result_to_columns

RECORDING_META_KEY = "io.finmcp/recording"
"""Key of the provenance object in the ``_meta`` of a replayed result."""

PROVENANCE_PREFIXES = ("recorded:", "imported:")

PutOutcome = Literal["inserted", "replaced", "identical", "kept"]
"""What :meth:`ResponsesMixin.put_response` did: wrote a new row, overwrote a different output, found
the same output already stored (left untouched), or kept a different stored output (``replace=False``)."""

_SELECT_BY_KEY = (
    "SELECT content, structured_content, is_error, provenance, latency_ms, created"
    " FROM responses WHERE inventory = ? AND tool = ? AND args_key = ?"
)
_SELECT_FOR_PUT = (
    "SELECT id, content, structured_content, is_error FROM responses"
    " WHERE inventory = ? AND tool = ? AND args_key = ?"
)
_INSERT = (
    "INSERT INTO responses (inventory, tool, args_key, arguments, content, structured_content,"
    " is_error, latency_ms, provenance, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_NEXT_STEP = (
    "SELECT coalesce(max(step) + 1, 0) FROM response_steps WHERE inventory = ? AND tool = ? AND args_key = ?"
)
_INSERT_STEP = (
    "INSERT INTO response_steps (inventory, tool, args_key, step, arguments, content, structured_content,"
    " is_error, rpc_error, latency_ms, provenance, created, notifications)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SELECT_STEPS = (
    "SELECT step, content, structured_content, is_error, rpc_error, latency_ms, provenance, notifications"
    " FROM response_steps"
    " WHERE inventory = ? AND tool = ? AND args_key = ? ORDER BY step"
)
_UPDATE = (
    "UPDATE responses SET arguments = ?, content = ?, structured_content = ?, is_error = ?,"
    " latency_ms = ?, provenance = ?, created = ? WHERE id = ?"
)


def check_provenance(provenance: Any) -> str:
    """``simulated``, ``recorded:<upstream>`` or ``imported:<file>`` (non-empty suffix), else an error."""
    if provenance == "simulated":
        return provenance
    if isinstance(provenance, str):
        for prefix in PROVENANCE_PREFIXES:
            if provenance.startswith(prefix) and len(provenance) > len(prefix):
                return provenance
    raise InvalidValueError(
        f"provenance {provenance!r}: expected 'simulated', 'recorded:<upstream>' or 'imported:<file>'"
    )


def _check_name(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidValueError(f"{field}: expected a non-empty string, got {value!r}")
    return value


def _check_latency(latency_ms: Any, where: str) -> float | None:
    if latency_ms is None:
        return None
    if isinstance(latency_ms, bool) or not isinstance(latency_ms, int | float):
        raise InvalidValueError(f"{where}: latency_ms must be a number of milliseconds, got {latency_ms!r}")
    if not math.isfinite(latency_ms) or latency_ms < 0:
        raise InvalidValueError(f"{where}: latency_ms must be finite and >= 0, got {latency_ms!r}")
    return float(latency_ms)


def _checked_notifications(notifications: Sequence[Mapping[str, Any]] | None, where: str) -> str | None:
    """The JSON text of a call's notifications (``{method, params?}`` each); None for none."""
    if not notifications:
        return None
    out = []
    for note in notifications:
        if not isinstance(note, Mapping) or not isinstance(note.get("method"), str):
            raise InvalidValueError(f"{where}: a notification needs a string method, got {note!r:.80}")
        params = note.get("params")
        if params is not None and not isinstance(params, Mapping):
            raise InvalidValueError(f"{where}: notification params must be an object, got {params!r:.80}")
        out.append({"method": note["method"], **({"params": params} if params is not None else {})})
    return dumps(out)


class ResponsesMixin(StoreConnection):
    """The ``responses`` table API of :class:`recordings.store.RecordingStore`."""

    def canonical(
        self, tool: str, arguments: Any, input_schema: Mapping[str, Any] | None = None
    ) -> CanonicalArgs:
        """Canonical arguments, JSON and key of a call; errors name the tool."""
        try:
            return canonicalize(arguments, input_schema)
        except InvalidValueError as exc:
            raise InvalidValueError(f"tool {tool!r}: {exc}") from None

    def _checked(
        self,
        inventory: str,
        tool: str,
        arguments: Any,
        provenance: str,
        latency_ms: Any,
        input_schema: Mapping[str, Any] | None,
    ) -> tuple[str, float | None, CanonicalArgs]:
        """An answer's checked names, provenance and latency: ``(inventory/tool, latency, canonical args)``."""
        _check_name(inventory, "inventory")
        _check_name(tool, "tool")
        check_provenance(provenance)
        where = f"{inventory}/{tool}"
        return where, _check_latency(latency_ms, where), self.canonical(tool, arguments, input_schema)

    def put_response(
        self,
        inventory: str,
        tool: str,
        arguments: Any,
        result: Mapping[str, Any],
        provenance: str,
        latency_ms: float | None = None,
        input_schema: Mapping[str, Any] | None = None,
        replace: bool = True,
        created: str | None = None,
    ) -> PutOutcome:
        """Store ``result`` (an MCP ``{content, structuredContent?, isError?}``) for these arguments.

        The arguments are canonicalised with ``input_schema`` (defaults filled in) and stored in
        canonical form. An existing row with the same output is left as it is (``"identical"``); a
        different output is overwritten when ``replace`` is true (``"replaced"``), else kept
        (``"kept"``). Commits at once unless inside :meth:`transaction`.
        """
        where, latency, canon = self._checked(
            inventory, tool, arguments, provenance, latency_ms, input_schema
        )
        columns = result_to_columns(normalize_result(result, where=f"{where} result"))
        stamp = created or utc_now_iso()
        with self.transaction():
            row = self._conn.execute(_SELECT_FOR_PUT, (inventory, tool, canon.key)).fetchone()
            if row is None:
                self._conn.execute(
                    _INSERT, (inventory, tool, canon.key, canon.json, *columns, latency, provenance, stamp)
                )
                return "inserted"
            if tuple(row[1:]) == columns:
                return "identical"
            if not replace:
                return "kept"
            self._conn.execute(_UPDATE, (canon.json, *columns, latency, provenance, stamp, row[0]))
            return "replaced"

    def get_response(
        self,
        inventory: str,
        tool: str,
        arguments: Any,
        input_schema: Mapping[str, Any] | None = None,
    ) -> dict[str, Any] | None:
        """The recorded result for a call, or None when nothing is recorded.

        Returns ``{"content", "structuredContent", "isError", "_meta"}`` (fresh objects, safe to
        mutate); ``_meta`` holds ``{RECORDING_META_KEY: {provenance, latency_ms, created, args_key}}``,
        ready to be merged into the served result's ``_meta``.
        """
        key = self.canonical(tool, arguments, input_schema).key
        return self.get_response_by_key(inventory, tool, key)

    def get_response_by_key(self, inventory: str, tool: str, key: str) -> dict[str, Any] | None:
        """Like :meth:`get_response` for a precomputed ``args_key``."""
        with self._locked():
            row = self._conn.execute(_SELECT_BY_KEY, (inventory, tool, key)).fetchone()
        if row is None:
            return None
        result = result_from_columns(row[0], row[1], row[2])
        result["_meta"] = {
            RECORDING_META_KEY: {
                "provenance": row[3],
                "latency_ms": row[4],
                "created": row[5],
                "args_key": key,
            }
        }
        return result

    def append_response_step(
        self,
        inventory: str,
        tool: str,
        arguments: Any,
        result: Mapping[str, Any] | None,
        provenance: str,
        latency_ms: float | None = None,
        input_schema: Mapping[str, Any] | None = None,
        rpc_error: Mapping[str, Any] | None = None,
        created: str | None = None,
        notifications: Sequence[Mapping[str, Any]] | None = None,
    ) -> int:
        """Append one answer (a result, or a JSON-RPC ``rpc_error``) to its key's sequence; its step number.

        Steps count from 0 per (inventory, tool, canonical arguments), in the order appended.
        ``notifications``: what the upstream sent while answering (``{method, params}`` each, in order).
        """
        where, latency, canon = self._checked(
            inventory, tool, arguments, provenance, latency_ms, input_schema
        )
        if (result is None) == (rpc_error is None):
            raise InvalidValueError(f"{where}: a recorded answer is a result or an rpc_error, exactly one")
        if rpc_error is not None:
            code = rpc_error.get("code")
            if (
                isinstance(code, bool)
                or not isinstance(code, int)
                or not isinstance(rpc_error.get("message"), str)
            ):
                raise InvalidValueError(f"{where}: rpc_error needs an integer code and a string message")
            error = {k: rpc_error[k] for k in ("code", "message", "data") if k in rpc_error}
            columns: tuple[Any, ...] = (None, None, 0, dumps(error))
        else:
            columns = (*result_to_columns(normalize_result(result, where=f"{where} result")), None)
        sent = _checked_notifications(notifications, where)
        with self.transaction():
            row = self._conn.execute(_NEXT_STEP, (inventory, tool, canon.key)).fetchone()
            step = int(row[0])
            self._conn.execute(
                _INSERT_STEP,
                (
                    inventory,
                    tool,
                    canon.key,
                    step,
                    canon.json,
                    *columns,
                    latency,
                    provenance,
                    created or utc_now_iso(),
                    sent,
                ),
            )
        return step

    def response_steps(self, inventory: str, tool: str, key: str) -> list[dict[str, Any]]:
        """The recorded answers of one key in order.

        Each ``{step, result | None, rpc_error | None, latency_ms, provenance, notifications}``
        (``notifications``: a list, empty when none were recorded).
        """
        with self._locked():
            rows = self._conn.execute(_SELECT_STEPS, (inventory, tool, key)).fetchall()
        return [
            {
                "step": row[0],
                "result": None if row[1] is None else result_from_columns(row[1], row[2], row[3]),
                "rpc_error": None if row[4] is None else json.loads(row[4]),
                "latency_ms": row[5],
                "provenance": row[6],
                "notifications": [] if row[7] is None else json.loads(row[7]),
            }
            for row in rows
        ]

    def iter_steps(self, inventory: str) -> Iterator[dict[str, Any]]:
        """Every recorded answer of one inventory, ordered by (tool, args_key, step).

        Each item: ``inventory, tool, args_key, step, arguments`` (dict), ``result`` or ``rpc_error``
        (the other None), ``notifications`` (list), ``latency_ms, provenance, created``.
        """
        sql = (
            "SELECT tool, args_key, step, arguments, content, structured_content, is_error, rpc_error,"
            " notifications, latency_ms, provenance, created FROM response_steps WHERE inventory = ?"
            " ORDER BY tool, args_key, step"
        )
        with self._locked():
            rows = self._conn.execute(sql, (inventory,)).fetchall()
        for row in rows:
            yield {
                "inventory": inventory,
                "tool": row[0],
                "args_key": row[1],
                "step": row[2],
                "arguments": json.loads(row[3]),
                "result": None if row[4] is None else result_from_columns(row[4], row[5], row[6]),
                "rpc_error": None if row[7] is None else json.loads(row[7]),
                "notifications": [] if row[8] is None else json.loads(row[8]),
                "latency_ms": row[9],
                "provenance": row[10],
                "created": row[11],
            }

    def count_steps(self, inventory: str | None = None, tool: str | None = None) -> int:
        """Number of recorded answers in sequences, optionally for one inventory and/or tool."""
        where, params = where_equal(inventory=inventory, tool=tool)
        with self._locked():
            return int(
                self._conn.execute(f"SELECT count(*) FROM response_steps{where}", params).fetchone()[0]
            )

    def count(self, inventory: str | None = None, tool: str | None = None) -> int:
        """Number of stored responses, optionally for one inventory and/or tool."""
        where, params = where_equal(inventory=inventory, tool=tool)
        with self._locked():
            return int(self._conn.execute(f"SELECT count(*) FROM responses{where}", params).fetchone()[0])

    def iter_responses(
        self, inventory: str | None = None, tool: str | None = None, page_size: int = 500
    ) -> Iterator[dict[str, Any]]:
        """Stored responses ordered by (inventory, tool, args_key), read page by page.

        Each item: ``inventory, tool, args_key, arguments`` (dict), ``result``
        (``{content, structuredContent, isError}``), ``latency_ms, provenance, created``.
        """
        where, params = where_equal(inventory=inventory, tool=tool)
        after: tuple[str, str, str] | None = None
        while True:
            clause, args = where, list(params)
            if after is not None:
                clause += (" AND " if clause else " WHERE ") + "(inventory, tool, args_key) > (?, ?, ?)"
                args += after
            sql = (
                "SELECT inventory, tool, args_key, arguments, content, structured_content, is_error,"
                f" latency_ms, provenance, created FROM responses{clause}"
                f" ORDER BY inventory, tool, args_key LIMIT {int(page_size)}"
            )
            with self._locked():
                rows = self._conn.execute(sql, args).fetchall()
            for row in rows:
                yield {
                    "inventory": row[0],
                    "tool": row[1],
                    "args_key": row[2],
                    "arguments": json.loads(row[3]),
                    "result": result_from_columns(row[4], row[5], row[6]),
                    "latency_ms": row[7],
                    "provenance": row[8],
                    "created": row[9],
                }
            if len(rows) < page_size:
                return
            after = (rows[-1][0], rows[-1][1], rows[-1][2])
