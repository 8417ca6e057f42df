"""Agents' final answers in a SQLite trace store: the ``answers`` table (schema 6).

One row per (run, sample, trial, turn): the answer text (None: the agent gave none) and, when it
failed, the error that says why. The harness writes its agents' answers as each sample ends;
``finmcp-eval answers`` imports the answers of agents run elsewhere. A later write of the same key
replaces the earlier one (a resumed sample's new answer wins). Writes commit before they return.

A ``postgresql://`` store has no ``answers`` table yet: :func:`answers_of` reads none there (the
harness's answers are still in its run state).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from finmcp.recordings.clock import utc_now_iso
from finmcp.recordings.connection import StoreConnection
from finmcp.recordings.errors import RecordingsError
from finmcp.recordings.postgres.connection import is_postgres_url

_UPSERT = (
    "INSERT INTO answers (run_id, sample_id, trial, turn, answer, error, source, created)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (run_id, sample_id, trial, turn) DO UPDATE SET answer = excluded.answer,"
    " error = excluded.error, source = excluded.source, created = excluded.created"
)
_SELECT = (
    "SELECT run_id, sample_id, trial, turn, answer, error, source, created FROM answers"
    " WHERE run_id = ? ORDER BY sample_id, trial, turn"
)


@dataclass(frozen=True, slots=True)
class StoredAnswer:
    """One row of ``answers``."""

    run_id: str
    sample_id: str
    trial: int
    turn: int
    answer: str | None
    error: str | None = None
    source: str = "harness"
    created: str = ""


class AnswerStore(StoreConnection):
    """The ``answers`` table of one SQLite trace file (opened with :meth:`open`: migrated to schema 6)."""

    def put(self, rows: Iterable[StoredAnswer]) -> int:
        """Write ``rows`` in one transaction (replacing rows of the same key); returns how many."""
        now = utc_now_iso()
        count = 0
        with self.transaction():
            for row in rows:
                params = (
                    row.run_id,
                    row.sample_id,
                    int(row.trial),
                    int(row.turn),
                    row.answer,
                    row.error,
                    row.source,
                    row.created or now,
                )
                self._execute(_UPSERT, params)
                count += 1
        return count

    def of_run(self, run_id: str) -> list[StoredAnswer]:
        """Every stored answer of ``run_id``, by sample, trial and turn (none when the file predates
        schema 6 and was opened read-only)."""
        with self._locked():
            names = {r[0] for r in self._execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "answers" not in names:
                return []
            rows = self._execute(_SELECT, (run_id,)).fetchall()
        return [StoredAnswer(*row) for row in rows]


def put_answers(path: str | Path, rows: Iterable[StoredAnswer]) -> int:
    """Write ``rows`` into the SQLite trace file ``path`` (it must exist; migrated to schema 6 first)."""
    if not Path(path).is_file():
        raise RecordingsError(f"trace store not found: {path}")
    with AnswerStore.open(path) as store:
        return store.put(rows)


def answers_of(target: str | Path, run_id: str) -> list[StoredAnswer]:
    """The stored answers of ``run_id`` in a trace store (read-only; none on ``postgresql://``)."""
    if is_postgres_url(target):
        return []
    with AnswerStore.open_readonly(target) as store:
        return store.of_run(run_id)
