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
"""

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
