"""The ``answers`` table (schema 6): one row per (run, sample, trial, turn), a later write replacing it,
read back in order; read-only on a file from before schema 6 it reads none; none on postgresql://."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from finmcp.recordings.answers import StoredAnswer, answers_of, put_answers
from finmcp.recordings.errors import RecordingsError
from finmcp.recordings.schema import connect, migrate
from finmcp.recordings.trace_store import SqliteTraceStore


def test_answers_are_stored_replaced_and_read_in_order(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    SqliteTraceStore.open(db).close()
    rows = [
        StoredAnswer("r", "b", 0, 1, "second turn"),
        StoredAnswer("r", "b", 0, 0, "first turn"),
        StoredAnswer("r", "a", 1, 0, None, "timed out", "import:x.jsonl"),
        StoredAnswer("other", "a", 0, 0, "not this run"),
    ]
    assert put_answers(db, rows) == 4
    assert put_answers(db, [StoredAnswer("r", "b", 0, 1, "second turn, again")]) == 1
    got = answers_of(db, "r")
    assert [(a.sample_id, a.trial, a.turn, a.answer, a.error) for a in got] == [
        ("a", 1, 0, None, "timed out"),
        ("b", 0, 0, "first turn", None),
        ("b", 0, 1, "second turn, again", None),
    ]
    assert got[0].source == "import:x.jsonl" and got[1].source == "harness" and got[1].created


def test_a_file_before_schema_6_reads_no_answers_and_is_migrated_on_write(tmp_path: Path) -> None:
    db = tmp_path / "old.sqlite"
    conn = connect(db)
    migrate(conn, target=5)
    conn.close()
    assert answers_of(db, "r") == []
    put_answers(db, [StoredAnswer("r", "s", 0, 0, "x")])
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] >= 6
    assert [a.answer for a in answers_of(db, "r")] == ["x"]


def test_missing_store_and_postgres(tmp_path: Path) -> None:
    with pytest.raises(RecordingsError, match="trace store not found"):
        put_answers(tmp_path / "nope.sqlite", [])
    assert answers_of("postgresql://u:p@127.0.0.1:1/db", "r") == []
