"""What the viewer's API sends, read from the trace store (:class:`recordings.trace_store.TraceStore`).

The store runs the queries (:mod:`recordings.trace_pages`: keyset pages, bounded by an index); this
module shapes their rows as the pages' JSON: runs and sample summaries as dicts, a call with its JSON
decoded, its error text and a cut output (:func:`call_view`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict
from typing import Any

from finmcp.recordings.trace_pages import PAGE_COLUMNS, PAGE_MAX, SampleFilter
from finmcp.recordings.trace_store import TraceStore
from finmcp.recordings.trace_types import json_or_text
from finmcp.recordings.transcripts import failure

__all__ = ["PAGE_MAX", "SampleFilter", "call_view", "list_runs", "new_calls", "sample_calls", "sample_page"]

OUTPUT_MAX_CHARS = 200_000
"""A call's output larger than this is sent cut (with a note): a page stays responsive."""


def list_runs(store: TraceStore) -> list[dict[str, Any]]:
    """Every run: id, created, meta (decoded), calls, samples; newest first."""
    return [asdict(run) for run in store.run_summaries()]


def sample_page(
    store: TraceStore,
    run_id: str,
    after: str | None,
    limit: int,
    where: SampleFilter,
    only: Sequence[str] | None = None,
) -> tuple[list[dict[str, Any]], str | None]:
    """One page of a run's samples (:meth:`recordings.trace_pages.TracePages.sample_page`) as dicts."""
    samples, next_after = store.sample_page(run_id, after, limit, where, only)
    return [asdict(sample) for sample in samples], next_after


def sample_calls(store: TraceStore, run_id: str, sample_id: str) -> list[dict[str, Any]]:
    """Every call of one sample (all trials), in trial, turn, seq order, as the page shows it."""
    return [call_view(row) for row in store.sample_calls(run_id, sample_id, OUTPUT_MAX_CHARS)]


def new_calls(
    store: TraceStore, run_id: str, sample_id: str, since: int, pending: Iterable[int]
) -> list[dict[str, Any]]:
    """Calls of one sample logged after id ``since``, plus the current rows of the ids in ``pending``."""
    return [call_view(row) for row in store.new_calls(run_id, sample_id, since, pending, OUTPUT_MAX_CHARS)]


def call_view(row: Sequence[Any]) -> dict[str, Any]:
    """One call row as the page shows it: JSON decoded, the error text, a cut output.

    ``row``: :data:`PAGE_COLUMNS`, or those and the result's whole length (read cut by the store, so a
    huge result is never loaded whole).
    """
    length: int | None = None
    if len(row) == len(PAGE_COLUMNS) + 1:
        row, length = row[:-1], row[-1]
    call = dict(zip(PAGE_COLUMNS, row, strict=True))
    raw_result = call["result"]
    if length is None and isinstance(raw_result, str):
        length = len(raw_result)
    call["arguments"] = json_or_text(call["arguments"])
    call["rpc_error"] = json_or_text(call["rpc_error"])
    call["jsonrpc_id"] = json_or_text(call["jsonrpc_id"])
    if isinstance(raw_result, str) and length is not None and length > OUTPUT_MAX_CHARS:
        call["result"] = None
        call["output_cut"] = f"{length} characters; the first {OUTPUT_MAX_CHARS} follow"
        call["output_head"] = raw_result[:OUTPUT_MAX_CHARS]
    else:
        call["result"] = json_or_text(raw_result)
    failed = failure(call["result"], call["rpc_error"], call["status"]) if call["status"] != "ok" else None
    call["error"] = failed[1] if failed is not None and call["status"] != "pending" else None
    return call
