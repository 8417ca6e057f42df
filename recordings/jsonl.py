"""Export and import recorded responses as JSONL (one response per line).

A line is a JSON object with the keys, in this order: ``inventory, tool, args_key, arguments,
result`` (``{content, structuredContent, isError}``), ``latency_ms, provenance, created``. Lines are
ordered by (inventory, tool, args_key), so exporting the same recordings always gives the same
bytes, and export -> import -> export is byte-identical. Text is UTF-8 with non-ASCII kept as is.

A recorded server (one whose declaration is stored, :mod:`recordings.declarations`) travels whole:
after the response lines come, per declared server (by name), one ``"kind": "server"`` line (``name,
declaration, provenance, created, updated``) and its ``"kind": "step"`` lines (every recorded answer
in order: ``inventory, tool, args_key, step, arguments, result | rpc_error, notifications,
latency_ms, provenance, created``), so the imported file replays it as it was. A file with no
declaration exports as before.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, TextIO

from finmcp.recordings.errors import InvalidValueError
from finmcp.recordings.results import dumps
from finmcp.recordings.store import RecordingStore

LINE_KEYS = ("inventory", "tool", "args_key", "arguments", "result", "latency_ms", "provenance", "created")
SERVER_KEYS = ("name", "declaration", "provenance", "created", "updated")
STEP_KEYS = (
    "inventory",
    "tool",
    "args_key",
    "step",
    "arguments",
    "result",
    "rpc_error",
    "notifications",
    "latency_ms",
    "provenance",
    "created",
)
_REQUIRED = ("inventory", "tool", "arguments", "result", "provenance")


@contextmanager
def _opened(target: str | Path | TextIO, mode: Literal["r", "w"]) -> Iterator[TextIO]:
    if isinstance(target, str | Path):
        with open(target, mode, encoding="utf-8", newline="\n") as handle:
            yield handle
    else:
        yield target


def export_jsonl(
    store: RecordingStore,
    target: str | Path | TextIO,
    inventory: str | None = None,
    tool: str | None = None,
) -> int:
    """Write the stored responses (optionally one inventory / tool) to ``target``; returns the line count."""
    lines = 0
    with _opened(target, "w") as out:
        for record in store.iter_responses(inventory=inventory, tool=tool):
            out.write(dumps({key: record[key] for key in LINE_KEYS}) + "\n")
            lines += 1
        for name in store.declared_servers():
            if inventory is not None and name != inventory:
                continue
            stored = store.declaration_record(name)
            assert stored is not None
            out.write(dumps({"kind": "server", **{key: stored[key] for key in SERVER_KEYS}}) + "\n")
            lines += 1
            for step in store.iter_steps(name):
                if tool is None or step["tool"] == tool:
                    line = {"kind": "step", **{key: step[key] for key in STEP_KEYS if step[key] is not None}}
                    out.write(dumps(line) + "\n")
                    lines += 1
    return lines


def export_jsonl_text(store: RecordingStore, inventory: str | None = None) -> str:
    """The JSONL export as a string."""
    buffer = io.StringIO()
    export_jsonl(store, buffer, inventory=inventory)
    return buffer.getvalue()


def import_jsonl(
    store: RecordingStore,
    source: str | Path | TextIO,
    replace: bool = True,
    verify_keys: bool = True,
    inventory: str | None = None,
) -> Counter[str]:
    """Load a JSONL export into ``store`` in one transaction (all lines or none).

    Returns how many lines were ``inserted``, ``replaced``, ``identical`` or ``kept`` (see
    :meth:`RecordingStore.put_response`). With ``verify_keys`` a line whose ``args_key`` differs
    from the key recomputed from its arguments is an error (a corrupt file, or one written by another
    key algorithm); ``inventory`` overrides the inventory of every line.
    """
    outcomes: Counter[str] = Counter()
    name = str(source) if isinstance(source, str | Path) else getattr(source, "name", "<stream>")
    with _opened(source, "r") as handle, store.transaction():
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{name}:{number}"
            kind = _kind(line, where)
            if kind != "response":
                outcomes[_import_declared(store, kind, line, where, inventory)] += 1
                continue
            record = _parse_line(line, where)
            target_inventory = inventory or record["inventory"]
            if verify_keys and record.get("args_key") is not None:
                key = store.canonical(record["tool"], record["arguments"]).key
                if key != record["args_key"]:
                    raise InvalidValueError(
                        f"{name}:{number}: args_key {record['args_key']} does not match the key of the "
                        f"line's arguments ({key}); pass verify_keys=False to re-key"
                    )
            try:
                outcome = store.put_response(
                    target_inventory,
                    record["tool"],
                    record["arguments"],
                    record["result"],
                    record["provenance"],
                    latency_ms=record.get("latency_ms"),
                    replace=replace,
                    created=record.get("created"),
                )
            except InvalidValueError as exc:
                raise InvalidValueError(f"{name}:{number}: {exc}") from None
            outcomes[outcome] += 1
    return outcomes


def _kind(line: str, where: str) -> str:
    """``response`` (a line without ``kind``), ``server`` or ``step``."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidValueError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    kind = record.get("kind", "response") if isinstance(record, dict) else "response"
    if kind not in ("response", "server", "step"):
        raise InvalidValueError(f"{where}: unknown line kind {kind!r} (expected server or step)")
    return str(kind)


def _import_declared(store: RecordingStore, kind: str, line: str, where: str, inventory: str | None) -> str:
    """Import a ``server`` or ``step`` line; ``inserted`` or ``identical`` (a step already stored)."""
    record = json.loads(line)
    keys = SERVER_KEYS if kind == "server" else STEP_KEYS
    unknown = sorted(set(record) - set(keys) - {"kind"})
    if unknown:
        raise InvalidValueError(f"{where}: unknown keys {unknown}")
    try:
        if kind == "server":
            stored = store.declaration_record(inventory or record["name"])
            if stored is not None and all(stored[k] == record.get(k) for k in SERVER_KEYS if k != "name"):
                return "identical"
            store.put_declaration(
                inventory or record["name"],
                record["declaration"],
                record["provenance"],
                created=record.get("created"),
                updated=record.get("updated"),
            )
            return "inserted"
        target = inventory or record["inventory"]
        key = store.canonical(record["tool"], record["arguments"]).key
        known = store.response_steps(target, record["tool"], record.get("args_key") or key)
        if any(step["step"] == record["step"] for step in known):
            return "identical"
        step = store.append_response_step(
            target,
            record["tool"],
            record["arguments"],
            record.get("result"),
            record["provenance"],
            record.get("latency_ms"),
            rpc_error=record.get("rpc_error"),
            created=record.get("created"),
            notifications=record.get("notifications"),
        )
    except KeyError as exc:
        raise InvalidValueError(f"{where}: missing key {exc}") from None
    except InvalidValueError as exc:
        raise InvalidValueError(f"{where}: {exc}") from None
    if step != record["step"]:
        raise InvalidValueError(f"{where}: step {record['step']} arrived as step {step} (steps out of order)")
    return "inserted"


def _parse_line(line: str, where: str) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidValueError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(record, dict):
        raise InvalidValueError(f"{where}: expected a JSON object per line, got {type(record).__name__}")
    missing = [key for key in _REQUIRED if key not in record]
    if missing:
        raise InvalidValueError(f"{where}: missing keys {missing}")
    unknown = sorted(set(record) - set(LINE_KEYS))
    if unknown:
        raise InvalidValueError(f"{where}: unknown keys {unknown}")
    return record
