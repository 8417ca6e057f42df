"""Schema step 4 (``response_steps``) and the store's sequence API."""

from __future__ import annotations

import sqlite3

import pytest

from finmcp.recordings import RecordingStore
from finmcp.recordings.errors import InvalidValueError
from finmcp.recordings.schema import MIGRATIONS, SCHEMA_VERSION, connect, migrate, user_version

OK = {"content": [{"type": "text", "text": "one"}], "isError": False}


def test_step_4_adds_response_steps_to_a_version_3_database_and_keeps_its_rows(tmp_path):
    path = tmp_path / "v3.sqlite"
    db = connect(path)
    migrate(db, target=3)
    db.execute(
        "INSERT INTO responses (inventory, tool, args_key, arguments, content, is_error, provenance, created)"
        " VALUES ('inv', 'T', 'k', '{}', '[]', 0, 'simulated', 'now')"
    )
    db.close()
    with RecordingStore.open(path) as store:
        assert store.schema_version == SCHEMA_VERSION and MIGRATIONS[3].version == 4
        assert store.count() == 1 and store.count_steps() == 0
    with sqlite3.connect(path) as conn:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(response_steps)")]
    assert columns[:6] == ["id", "inventory", "tool", "args_key", "step", "arguments"]
    assert "rpc_error" in columns
    db = connect(path)
    assert user_version(db) == SCHEMA_VERSION
    db.close()


def test_answers_are_kept_in_order_errors_included(tmp_path):
    with RecordingStore.open(tmp_path / "r.sqlite") as store:
        failed = {"content": [{"type": "text", "text": "bad"}], "isError": True}
        steps = [
            store.append_response_step("inv", "T", {"a": 1}, OK, "recorded:x", 5.0),
            store.append_response_step(
                "inv", "T", {"a": 1}, None, "recorded:x", rpc_error={"code": -32603, "message": "boom"}
            ),
            store.append_response_step("inv", "T", {"a": 1}, failed, "recorded:x"),
            store.append_response_step("inv", "T", {"a": 2}, OK, "recorded:x"),
        ]
        assert steps == [0, 1, 2, 0]
        key = store.canonical("T", {"a": 1}).key
        got = store.response_steps("inv", "T", key)
        assert [s["step"] for s in got] == [0, 1, 2]
        assert got[0]["result"]["content"][0]["text"] == "one" and got[0]["latency_ms"] == 5.0
        assert got[1]["result"] is None and got[1]["rpc_error"] == {"code": -32603, "message": "boom"}
        assert got[2]["result"]["isError"] is True
        assert store.count_steps() == 4 and store.count() == 0  # the one-per-key table is untouched
        with pytest.raises(InvalidValueError, match="exactly one"):
            store.append_response_step(
                "inv", "T", {}, OK, "recorded:x", rpc_error={"code": 1, "message": "m"}
            )
        with pytest.raises(InvalidValueError, match="integer code"):
            store.append_response_step(
                "inv", "T", {}, None, "recorded:x", rpc_error={"code": "x", "message": "m"}
            )
