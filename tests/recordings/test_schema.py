"""The versioned schema: creation, migration, version checks, WAL mode and durability."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from finmcp.recordings import CALLS_COLUMNS, RecordingStore, SqliteTraceStore
from finmcp.recordings.errors import SchemaError, SchemaVersionError
from finmcp.recordings.schema import MIGRATIONS, SCHEMA_VERSION, connect, migrate, open_database, user_version

TEXT = {"content": [{"type": "text", "text": "ok"}], "isError": False}


def table_columns(path, table):
    with sqlite3.connect(path) as conn:
        return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]


def test_new_database_gets_every_table_at_the_latest_version(tmp_path):
    path = tmp_path / "new.sqlite"
    with RecordingStore.open(path) as store:
        assert store.schema_version == SCHEMA_VERSION == len(MIGRATIONS)
    assert table_columns(path, "calls") == list(CALLS_COLUMNS)
    assert table_columns(path, "responses") == [
        "id",
        "inventory",
        "tool",
        "args_key",
        "arguments",
        "content",
        "structured_content",
        "is_error",
        "latency_ms",
        "provenance",
        "created",
    ]
    assert table_columns(path, "messages")[:3] == ["id", "session_key", "run_id"]
    assert "era" in table_columns(path, "sessions")
    assert table_columns(path, "runs") == ["run_id", "created", "meta"]


def test_indexes_exist(tmp_path):
    path = tmp_path / "idx.sqlite"
    RecordingStore.open(path).close()
    with sqlite3.connect(path) as conn:

        def index_columns(table):
            found = {}
            for _, name, unique, *_ in conn.execute(f"PRAGMA index_list({table})"):
                cols = [row[2] for row in conn.execute(f"PRAGMA index_info({name})")]
                found[tuple(cols)] = bool(unique)
            return found

        assert index_columns("responses")[("inventory", "tool", "args_key")] is True
        assert ("run_id", "sample_id", "turn", "seq") in index_columns("calls")
        assert ("session_key", "seq") in index_columns("messages")
        assert ("session_key", "jsonrpc_id") not in index_columns("calls")  # dropped by step 3


def test_a_version_2_database_loses_the_unused_call_index_and_keeps_its_calls(tmp_path):
    path = tmp_path / "v2.sqlite"
    db = connect(path)
    migrate(db, target=2)
    db.execute("INSERT INTO calls (tool, arguments, status, trial, run_id) VALUES ('T', '{}', 'ok', 0, 'r')")
    assert "calls_session_jsonrpc_id" in [name for _, name, *_ in db.execute("PRAGMA index_list(calls)")]
    db.close()
    with SqliteTraceStore.open(path) as store:
        assert [c["tool"] for c in store.calls("r")] == ["T"]
        names = [row[1] for row in store.db.execute("PRAGMA index_list(calls)")]
        assert "calls_session_jsonrpc_id" not in names and "calls_run_sample_turn_seq" in names


def test_unique_key_is_enforced_by_sqlite(tmp_path):
    path = tmp_path / "uniq.sqlite"
    with RecordingStore.open(path) as store:
        store.put_response("inv", "T", {"a": 1}, TEXT, "simulated")
    with sqlite3.connect(path) as conn, pytest.raises(sqlite3.IntegrityError):
        conn.execute(
            "INSERT INTO responses (inventory, tool, args_key, arguments, content, provenance, created)"
            " SELECT inventory, tool, args_key, arguments, content, provenance, created FROM responses"
        )


def test_old_database_is_migrated_on_open_and_keeps_its_rows(tmp_path):
    path = tmp_path / "old.sqlite"
    db = connect(path)
    migrate(db, target=1)
    assert user_version(db) == 1
    assert "calls" not in db.table_names()
    db.execute(
        "INSERT INTO responses (inventory, tool, args_key, arguments, content, is_error, provenance, created)"
        " VALUES ('inv', 'T', 'k', '{}', ?, 0, 'simulated', '2025-01-01T00:00:00Z')",
        [json.dumps(TEXT["content"])],
    )
    db.close()
    with RecordingStore.open(path) as store:
        assert store.schema_version == SCHEMA_VERSION
        assert store.count() == 1
        assert store.get_response_by_key("inv", "T", "k")["content"] == TEXT["content"]
    with SqliteTraceStore.open(path) as traces:
        call_id = traces.begin_call(tool="T", arguments={}, run_id="r")
        assert traces.calls("r")[0]["id"] == call_id


def test_empty_file_is_initialised(tmp_path):
    path = tmp_path / "empty.sqlite"
    path.write_bytes(b"")
    with RecordingStore.open(path) as store:
        assert store.schema_version == SCHEMA_VERSION


def test_reopening_is_a_no_op(tmp_path):
    path = tmp_path / "twice.sqlite"
    with RecordingStore.open(path) as store:
        store.put_response("inv", "T", {}, TEXT, "simulated")
    with RecordingStore.open(path) as store:
        assert store.count() == 1
        assert store.schema_version == SCHEMA_VERSION


def test_newer_database_is_refused_clearly(tmp_path):
    path = tmp_path / "future.sqlite"
    RecordingStore.open(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 5}")
    with pytest.raises(SchemaVersionError, match=rf"version {SCHEMA_VERSION + 5} is newer.*upgrade finmcp"):
        RecordingStore.open(path)


def test_foreign_database_is_refused(tmp_path):
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER)")
    with pytest.raises(SchemaError, match="not a finmcp recordings database.*customers"):
        RecordingStore.open(path)


def test_downgrade_and_unknown_targets_are_refused(tmp_path):
    db = open_database(tmp_path / "d.sqlite")
    with pytest.raises(SchemaError, match="cannot downgrade"):
        migrate(db, target=1)
    with pytest.raises(SchemaError, match="unknown schema version"):
        migrate(db, target=SCHEMA_VERSION + 1)
    db.close()


def test_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(SchemaError, match="does not exist"):
        RecordingStore.open(tmp_path / "nope" / "x.sqlite")


def test_wal_mode_and_synchronous_normal(tmp_path):
    path = tmp_path / "wal.sqlite"
    with RecordingStore.open(path) as store:
        assert store.journal_mode == "wal"
        assert store.db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    with sqlite3.connect(path) as conn:  # WAL is persistent in the file
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_committed_rows_survive_a_killed_process(tmp_path):
    path = tmp_path / "kill.sqlite"
    script = textwrap.dedent(
        f"""
        import os, signal
        from finmcp.recordings import RecordingStore, SqliteTraceStore
        store = RecordingStore.open({str(path)!r})
        store.put_response("inv", "T", {{"a": 1}}, {TEXT!r}, "simulated")
        traces = SqliteTraceStore.sharing(store)
        call = traces.begin_call(tool="T", arguments={{"a": 1}}, run_id="r", sample_id="s")
        traces.finish_call(call, result={TEXT!r})
        pending = traces.begin_call(tool="T", arguments={{"a": 2}}, run_id="r", sample_id="s")
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    with RecordingStore.open(path) as store:
        assert store.get_response("inv", "T", {"a": 1})["content"] == TEXT["content"]
    with SqliteTraceStore.open(path) as traces:
        assert [c["status"] for c in traces.calls("r")] == ["ok", "pending"]


def test_non_sqlite_file_is_refused(tmp_path):
    path = tmp_path / "notes.sqlite"
    path.write_bytes(b"this is a text file, not a database" * 200)
    with pytest.raises(SchemaError, match="cannot open database.*not a database"):
        RecordingStore.open(path)
