"""The SQLite outbox (what changed since the last shipment) and its idempotent ingest into PostgreSQL."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

from finmcp.recordings import SqliteTraceStore
from finmcp.recordings.outbox import (
    ShipperLockBusy,
    acknowledge,
    install_outbox,
    is_outbox,
    origin_of,
    read_batch,
    shipper_lock,
    status_line,
)
from finmcp.recordings.postgres.connection import connect
from finmcp.recordings.postgres.ingest import Ingest


def _call(store: SqliteTraceStore, run: str = "r1", sample: str = "s1", jsonrpc_id: str = "1") -> int:
    return store.begin_call(
        run_id=run,
        sample_id=sample,
        turn=0,
        session_key="k1",
        tool="GetFundDiagnosis",
        arguments={"fundNameOrCode": "000001"},
        jsonrpc_id=jsonrpc_id,
        t_req_ns=1_000,
        wall_time="2026-01-01T00:00:00Z",
    )


def _finish(store: SqliteTraceStore, call_id: int) -> None:
    store.finish_call(call_id, result={"content": [], "isError": False}, t_resp_ns=3_000_000)


def _log(store: SqliteTraceStore, body: str = '{"jsonrpc":"2.0","id":1,"method":"tools/call"}') -> int:
    return store.log_message(session_key="k1", run_id="r1", direction="c2s", kind="request", body=body)


@pytest.fixture
def store(tmp_path):
    with SqliteTraceStore.open(tmp_path / "local.sqlite") as opened:
        yield opened


def test_a_file_that_never_shipped_has_no_outbox(store):
    store.start_session("k1", run_id="r1")
    _call(store)
    assert not is_outbox(store.db.conn)
    assert origin_of(store.db.conn) is None
    assert status_line(store.db.conn, 0.0) is None


def test_outbox_captures_inserts_and_updates_of_every_trace_table(store):
    origin = install_outbox(store.db.conn)
    assert install_outbox(store.db.conn) == origin  # idempotent: one identity per file
    store.start_session("k1", run_id="r1", transport="http")
    call_id = _call(store)
    message_id = _log(store)
    batch = read_batch(store.db.conn, 100)
    assert batch is not None
    assert batch.entries == 4  # the run (touched by the session), the session, the call, the message
    assert [r[0] for r in batch.rows["runs"]] == ["r1"]
    assert [r[0] for r in batch.rows["sessions"]] == ["k1"]
    assert [(r[0], r[13]) for r in batch.rows["calls"]] == [(call_id, "pending")]  # id, status
    assert [r[0] for r in batch.rows["messages"]] == [message_id]
    assert batch.after.rows == 0
    acknowledge(store.db.conn, batch.last_seq)
    assert read_batch(store.db.conn, 100) is None

    _finish(store, call_id)  # the answer arrives: the call is UPDATEd
    store.end_session("k1")
    batch = read_batch(store.db.conn, 100)
    assert batch is not None
    assert [(r[0], r[13]) for r in batch.rows["calls"]] == [(call_id, "ok")]  # its current state
    assert batch.rows["sessions"][0][-1] is not None  # ended is set
    assert "messages" not in batch.rows and "runs" not in batch.rows


def test_a_row_changed_twice_ships_once_in_its_latest_state_and_backlog_is_counted(store):
    install_outbox(store.db.conn)
    first = _call(store, run="a")
    _finish(store, first)
    _call(store, run="b", jsonrpc_id="2")
    batch = read_batch(store.db.conn, 3)  # run a, then the first call's insert and update entries
    assert batch is not None
    assert [(r[0], r[13]) for r in batch.rows["calls"]] == [(first, "ok")]
    assert batch.row_count() == 2
    assert batch.after.rows == 2 and batch.after.runs == ["b"]  # the run row b and the call of b


def test_turning_shipping_on_queues_the_rows_already_written(store):
    store.start_session("k1", run_id="r1")
    _finish(store, _call(store))
    _log(store)
    install_outbox(store.db.conn)
    batch = read_batch(store.db.conn, 100)
    assert batch is not None
    assert {table: len(rows) for table, rows in batch.rows.items()} == {
        "runs": 1,
        "sessions": 1,
        "calls": 1,
        "messages": 1,
    }
    line = status_line(store.db.conn, batch.queued[-1] + 2.0)
    assert line is not None and line.startswith("outbox: 4 rows waiting") and "runs r1" in line


def test_the_origin_survives_reopening_the_file(tmp_path):
    path = tmp_path / "local.sqlite"
    with SqliteTraceStore.open(path) as store:
        origin = install_outbox(store.db.conn)
    with SqliteTraceStore.open(path) as store:
        assert origin_of(store.db.conn) == origin
        assert install_outbox(store.db.conn) == origin


def test_one_shipper_per_outbox(tmp_path):
    path = tmp_path / "local.sqlite"
    with shipper_lock(path), pytest.raises(ShipperLockBusy), shipper_lock(path):
        pass
    with shipper_lock(path):  # released
        pass


# ------------------------------------------------------------------------- into PostgreSQL


def _pg_rows(url: str, sql: str) -> list[tuple[Any, ...]]:
    conn = connect(url)
    try:
        return list(conn.execute(sql).fetchall())
    finally:
        conn.close()


def test_the_same_batch_shipped_twice_is_stored_once(store, postgres_url):
    origin = install_outbox(store.db.conn)
    store.start_session("k1", run_id="r1")
    call_id = _call(store)
    _log(store)
    batch = read_batch(store.db.conn, 100)
    assert batch is not None
    conn = connect(postgres_url)
    try:
        ingest = Ingest(conn, origin, "test pid 1")
        assert ingest.ship(batch) == 4
        assert ingest.ship(batch) == 4  # a crash before the local acknowledgement ships it again
        acknowledge(store.db.conn, batch.last_seq)
        _finish(store, call_id)
        store.end_session("k1")
        later = read_batch(store.db.conn, 100)
        assert later is not None
        ingest.ship(later)
        ingest.ship(batch)  # an old copy arriving late never turns the final row back to pending
    finally:
        conn.close()
    counts = _pg_rows(
        postgres_url,
        "SELECT (SELECT count(*) FROM calls), (SELECT count(*) FROM messages),"
        " (SELECT count(*) FROM sessions), (SELECT count(*) FROM runs)",
    )
    assert counts == [(1, 1, 1, 1)]
    assert _pg_rows(postgres_url, "SELECT origin, local_id, status FROM calls") == [(origin, call_id, "ok")]
    ended = _pg_rows(postgres_url, "SELECT ended FROM sessions")[0][0]
    assert ended is not None  # the session's end stays once shipped
    assert _pg_rows(postgres_url, "SELECT label, pending_rows, pending_runs FROM origins") == [
        ("test pid 1", 0, "[]")
    ]


def test_calls_columns_arrive_byte_for_byte(store, postgres_url):
    origin = install_outbox(store.db.conn)
    call_id = _call(store)
    _finish(store, call_id)
    _log(store, body='{"raw": "nul \x00 inside"}')  # PostgreSQL text holds no NUL: replaced, not refused
    batch = read_batch(store.db.conn, 100)
    assert batch is not None
    conn = connect(postgres_url)
    try:
        Ingest(conn, origin, "t").ship(batch)
    finally:
        conn.close()
    local = store.db.conn.execute("SELECT * FROM calls").fetchall()
    stored = _pg_rows(postgres_url, "SELECT * FROM calls")
    assert [row[3:] for row in stored] == [row[1:] for row in local]  # all but id, origin, local_id
    body = _pg_rows(postgres_url, "SELECT body FROM messages")[0][0]
    assert json.loads(body) == {"raw": "nul \ufffd inside"}


def test_an_outbox_connection_is_independent_of_the_store(store):
    install_outbox(store.db.conn)
    other = sqlite3.connect(store.path, isolation_level=None)
    try:
        _call(store)
        batch = read_batch(other, 10)
        assert batch is not None and batch.row_count() == 2
    finally:
        other.close()
