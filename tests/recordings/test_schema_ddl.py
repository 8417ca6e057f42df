"""The schema's DDL is pinned: the same text whatever sqlite-utils version is installed."""

from __future__ import annotations

import re
import sqlite3

from finmcp.recordings import CALLS_COLUMNS, RECORDING_META_KEY, RecordingStore
from finmcp.recordings.schema import SCHEMA_VERSION

EXPECTED = """
TABLE answers: CREATE TABLE "answers" ( "id" INTEGER PRIMARY KEY, "run_id" TEXT NOT NULL, "sample_id" TEXT NOT NULL,
 "trial" INTEGER NOT NULL DEFAULT 0, "turn" INTEGER NOT NULL, "answer" TEXT, "error" TEXT, "source" TEXT NOT NULL,
 "created" TEXT NOT NULL )
INDEX answers_run_sample_trial_turn: CREATE UNIQUE INDEX "answers_run_sample_trial_turn" ON "answers" ("run_id",
 "sample_id", "trial", "turn")
TABLE calls: CREATE TABLE "calls" ( "id" INTEGER PRIMARY KEY, "run_id" TEXT, "sample_id" TEXT, "turn" INTEGER,
 "session_key" TEXT, "client_name" TEXT, "protocol_version" TEXT, "jsonrpc_id" TEXT, "seq" INTEGER, "tool" TEXT,
 "arguments" TEXT, "result" TEXT, "rpc_error" TEXT, "status" TEXT NOT NULL DEFAULT 'pending', "t_req_ns" INTEGER,
 "t_resp_ns" INTEGER, "wall_time" TEXT, "latency_ms" REAL, "call_group" INTEGER, "group_source" TEXT,
 "trial" INTEGER NOT NULL DEFAULT 0 )
INDEX calls_run_sample_turn_seq: CREATE INDEX "calls_run_sample_turn_seq" ON "calls" ("run_id", "sample_id", "turn",
 "seq")
TABLE messages: CREATE TABLE "messages" ( "id" INTEGER PRIMARY KEY, "session_key" TEXT, "run_id" TEXT,
 "sample_id" TEXT, "turn" INTEGER, "direction" TEXT NOT NULL, "seq" INTEGER, "t_ns" INTEGER, "wall_time" TEXT,
 "jsonrpc_id" TEXT, "method" TEXT, "kind" TEXT NOT NULL, "body" TEXT NOT NULL, "headers" TEXT )
INDEX messages_run_sample_turn: CREATE INDEX "messages_run_sample_turn" ON "messages" ("run_id", "sample_id", "turn")
INDEX messages_session_seq: CREATE INDEX "messages_session_seq" ON "messages" ("session_key", "seq")
TABLE model_exchanges: CREATE TABLE "model_exchanges" ( "id" INTEGER PRIMARY KEY, "run_id" TEXT, "sample_id" TEXT,
 "trial" INTEGER, "turn" INTEGER, "api" TEXT NOT NULL, "method" TEXT NOT NULL, "path" TEXT NOT NULL, "model" TEXT,
 "stream" INTEGER NOT NULL DEFAULT 0, "status" TEXT NOT NULL, "http_status" INTEGER, "request" TEXT,
 "request_headers" TEXT, "answer" TEXT, "input_tokens" INTEGER, "output_tokens" INTEGER, "cached_tokens" INTEGER,
 "usage_note" TEXT, "finish_reason" TEXT, "tool_calls" TEXT, "final_text" TEXT, "error" TEXT,
 "t_req_ns" INTEGER NOT NULL, "wall_time" TEXT NOT NULL, "ttft_ms" REAL, "duration_ms" REAL )
INDEX model_exchanges_run_sample: CREATE INDEX "model_exchanges_run_sample" ON "model_exchanges" ("run_id",
 "sample_id", "trial", "turn")
TABLE response_steps: CREATE TABLE "response_steps" ( "id" INTEGER PRIMARY KEY, "inventory" TEXT NOT NULL,
 "tool" TEXT NOT NULL, "args_key" TEXT NOT NULL, "step" INTEGER NOT NULL, "arguments" TEXT NOT NULL, "content" TEXT,
 "structured_content" TEXT, "is_error" INTEGER NOT NULL DEFAULT 0, "rpc_error" TEXT, "latency_ms" REAL,
 "provenance" TEXT NOT NULL, "created" TEXT NOT NULL , "notifications" TEXT)
INDEX response_steps_inventory_tool_args_key_step: CREATE UNIQUE INDEX "response_steps_inventory_tool_args_key_step"
 ON "response_steps" ("inventory", "tool", "args_key", "step")
TABLE responses: CREATE TABLE "responses" ( "id" INTEGER PRIMARY KEY, "inventory" TEXT NOT NULL, "tool" TEXT NOT NULL,
 "args_key" TEXT NOT NULL, "arguments" TEXT NOT NULL, "content" TEXT NOT NULL, "structured_content" TEXT,
 "is_error" INTEGER NOT NULL DEFAULT 0, "latency_ms" REAL, "provenance" TEXT NOT NULL, "created" TEXT NOT NULL )
INDEX responses_inventory_tool_args_key: CREATE UNIQUE INDEX "responses_inventory_tool_args_key" ON "responses"
 ("inventory", "tool", "args_key")
TABLE runs: CREATE TABLE "runs" ( "run_id" TEXT PRIMARY KEY, "created" TEXT NOT NULL, "meta" TEXT )
TABLE servers: CREATE TABLE "servers" ( "name" TEXT PRIMARY KEY, "protocol_version" TEXT, "server_info" TEXT,
 "capabilities" TEXT, "instructions" TEXT, "tools" TEXT, "provenance" TEXT NOT NULL, "created" TEXT NOT NULL,
 "updated" TEXT NOT NULL )
TABLE sessions: CREATE TABLE "sessions" ( "session_key" TEXT PRIMARY KEY, "run_id" TEXT, "client_name" TEXT,
 "client_version" TEXT, "protocol_version" TEXT, "era" TEXT, "transport" TEXT, "upstream" TEXT, "started" TEXT,
 "ended" TEXT )
"""


def normalised(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def schema_text(path) -> str:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name")
        return normalised(" ".join(f"{kind.upper()} {name}: {sql}" for kind, name, sql in rows))


def test_a_new_database_has_exactly_the_pinned_ddl(tmp_path):
    path = tmp_path / "new.sqlite"
    with RecordingStore.open(path) as store:
        assert store.schema_version == SCHEMA_VERSION == 7
    assert schema_text(path) == normalised(EXPECTED)
    with sqlite3.connect(path) as conn:
        assert tuple(row[1] for row in conn.execute("PRAGMA table_info(calls)")) == CALLS_COLUMNS


OLD_37 = [  # what sqlite-utils 3.37 created for steps 1-3 (bracket quotes, FLOAT)
    "CREATE TABLE [responses] ( [id] INTEGER PRIMARY KEY, [inventory] TEXT NOT NULL, [tool] TEXT NOT NULL,"
    " [args_key] TEXT NOT NULL, [arguments] TEXT NOT NULL, [content] TEXT NOT NULL, [structured_content] TEXT,"
    " [is_error] INTEGER NOT NULL DEFAULT 0, [latency_ms] FLOAT, [provenance] TEXT NOT NULL, [created] TEXT NOT NULL )",
    "CREATE UNIQUE INDEX [responses_inventory_tool_args_key] ON [responses] ([inventory], [tool], [args_key])",
    "CREATE TABLE [runs] ( [run_id] TEXT PRIMARY KEY, [created] TEXT NOT NULL, [meta] TEXT )",
    "CREATE TABLE [sessions] ( [session_key] TEXT PRIMARY KEY, [run_id] TEXT, [client_name] TEXT,"
    " [client_version] TEXT, [protocol_version] TEXT, [era] TEXT, [transport] TEXT, [upstream] TEXT, [started] TEXT,"
    " [ended] TEXT )",
    "CREATE TABLE [messages] ( [id] INTEGER PRIMARY KEY, [session_key] TEXT, [run_id] TEXT, [sample_id] TEXT,"
    " [turn] INTEGER, [direction] TEXT NOT NULL, [seq] INTEGER, [t_ns] INTEGER, [wall_time] TEXT, [jsonrpc_id] TEXT,"
    " [method] TEXT, [kind] TEXT NOT NULL, [body] TEXT NOT NULL, [headers] TEXT )",
    "CREATE INDEX [messages_session_seq] ON [messages] ([session_key], [seq])",
    "CREATE INDEX [messages_run_sample_turn] ON [messages] ([run_id], [sample_id], [turn])",
    "CREATE TABLE [calls] ( [id] INTEGER PRIMARY KEY, [run_id] TEXT, [sample_id] TEXT, [turn] INTEGER,"
    " [session_key] TEXT, [client_name] TEXT, [protocol_version] TEXT, [jsonrpc_id] TEXT, [seq] INTEGER, [tool] TEXT,"
    " [arguments] TEXT, [result] TEXT, [rpc_error] TEXT, [status] TEXT NOT NULL DEFAULT 'pending', [t_req_ns] INTEGER,"
    " [t_resp_ns] INTEGER, [wall_time] TEXT, [latency_ms] FLOAT, [call_group] INTEGER, [group_source] TEXT,"
    " [trial] INTEGER NOT NULL DEFAULT 0 )",
    "CREATE INDEX [calls_run_sample_turn_seq] ON [calls] ([run_id], [sample_id], [turn], [seq])",
]


def test_a_database_made_by_sqlite_utils_3_37_still_opens_and_works(tmp_path):
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as conn:
        for statement in OLD_37:
            conn.execute(statement)
        conn.execute("PRAGMA user_version=3")
    text = {"content": [{"type": "text", "text": "ok"}], "isError": False}
    with RecordingStore.open(path) as store:
        store.put_response("inv", "T", {"a": 1}, text, "simulated", latency_ms=12.5)
        assert store.get_response("inv", "T", {"a": 1})["_meta"][RECORDING_META_KEY]["latency_ms"] == 12.5
    assert "[latency_ms] FLOAT" in schema_text(path)  # an existing schema is never rewritten
