"""One run's calls in the evaluator's order, from the trace store (SQLite or PostgreSQL).

:func:`open_trace_rows` opens the store read-only (:func:`recordings.trace_store.open_trace_store`),
checks that it holds the run, and :meth:`TraceRows.rows` streams
:meth:`recordings.trace_store.TraceStore.prediction_rows`: ``(sample_id, trial, turn, call_group, seq,
tool, arguments, result, rpc_error, status)`` ordered by sample, trial, turn, group (NULL first), seq
and row id, a batch at a time. The store's errors become :class:`EvalInputError`.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.inputs.fingerprint import fingerprint_of_meta
from finmcp.recordings.connection import Closing
from finmcp.recordings.errors import RecordingsError
from finmcp.recordings.trace_store import TraceStore, open_trace_store
from finmcp.recordings.trace_types import PredictionRow


class TraceRows(Closing):
    """One run's call rows in one store; a context manager (closes the store)."""

    def __init__(self, store: TraceStore, run_id: str) -> None:
        self.store = store
        self.source = store.label
        self.run_id = run_id
        self._streams: list[Generator[PredictionRow, None, None]] = []

    def rows(self, outputs: bool = True) -> Iterator[PredictionRow]:
        """The run's rows in the evaluator's order; without ``outputs``, ``result`` and ``rpc_error``
        read as None and are not fetched (scoring FinMCP metrics)."""
        try:
            rows = self.store.prediction_rows(self.run_id, outputs=outputs)
        except RecordingsError as exc:
            raise EvalInputError(str(exc)) from None
        stream = _input_errors(rows)
        self._streams.append(stream)
        return stream

    def fingerprint(self) -> dict[str, Any] | None:
        """The run's fingerprint from its ``runs.meta`` (None for a run recorded without one, or a store
        with no ``runs`` table: a hand-made trace of calls alone)."""
        try:
            return fingerprint_of_meta(self.store.run_meta(self.run_id))
        except RecordingsError:
            return None

    def close(self) -> None:
        """Stop every stream handed out, then close the store."""
        for stream in self._streams:
            stream.close()
        self._streams.clear()
        self.store.close()


def _input_errors(rows: Iterator[PredictionRow]) -> Generator[PredictionRow, None, None]:
    try:
        yield from rows
    except RecordingsError as exc:
        raise EvalInputError(str(exc)) from None


def open_trace_rows(db: str | Path, run_id: str) -> TraceRows:
    """The rows of run ``run_id`` in the store ``db`` (a SQLite path or a ``postgresql://`` URL).

    Raises :class:`EvalInputError` for a missing file, an unreachable server (password redacted), a
    store that is not a finmcp trace store, and a run that is not there (naming the runs that are).
    """
    try:
        store = open_trace_store(db, readonly=True)
    except RecordingsError as exc:
        raise EvalInputError(str(exc)) from None
    try:
        store.calls_columns()
        if not store.has_calls(run_id):
            runs = store.run_ids()
            raise EvalInputError(
                f"trace DB {store.label}: run {run_id!r} not found; runs present: {runs or 'none'}"
            )
    except RecordingsError as exc:
        store.close()
        raise EvalInputError(str(exc)) from None
    except BaseException:
        store.close()
        raise
    return TraceRows(store, run_id)
