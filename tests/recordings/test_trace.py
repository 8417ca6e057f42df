"""The trace API the proxy writes and the evaluator reads."""

from __future__ import annotations

import sqlite3

import pytest

from finmcp.recordings import CALLS_COLUMNS, SqliteTraceStore
from finmcp.recordings import trace as trace_module
from finmcp.recordings.errors import CallStateError, InvalidValueError, UnknownCallError

EXPECTED_CALL_COLUMNS = [
    "id",
    "run_id",
    "sample_id",
    "turn",
    "session_key",
    "client_name",
    "protocol_version",
    "jsonrpc_id",
    "seq",
    "tool",
    "arguments",
    "result",
    "rpc_error",
    "status",
    "t_req_ns",
    "t_resp_ns",
    "wall_time",
    "latency_ms",
    "call_group",
    "group_source",
    "trial",
]
OK = {"content": [{"type": "text", "text": "{}"}], "structuredContent": {}, "isError": False}


@pytest.fixture
def store(tmp_path):
    with SqliteTraceStore.open(tmp_path / "runs.sqlite") as opened:
        yield opened


def begin(store, **overrides):
    fields = {
        "tool": "SearchFunds",
        "arguments": {"keyword": "红利"},
        "run_id": "run1",
        "sample_id": "s1",
        "turn": 0,
        "session_key": "sess",
        "client_name": "agent",
        "protocol_version": "2025-06-18",
        "jsonrpc_id": 7,
        "t_req_ns": 1_000_000,
        **overrides,
    }
    return store.begin_call(**fields)


def test_calls_have_exactly_the_contract_columns(store, tmp_path):
    assert list(CALLS_COLUMNS) == EXPECTED_CALL_COLUMNS
    call_id = begin(store)
    store.finish_call(call_id, result=OK, t_resp_ns=4_500_000)
    [row] = store.calls("run1")
    assert list(row) == EXPECTED_CALL_COLUMNS
    assert row["id"] == call_id
    assert row["status"] == "ok"
    assert row["arguments"] == {"keyword": "红利"}
    assert row["result"] == OK
    assert row["rpc_error"] is None
    assert row["jsonrpc_id"] == 7
    assert row["latency_ms"] == pytest.approx(3.5)
    assert row["t_resp_ns"] == 4_500_000
    assert row["trial"] == 0
    raw = store.calls("run1", parse_json=False)[0]
    assert raw["arguments"] == '{"keyword":"红利"}'
    assert raw["jsonrpc_id"] == "7"


def test_finish_commits_before_returning(store, tmp_path):
    call_id = begin(store)
    with sqlite3.connect(tmp_path / "runs.sqlite") as other:
        assert other.execute("SELECT status FROM calls WHERE id = ?", (call_id,)).fetchone() == ("pending",)
        store.finish_call(call_id, result=OK)
        assert other.execute("SELECT status FROM calls WHERE id = ?", (call_id,)).fetchone() == ("ok",)


def test_status_is_derived_and_checked(store):
    assert store.finish_call(begin(store), result={**OK, "isError": True}) == "tool_error"
    error = {"code": -32602, "message": "Unknown tool"}
    call_id = begin(store)
    assert store.finish_call(call_id, rpc_error=error) == "rpc_error"
    assert store.calls("run1")[-1]["rpc_error"] == error
    assert store.finish_call(begin(store), status="cancelled") == "cancelled"
    assert store.finish_call(begin(store), status="transport_error", rpc_error={"message": "reset"}) == (
        "transport_error"
    )
    with pytest.raises(InvalidValueError, match="give a result, an rpc_error or a status"):
        store.finish_call(begin(store))
    with pytest.raises(InvalidValueError, match="status 'ok' needs a result"):
        store.finish_call(begin(store), status="ok")
    with pytest.raises(InvalidValueError, match="'pending' is not one of"):
        store.finish_call(begin(store), status="pending")
    with pytest.raises(InvalidValueError, match="'done' is not one of"):
        store.finish_call(begin(store), status="done")


def test_finishing_twice_or_unknown_ids_fail_clearly(store):
    call_id = begin(store)
    store.finish_call(call_id, result=OK)
    with pytest.raises(CallStateError, match=f"call {call_id} is already finished"):
        store.finish_call(call_id, status="cancelled")
    with pytest.raises(UnknownCallError, match="call 999 does not exist"):
        store.finish_call(999, result=OK)


def test_seq_defaults_to_arrival_order_within_a_run(store):
    ids = [begin(store, sample_id=f"s{i % 2}") for i in range(4)]
    begin(store, run_id="run2")
    rows = store.calls("run1")
    assert {r["id"]: r["seq"] for r in rows} == {ids[0]: 0, ids[1]: 1, ids[2]: 2, ids[3]: 3}
    assert [r["seq"] for r in store.calls("run2")] == [0]
    begin(store, seq=10)
    begin(store)
    assert [r["seq"] for r in store.calls("run1", "s1")] == [1, 3, 10, 11]


def test_calls_filter_and_order(store):
    begin(store, sample_id="b", turn=1, seq=5)
    begin(store, sample_id="b", turn=0, seq=9)
    begin(store, sample_id="a", turn=0, seq=2)
    begin(store, sample_id="b", turn=0, seq=3)
    rows = store.calls("run1")
    assert [(r["sample_id"], r["turn"], r["seq"]) for r in rows] == [
        ("a", 0, 2),
        ("b", 0, 3),
        ("b", 0, 9),
        ("b", 1, 5),
    ]
    assert [r["seq"] for r in store.calls("run1", "b", turn=0)] == [3, 9]
    assert store.calls("nope") == []


def test_set_groups_is_atomic(store):
    a, b, c = begin(store), begin(store), begin(store)
    assert store.set_groups([(a, 0, "overlap"), (b, 0, "overlap"), (c, 1, "gap")]) == 3
    assert [(r["call_group"], r["group_source"]) for r in store.calls("run1")] == [
        (0, "overlap"),
        (0, "overlap"),
        (1, "gap"),
    ]
    with pytest.raises(UnknownCallError, match="no groups were changed"):
        store.set_groups([(a, 5, "explicit"), (12345, 5, "explicit")])
    assert store.calls("run1")[0]["call_group"] == 0
    with pytest.raises(InvalidValueError, match="'guess' is not one of"):
        store.set_groups([(a, 1, "guess")])


def test_explicit_group_at_begin(store):
    begin(store, call_group=3, group_source="explicit", trial=2)
    row = store.calls("run1")[0]
    assert (row["call_group"], row["group_source"], row["trial"]) == (3, "explicit", 2)


def test_malformed_arguments_are_kept_and_secrets_redacted(store):
    begin(store, arguments=["not", "an", "object"])
    begin(store, arguments={"fundCode": "1", "apiKey": "sk-123", "nested": {"Password": "p"}})
    rows = store.calls("run1")
    assert rows[0]["arguments"] == ["not", "an", "object"]
    assert rows[1]["arguments"] == {
        "fundCode": "1",
        "apiKey": "[REDACTED]",
        "nested": {"Password": "[REDACTED]"},
    }


def test_begin_call_validates_fields(store):
    with pytest.raises(InvalidValueError, match="call turn: expected an integer"):
        begin(store, turn="1")
    with pytest.raises(InvalidValueError, match="group_source"):
        begin(store, group_source="magic")
    with pytest.raises(InvalidValueError, match="jsonrpc_id"):
        begin(store, jsonrpc_id={"x": 1})


def test_sessions_fill_in_later_fields(store):
    store.start_session(
        "sess", run_id="run1", transport="http", era="handshake", started="2026-01-01T00:00:00Z"
    )
    store.update_session("sess", client_name="agent", client_version="1.0", protocol_version="2025-06-18")
    store.update_session("sess", transport=None)
    store.end_session("sess", ended="2026-01-01T00:01:00Z")
    [row] = store.sessions()
    assert row == {
        "session_key": "sess",
        "run_id": "run1",
        "client_name": "agent",
        "client_version": "1.0",
        "protocol_version": "2025-06-18",
        "era": "handshake",
        "transport": "http",
        "upstream": None,
        "started": "2026-01-01T00:00:00Z",
        "ended": "2026-01-01T00:01:00Z",
    }
    assert store.sessions(run_id="other") == []
    with pytest.raises(InvalidValueError, match="era"):
        store.start_session("s2", era="2024")
    with pytest.raises(InvalidValueError, match=r"unknown fields \['colour'\]"):
        store.start_session("s2", colour="red")


def test_messages_are_stored_raw_with_secrets_redacted(store):
    body = '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"apiKey": "sk-1", "_meta": {"progressToken": "p1"}}}'
    first = store.log_message(
        session_key="sess",
        run_id="run1",
        direction="c2s",
        kind="request",
        body=body,
        jsonrpc_id=1,
        method="tools/call",
        headers=[(b"Authorization", b"Bearer abc.def"), (b"Accept", b"application/json")],
    )
    store.log_message(session_key="sess", direction="s2c", kind="response", body=b'{"id":1,"result":{}}')
    plain = '{"jsonrpc":"2.0","method":"notifications/initialized"}'
    store.log_message(session_key="other", direction="c2s", kind="notification", body=plain)
    rows = store.messages(session_key="sess")
    assert [r["seq"] for r in rows] == [0, 1]
    assert rows[0]["id"] == first
    assert rows[0]["body"] == body.replace('"sk-1"', '"[REDACTED]"')
    assert '"progressToken": "p1"' in rows[0]["body"]
    assert rows[0]["headers"] == [["Authorization", "[REDACTED]"], ["Accept", "application/json"]]
    assert rows[0]["jsonrpc_id"] == 1
    assert rows[1]["body"] == '{"id":1,"result":{}}'
    assert store.messages(session_key="other")[0]["body"] == plain
    assert len(store.messages(run_id="run1")) == 1
    with pytest.raises(InvalidValueError, match="message direction"):
        store.log_message(direction="up", kind="request", body="{}")
    with pytest.raises(InvalidValueError, match="message kind"):
        store.log_message(direction="c2s", kind="batch", body="[]")


def test_runs_lists_counts_and_meta(store):
    store.ensure_run("run1", meta={"agent": "baseline"})
    begin(store, sample_id="a")
    begin(store, sample_id="b")
    store.start_session("sess", run_id="run1")
    begin(store, run_id="run2")
    runs = {r["run_id"]: r for r in store.runs()}
    assert runs["run1"]["meta"] == {"agent": "baseline"}
    assert (runs["run1"]["calls"], runs["run1"]["samples"], runs["run1"]["sessions"]) == (2, 2, 1)
    assert (runs["run2"]["calls"], runs["run2"]["meta"]) == (1, None)


def test_string_and_number_ids_stay_distinct(store):
    begin(store, jsonrpc_id=1)
    begin(store, jsonrpc_id="1")
    assert [r["jsonrpc_id"] for r in store.calls("run1")] == [1, "1"]


def test_text_holding_lone_surrogates_is_stored_and_reads_back(store):
    """SQLite text must be UTF-8; a lone surrogate (JSON "\\ud800") is stored as its JSON escape."""
    lone = "a\ud800b"
    call_id = store.begin_call(
        tool=f"T{lone}",
        arguments={"k": lone, lone: [lone, "名字"]},
        run_id=f"r{lone}",
        sample_id=lone,
        session_key=lone,
        client_name=lone,
        jsonrpc_id=lone,
    )
    store.finish_call(call_id, result={"content": [{"type": "text", "text": lone}], "isError": False})
    store.log_message(
        direction="c2s", kind="request", body=lone, method=lone, run_id=f"r{lone}", jsonrpc_id=lone
    )
    store.start_session(lone, client_name=lone, run_id=f"r{lone}")
    (call,) = store.calls(f"r{lone}", lone)
    # JSON columns read back exactly as sent; plain text columns hold the escape as text
    assert call["arguments"] == {"k": lone, lone: [lone, "名字"]}
    assert call["result"]["content"][0]["text"] == lone and call["jsonrpc_id"] == lone
    assert (call["tool"], call["run_id"], call["sample_id"]) == ("Ta\\ud800b", "ra\\ud800b", "a\\ud800b")
    (message,) = store.messages(run_id=f"r{lone}")
    assert (message["body"], message["method"], message["jsonrpc_id"]) == ("a\\ud800b", "a\\ud800b", lone)
    (session,) = store.sessions(f"r{lone}")
    assert session["client_name"] == "a\\ud800b"


def test_group_refs_get_numbers_unique_in_their_scope_across_writers(tmp_path):
    """Two connections (two proxy processes) writing one scope in turn never share a group number."""
    path = tmp_path / "runs.sqlite"
    with SqliteTraceStore.open(path) as first, SqliteTraceStore.open(path) as second:

        def call(store, token, group, turn=0):
            return store.begin_call(
                tool="T", arguments={}, run_id="r", sample_id="s", turn=turn, group_ref=(token, group)
            )

        call(first, "a", 0)
        call(first, "a", 0)  # the same ref: the same group
        call(second, "b", 0)  # another writer's group 0: a new number
        call(first, "a", 1)
        call(second, "b", 0)
        call(first, "a", 0)  # a ref keeps its number, whoever wrote meanwhile
        call(second, "b", 1)
        call(first, "a", 0, turn=1)  # another scope numbers from 0
        rows = first.calls("r")
    by_seq = [(c["turn"], c["call_group"]) for c in sorted(rows, key=lambda c: c["seq"])]
    assert by_seq == [(0, 0), (0, 0), (0, 1), (0, 2), (0, 1), (0, 0), (0, 3), (1, 0)]


def test_a_store_remembers_the_most_recently_written_group_refs_only(tmp_path, monkeypatch):
    """The ref -> number memory is bounded (a sequential client opens a group per call): the least
    recently written ref is forgotten first, and a forgotten ref that comes back opens a new group."""
    monkeypatch.setattr(trace_module, "GROUP_REFS_KEPT", 2)
    with SqliteTraceStore.open(tmp_path / "runs.sqlite") as store:

        def call(group):
            return store.begin_call(tool="T", arguments={}, run_id="r", sample_id="s", group_ref=("a", group))

        call(0)
        call(1)
        call(0)  # written again: now the most recent of the two kept
        call(2)  # forgets ref 1, the least recently written
        call(0)  # still known: same number
        call(1)  # forgotten: a new number
        groups = [c["call_group"] for c in sorted(store.calls("r"), key=lambda c: c["seq"])]
    assert groups == [0, 1, 0, 2, 0, 3]


def test_explicit_group_numbers_are_stored_as_given(store):
    begin(store, call_group=7)
    begin(store, call_group=7)
    assert [c["call_group"] for c in store.calls("run1")] == [7, 7]
    with pytest.raises(InvalidValueError, match="group_ref"):
        begin(store, group_ref=("a", "zero"))
