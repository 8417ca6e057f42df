"""finmcp recordings: the SQLite data layer shared by server, proxy and evaluator.

- :mod:`recordings.schema`: the versioned schema and its migrations;
- :mod:`recordings.canonical`: canonical arguments and lookup keys;
- :mod:`recordings.store`: :class:`RecordingStore` (the recordings: recorded answers);
- :mod:`recordings.trace_store`: the trace store, :func:`open_trace_store` (SQLite or PostgreSQL);
- :mod:`recordings.jsonl`: export/import of responses as JSONL;
- :mod:`recordings.import_finmcp`: import of tool outputs from FinMCP-Bench sample files;
- :mod:`recordings.plumbing`: plumbing the server, proxy and evaluator share and nothing below them
  could hold (seed derivation, protocol eras, SSE parsing, the listener policy and socket binding,
  launching a finmcp process); none of it touches storage.

Importing the package loads none of them (the names below load their module on first use,
PEP 562), so a program that needs only :mod:`recordings.plumbing` (a command line's parser, its
``--help``) does not pay for SQLite helpers it never calls.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from finmcp.recordings.canonical import args_key, canonical_arguments, canonical_json, canonicalize
    from finmcp.recordings.errors import (
        CallStateError,
        InvalidValueError,
        RecordingsError,
        SchemaError,
        SchemaVersionError,
        UnknownCallError,
    )
    from finmcp.recordings.responses import RECORDING_META_KEY
    from finmcp.recordings.schema import CALLS_COLUMNS, SCHEMA_VERSION
    from finmcp.recordings.store import RecordingStore
    from finmcp.recordings.trace_store import SqliteTraceStore, TraceStore, open_trace_store

_HOMES = {
    "args_key": "canonical",
    "canonical_arguments": "canonical",
    "canonical_json": "canonical",
    "canonicalize": "canonical",
    "CallStateError": "errors",
    "InvalidValueError": "errors",
    "RecordingsError": "errors",
    "SchemaError": "errors",
    "SchemaVersionError": "errors",
    "UnknownCallError": "errors",
    "RECORDING_META_KEY": "responses",
    "CALLS_COLUMNS": "schema",
    "SCHEMA_VERSION": "schema",
    "RecordingStore": "store",
    "SqliteTraceStore": "trace_store",
    "TraceStore": "trace_store",
    "open_trace_store": "trace_store",
}
"""Each public name and the module (under ``finmcp.recordings``) it lives in."""


def __getattr__(name: str) -> Any:
    """Load a public name's module on first use (PEP 562)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


__all__ = [
    "CALLS_COLUMNS",
    "RECORDING_META_KEY",
    "SCHEMA_VERSION",
    "CallStateError",
    "InvalidValueError",
    "RecordingStore",
    "RecordingsError",
    "SchemaError",
    "SchemaVersionError",
    "SqliteTraceStore",
    "TraceStore",
    "UnknownCallError",
    "args_key",
    "canonical_arguments",
    "canonical_json",
    "canonicalize",
    "open_trace_store",
]
