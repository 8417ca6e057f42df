"""The trace viewer's reads, each bounded by an index (part of :class:`recordings.trace_store.TraceStore`).

- runs: :meth:`TracePages.run_summaries` (counts come from the ``calls (run_id, sample_id, ...)`` index);
- samples of a run: :meth:`TracePages.sample_page`, keyset-paginated on ``sample_id`` (``after`` = the
  last id of the previous page): it walks the run's index entries in order and stops after
  ``limit + 1`` matching samples, so a page costs the same on the first and the thousandth page;
- one sample: :meth:`TracePages.sample_calls` (an index range), and its live increment
  :meth:`TracePages.new_calls` (rows with ``id > since`` plus the rows the page still shows as pending);
- :meth:`TracePages.change_cursor`: ``max(id)`` of ``calls`` (the primary key's last entry) - it moves
  when a call is logged, so a page polls it cheaply and refetches only then.

The SQL is plain enough for SQLite and PostgreSQL alike (``?`` placeholders; the PostgreSQL store
binds them as ``%s``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from finmcp.recordings.schema import CALLS_COLUMNS
from finmcp.recordings.trace_types import RunSummary, SampleSummary, json_or_text

PAGE_COLUMNS = tuple(
    c for c in CALLS_COLUMNS if c not in ("run_id", "sample_id", "client_name", "protocol_version")
)
"""The ``calls`` columns a sample's page shows (the run and sample are the page's own)."""
PAGE_MAX = 500


def cut_select(columns: Sequence[str], column: str, chars: int | None) -> str:
    """The select list of ``columns``; with ``chars``, ``column`` read as its first ``chars`` characters
    (``substr``) and its whole length in characters (``length``) added last, so a huge value is never
    loaded whole into Python (SQLite and PostgreSQL count characters alike)."""
    if chars is None:
        return ", ".join(columns)
    if chars < 0:
        raise ValueError(f"chars {chars}: expected 0 or more")
    cut = [f"substr({c}, 1, {int(chars)})" if c == column else c for c in columns]
    return ", ".join([*cut, f"length({column})"])


FAILED_STATUSES = ("tool_error", "rpc_error", "transport_error", "cancelled")


@dataclass(frozen=True)
class SampleFilter:
    """What the samples page asks for; every field optional."""

    status: str | None = None
    """Samples with at least one call of this status."""
    tool: str | None = None
    """Samples with at least one call to this tool."""
    failed: bool = False
    """Samples with at least one failed call (tool, RPC or transport error, cancelled)."""
    search: str | None = None
    """Substring of the sample id or of a tool name (case-insensitive)."""

    def having(self) -> tuple[str, list[Any]]:
        """The ``HAVING`` clause (``""`` for none) and its parameters."""
        clauses: list[str] = []
        params: list[Any] = []
        if self.status:
            clauses.append("sum(CASE WHEN status = ? THEN 1 ELSE 0 END) > 0")
            params.append(self.status)
        if self.tool:
            clauses.append("sum(CASE WHEN tool = ? THEN 1 ELSE 0 END) > 0")
            params.append(self.tool)
        if self.failed:
            clauses.append(f"sum(CASE WHEN status IN ({marks(FAILED_STATUSES)}) THEN 1 ELSE 0 END) > 0")
            params.extend(FAILED_STATUSES)
        if self.search:
            pattern = "%" + _like_escape(self.search.lower()) + "%"
            clauses.append(
                "sum(CASE WHEN lower(sample_id) LIKE ? ESCAPE '\\' OR lower(tool) LIKE ? ESCAPE '\\'"
                " THEN 1 ELSE 0 END) > 0"
            )
            params.extend([pattern, pattern])
        return (" HAVING " + " AND ".join(clauses) if clauses else ""), params


def marks(values: Sequence[Any]) -> str:
    """``?, ?, ...``: one placeholder per value (for ``IN (...)``)."""
    return ", ".join("?" for _ in values)


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


_SUMMARY = (
    "SELECT sample_id, count(*), count(DISTINCT trial), max(turn),"
    " sum(CASE WHEN status IN ('tool_error', 'rpc_error', 'transport_error', 'cancelled') THEN 1 ELSE 0 END),"
    " sum(CASE WHEN status = 'pending' THEN 1 ELSE 0 END), min(wall_time), max(wall_time),"
    " sum(latency_ms)"
    " FROM calls WHERE run_id = ?"
)


class TracePages:
    """The viewer's reads; the store supplies :meth:`_rows` (``?`` placeholders, all rows of a query)."""

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def run_summaries(self) -> list[RunSummary]:
        """Every run: id, created, meta (decoded), calls, samples; newest first."""
        rows = self._rows(
            "SELECT r.run_id, r.created, r.meta,"
            " (SELECT count(*) FROM calls c WHERE c.run_id = r.run_id),"
            " (SELECT count(DISTINCT c.sample_id) FROM calls c WHERE c.run_id = r.run_id)"
            " FROM runs r ORDER BY r.created DESC, r.run_id"
        )
        return [
            RunSummary(run, created, json_or_text(meta), calls, samples)
            for run, created, meta, calls, samples in rows
        ]

    def run_exists(self, run_id: str) -> bool:
        """True when the run has a row in ``runs`` or any call."""
        if self._rows("SELECT 1 FROM runs WHERE run_id = ?", [run_id]):
            return True
        return self.has_calls(run_id)

    def has_calls(self, run_id: str) -> bool:
        """True when any call carries ``run_id``."""
        return bool(self._rows("SELECT 1 FROM calls WHERE run_id = ? LIMIT 1", [run_id]))

    def change_cursor(self) -> int:
        """The newest call id of the whole store (0 when empty)."""
        value = self._rows("SELECT max(id) FROM calls")[0][0]
        return int(value or 0)

    def sample_page(
        self,
        run_id: str,
        after: str | None,
        limit: int,
        where: SampleFilter,
        only: Sequence[str] | None = None,
    ) -> tuple[list[SampleSummary], str | None]:
        """One page of a run's samples in sample-id order after ``after``, and the next page's cursor.

        ``only`` restricts the page to those sample ids (a score filter, already sorted and cut to
        the ids after ``after``).
        """
        limit = max(1, min(limit, PAGE_MAX))
        sql = _SUMMARY
        params: list[Any] = [run_id]
        if only is not None:
            if not only:
                return [], None
            sql += f" AND sample_id IN ({marks(only)})"
            params.extend(only)
        elif after is not None:
            sql += " AND sample_id > ?"
            params.append(after)
        else:
            sql += " AND sample_id IS NOT NULL"
        having, having_params = where.having()
        sql += " GROUP BY sample_id" + having + " ORDER BY sample_id LIMIT ?"
        rows = self._rows(sql, [*params, *having_params, limit + 1])
        more = len(rows) > limit
        samples = [
            SampleSummary(
                sid,
                n,
                trials,
                (last_turn + 1) if last_turn is not None else 0,
                failed or 0,
                pending or 0,
                first,
                last,
                round(latency or 0.0, 3),
            )
            for sid, n, trials, last_turn, failed, pending, first, last, latency in rows[:limit]
        ]
        self._add_tools(run_id, samples)
        return samples, (samples[-1].sample_id if more and samples else None)

    def _add_tools(self, run_id: str, samples: list[SampleSummary]) -> None:
        if not samples:
            return
        ids = [s.sample_id for s in samples]
        rows = self._rows(
            f"SELECT sample_id, tool, count(*) FROM calls WHERE run_id = ? AND sample_id IN ({marks(ids)})"
            " GROUP BY sample_id, tool ORDER BY sample_id, tool",
            [run_id, *ids],
        )
        tools: dict[str, dict[str, int]] = {}
        for sid, tool, n in rows:
            tools.setdefault(sid, {})[tool or ""] = n
        for sample in samples:
            sample.tools = tools.get(sample.sample_id, {})

    def sample_calls(
        self, run_id: str, sample_id: str, result_chars: int | None = None
    ) -> list[tuple[Any, ...]]:
        """Every call of one sample (all trials) as :data:`PAGE_COLUMNS` rows, in trial, turn, seq order.

        ``result_chars``: ``result`` holds at most that many characters and each row ends with the
        result's whole length (:func:`cut_select`).
        """
        return self._rows(
            f"SELECT {cut_select(PAGE_COLUMNS, 'result', result_chars)} FROM calls WHERE run_id = ? AND sample_id = ?"
            " ORDER BY trial, turn, seq, id",
            [run_id, sample_id],
        )

    def new_calls(
        self,
        run_id: str,
        sample_id: str,
        since: int,
        pending: Iterable[int],
        result_chars: int | None = None,
    ) -> list[tuple[Any, ...]]:
        """:data:`PAGE_COLUMNS` rows of one sample logged after id ``since``, plus the current rows of
        the ids in ``pending`` (``result_chars`` as in :meth:`sample_calls`)."""
        open_ids = [int(i) for i in pending][:PAGE_MAX]
        sql = f"SELECT {cut_select(PAGE_COLUMNS, 'result', result_chars)} FROM calls WHERE run_id = ? AND sample_id = ? AND (id > ?"
        params: list[Any] = [run_id, sample_id, since]
        if open_ids:
            sql += f" OR id IN ({marks(open_ids)})"
            params.extend(open_ids)
        return self._rows(sql + ") ORDER BY trial, turn, seq, id", params)
