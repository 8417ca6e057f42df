"""Migration 5 and the store's declarations: what a recorded upstream declared, and per-call notifications."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from finmcp.recordings import RecordingStore
from finmcp.recordings.errors import InvalidValueError
from finmcp.recordings.schema import MIGRATIONS, SCHEMA_VERSION, connect, migrate, user_version

TOOLS: list[dict[str, Any]] = [
    {
        "name": "get_current_time",
        "description": "Get the time",
        "inputSchema": {
            "type": "object",
            "properties": {"timezone": {"type": "string"}},
            "required": ["timezone"],
        },
        "outputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": True},
        "_meta": {"vendor/x": 1},
    }
]
DECLARED: dict[str, Any] = {
    "protocolVersion": "2025-11-25",
    "serverInfo": {"name": "mcp-time", "version": "1.2.3"},
    "capabilities": {"tools": {"listChanged": False}, "logging": {}},
    "instructions": "Ask for the time.",
    "tools": TOOLS,
}


def test_step_5_adds_servers_and_step_notifications_to_a_version_4_database_and_keeps_its_rows(tmp_path):
    path = tmp_path / "v4.sqlite"
    db = connect(path)
    migrate(db, target=4)
    db.execute(
        "INSERT INTO response_steps (inventory, tool, args_key, step, arguments, content, is_error, provenance,"
        " created) VALUES ('inv', 'T', 'k', 0, '{}', '[]', 0, 'simulated', 'now')"
    )
    db.close()
    with RecordingStore.open(path) as store:
        assert store.schema_version == SCHEMA_VERSION and MIGRATIONS[4].version == 5
        assert store.declared_servers() == []
        [step] = store.response_steps("inv", "T", "k")
        assert step["notifications"] == []  # recorded before schema 5: none known
    with sqlite3.connect(path) as conn:
        servers = [row[1] for row in conn.execute("PRAGMA table_info(servers)")]
        steps = [row[1] for row in conn.execute("PRAGMA table_info(response_steps)")]
    assert servers == [
        "name", "protocol_version", "server_info", "capabilities", "instructions", "tools", "provenance",
        "created", "updated",
    ]  # fmt: skip
    assert steps[-1] == "notifications"
    db = connect(path)
    assert user_version(db) == SCHEMA_VERSION
    db.close()


def test_a_declaration_round_trips_verbatim_and_later_puts_merge_by_key(tmp_path):
    with RecordingStore.open(tmp_path / "r.sqlite") as store:
        assert store.declaration("mcp-time") is None
        store.put_declaration("mcp-time", DECLARED, "recorded:cmd:mcp-server-time")
        assert store.declaration("mcp-time") == DECLARED  # outputSchema, annotations, _meta kept
        store.put_declaration("mcp-time", {"tools": TOOLS[:0]}, "recorded:cmd:mcp-server-time")
        assert store.declaration("mcp-time") == {**DECLARED, "tools": []}  # the rest is kept
        store.put_declaration("other", {"serverInfo": {"name": "other", "version": "0"}})
        assert store.declared_servers() == ["mcp-time", "other"]
        record = store.declaration_record("mcp-time")
        assert record is not None and record["provenance"] == "recorded:cmd:mcp-server-time"


@pytest.mark.parametrize(
    ("declaration", "message"),
    [
        ({"tools": [{"description": "no name"}]}, "string name"),
        ({"serverInfo": "x"}, "serverInfo must be a dict"),
        ({"prompts": []}, "unknown declaration keys prompts"),
        ([], "a declaration is a JSON object"),
    ],
)
def test_a_bad_declaration_is_refused_with_what_is_wrong(tmp_path, declaration, message):
    with RecordingStore.open(tmp_path / "r.sqlite") as store:
        with pytest.raises(InvalidValueError, match=message):
            store.put_declaration("s", declaration)
        assert store.declared_servers() == []


def test_a_steps_notifications_are_kept_in_order(tmp_path):
    notes = [
        {"method": "notifications/progress", "params": {"progressToken": 1, "progress": 1, "total": 2}},
        {"method": "notifications/message", "params": {"level": "info", "data": "half"}},
        {"method": "notifications/progress", "params": {"progressToken": 1, "progress": 2, "total": 2}},
    ]
    result = {"content": [{"type": "text", "text": "done"}]}
    with RecordingStore.open(tmp_path / "r.sqlite") as store:
        store.append_response_step("s", "T", {}, result, "recorded:x", notifications=notes)
        store.append_response_step("s", "T", {}, result, "recorded:x")
        key = store.canonical("T", {}).key
        first, second = store.response_steps("s", "T", key)
        assert first["notifications"] == notes and second["notifications"] == []
        with pytest.raises(InvalidValueError, match="string method"):
            store.append_response_step("s", "T", {}, result, "recorded:x", notifications=[{"params": {}}])


def test_a_recorded_server_travels_whole_through_the_jsonl_export(tmp_path):
    from finmcp.recordings.jsonl import export_jsonl_text, import_jsonl

    schema = TOOLS[0]["inputSchema"]
    progress = [{"method": "notifications/progress", "params": {"progressToken": 7, "progress": 1}}]
    with RecordingStore.open(tmp_path / "a.sqlite") as store:
        store.put_declaration("mcp-time", DECLARED, "recorded:cmd:mcp-server-time")
        ok = {"content": [{"type": "text", "text": "noon"}]}
        store.append_response_step(
            "mcp-time",
            "get_current_time",
            {"timezone": "UTC"},
            ok,
            "recorded:x",
            3.0,
            schema,
            notifications=progress,
        )
        error = {"code": -32602, "message": "Unknown tool: nope"}
        store.append_response_step("mcp-time", "nope", {}, None, "recorded:x", rpc_error=error)
        store.put_response(
            "mcp-time", "get_current_time", {"timezone": "UTC"}, ok, "recorded:x", input_schema=schema
        )
        text = export_jsonl_text(store)
    assert [line.count('"kind"') for line in text.splitlines()] == [0, 1, 1, 1]
    (tmp_path / "a.jsonl").write_text(text, "utf-8")
    with RecordingStore.open(tmp_path / "b.sqlite") as store:
        counts = import_jsonl(store, tmp_path / "a.jsonl")
        assert counts["inserted"] == 4
        assert store.declaration("mcp-time") == DECLARED
        key = store.canonical("get_current_time", {"timezone": "UTC"}, schema).key
        [step] = store.response_steps("mcp-time", "get_current_time", key)
        assert step["notifications"] == progress and step["latency_ms"] == 3.0
        assert import_jsonl(store, tmp_path / "a.jsonl")["identical"] == 4  # importing again changes nothing
        assert export_jsonl_text(store) == text  # export -> import -> export: the same bytes
