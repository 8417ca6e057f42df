"""Standard exports of a run: OpenTelemetry OTLP (JSON or protobuf), HAR 1.2, CSV and Parquet (``finmcp-proxy export``).

Each format is its own module (:mod:`proxy.exports.otlp`, :mod:`proxy.exports.har`,
:mod:`proxy.exports.tabular`); :func:`render` picks one. They read a trace store through the
``calls``/``messages``/``sessions`` API (:class:`recordings.trace_store.TraceStore`).
"""

from __future__ import annotations

import json

from finmcp.recordings.plumbing.terminal import visible_json
from finmcp.recordings.results import escape_surrogates
from finmcp.recordings.trace_store import TraceStore

STANDARD_FORMATS = ("otlp", "otlp-proto", "har", "csv", "parquet")
"""The formats rendered here (the prediction formats stay in :mod:`proxy.export`)."""


def render(store: TraceStore, run_id: str, fmt: str) -> bytes:
    """The export of run ``run_id`` in ``fmt`` as the bytes of the file."""
    if fmt == "otlp":
        from finmcp.proxy.exports.otlp import export_otlp

        return _json_bytes(export_otlp(store, run_id))
    if fmt == "otlp-proto":
        from finmcp.proxy.exports.otlp import export_otlp, to_protobuf

        return to_protobuf(json.loads(_json_bytes(export_otlp(store, run_id))))
    if fmt == "har":
        from finmcp.proxy.exports.har import export_har

        return _json_bytes(export_har(store, run_id))
    if fmt == "csv":
        from finmcp.proxy.exports.tabular import export_csv

        return export_csv(store, run_id).encode("utf-8")
    if fmt == "parquet":
        from finmcp.proxy.exports.tabular import export_parquet

        return export_parquet(store, run_id)
    raise ValueError(f"unknown export format {fmt!r}")


def _json_bytes(document: object) -> bytes:
    # a client's "\ud800" stays an escape: UTF-8 cannot hold it raw; nor does a C1 or bidi control
    # (an escape decodes to the same value; the file is safe to print)
    return (visible_json(escape_surrogates(json.dumps(document, ensure_ascii=False))) + "\n").encode("utf-8")
