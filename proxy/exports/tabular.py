"""``--format csv`` and ``--format parquet``: a run's ``calls`` rows for pandas, DuckDB or a spreadsheet.

Both hold every column of :data:`recordings.schema.CALLS_COLUMNS`, in order, one row per call (all of
the run's calls, with or without a sample tag), ordered as :meth:`recordings.trace_store.TraceStore.calls` returns them.
The JSON columns (``jsonrpc_id``, ``arguments``, ``result``, ``rpc_error``) are their stored JSON
text: a lone surrogate a client sent stays the JSON escape ``\\ud800``, so the text is valid UTF-8
and decodes to the value the client sent.

CSV: RFC 4180, UTF-8 without a BOM, CRLF line ends, a header row. Every text value is quoted (quotes
doubled); numbers are bare (a float in its shortest exact form); a NULL is an empty unquoted field, so
it differs from an empty string (``""``) for readers that tell them apart (DuckDB, PostgreSQL
``COPY ... CSV``, Python 3.12's ``csv.QUOTE_NOTNULL``). The text is what a hostile peer sent, so it is
made safe for spreadsheets and terminals, to a file or to stdout alike:

- formulas: a text cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets
  a leading ``'`` (OWASP's CSV injection rule: spreadsheets show the text, run nothing), unless the
  whole cell is a decimal number (``-1``, ``-1.5``, ``+2e3``: a ``jsonrpc_id`` of ``-1`` stays a
  number); numeric columns are bare numbers and never prefixed;
- control characters: in a JSON column, DEL, C1, bidi and separator characters become JSON escapes
  (:func:`recordings.plumbing.terminal.visible_json`: the same JSON value); in a plain text column
  (``run_id``, ``sample_id``, ``session_key``, ``client_name``, ``tool``, ...) every control character
  becomes a visible escape (:func:`recordings.plumbing.terminal.visible`, as ``finmcp-proxy show``
  prints it; a display form: the exact text is in Parquet, the JSON exports and the trace store).

Parquet (needs ``pyarrow``: ``pip install 'finmcp-kit[parquet]'``): typed columns: integers ``int64``,
``latency_ms`` ``float64``, ``wall_time`` ``timestamp[us, UTC]``, the rest (and the JSON text)
``string``.
"""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime
from typing import Any

from finmcp.proxy.exports.exchanges import wall_ns
from finmcp.recordings.errors import RecordingsError
from finmcp.recordings.plumbing.terminal import visible, visible_json
from finmcp.recordings.results import escape_surrogates
from finmcp.recordings.schema import CALLS_COLUMNS, JSON_CALL_COLUMNS
from finmcp.recordings.trace_store import TraceStore

INTEGER_COLUMNS = frozenset({"id", "turn", "seq", "t_req_ns", "t_resp_ns", "call_group", "trial"})
FORMULA_STARTS = frozenset("=+-@\t\r")
"""A cell starting with one of these is a formula to a spreadsheet (OWASP, "CSV Injection")."""
DECIMAL_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
"""A cell that is only a number: a spreadsheet reads it as that number, no formula runs."""


def calls_rows(store: TraceStore, run_id: str) -> list[dict[str, Any]]:
    """The run's call rows with the JSON columns as stored text."""
    return store.calls(run_id, parse_json=False)


def export_csv(store: TraceStore, run_id: str) -> str:
    """The run's calls as RFC 4180 CSV text."""
    lines = [",".join(CALLS_COLUMNS)]
    for row in calls_rows(store, run_id):
        lines.append(",".join(_csv_field(row[name], name in JSON_CALL_COLUMNS) for name in CALLS_COLUMNS))
    return "".join(line + "\r\n" for line in lines)


def spreadsheet_safe(text: str) -> str:
    """``text`` with a leading ``'`` when a spreadsheet would read it as a formula (see the module)."""
    if text[:1] in FORMULA_STARTS and not DECIMAL_NUMBER.fullmatch(text):
        return "'" + text
    return text


def _csv_field(value: Any, is_json: bool = False) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int | float):
        return repr(value)
    text = visible_json(escape_surrogates(str(value))) if is_json else visible(value)
    return '"' + spreadsheet_safe(text).replace('"', '""') + '"'


def export_parquet(store: TraceStore, run_id: str) -> bytes:
    """The run's calls as a Parquet file (bytes)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise RecordingsError("--format parquet needs pyarrow: pip install 'finmcp-kit[parquet]'") from None
    rows = calls_rows(store, run_id)
    fields = []
    arrays = []
    for name in CALLS_COLUMNS:
        values = [row[name] for row in rows]
        if name in INTEGER_COLUMNS:
            kind = pa.int64()
        elif name == "latency_ms":
            kind = pa.float64()
            values = [None if v is None else float(v) for v in values]
        elif name == "wall_time":
            kind = pa.timestamp("us", tz="UTC")
            values = [_timestamp(v) for v in values]
        else:
            kind = pa.string()
            values = [None if v is None else escape_surrogates(str(v)) for v in values]
        fields.append(pa.field(name, kind, nullable=name not in ("id", "status", "trial")))
        arrays.append(pa.array(values, type=kind))
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def _timestamp(text: str | None) -> datetime | None:
    unix_ns = wall_ns(text)
    if unix_ns is None:
        return None
    return datetime.fromtimestamp(unix_ns // 1_000_000_000, UTC).replace(
        microsecond=unix_ns % 1_000_000_000 // 1000
    )
