"""Every method of the trace store gives the same answer on SQLite and on PostgreSQL.

One trace is written through :class:`recordings.trace_store.SqliteTraceStore` (two runs, trials,
groups, pending and failed calls, untagged calls, text that sorts differently by bytes than by a
locale), then copied into PostgreSQL as a shipper leaves it (``tests/support/pg_trace_copy.py``). A
single proxy's rows, copied in order, keep their ids, so the rows compare whole. The last test checks
that this suite calls every public method of :class:`recordings.trace_store.TraceStore`.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from finmcp.recordings.errors import RecordingsError
from finmcp.recordings.trace_pages import PAGE_COLUMNS, SampleFilter
from finmcp.recordings.trace_store import SqliteTraceStore, TraceStore, open_trace_store
from tests.support.pg_trace_copy import copy_trace
from tests.support.postgres import PostgresCluster

OK = {"content": [{"type": "text", "text": "ok"}]}
FAILED = {"content": [{"type": "text", "text": "bad fund code: é€ü"}], "isError": True}
SAMPLES = ["b", "B", "a", "é", "a_1", "a%"]  # byte order: B a a% a_1 b é

COVERED: set[str] = set()
"""The store methods this suite has called (checked by the last test)."""


def write_trace(path: Path) -> None:
    """Two runs of calls over :data:`SAMPLES`, two trials, explicit groups, every status; sessions and
    messages with headers; calls without a sample tag and one without a run."""
    with SqliteTraceStore.open(path) as store:
        store.ensure_run("r1", {"agent": "oracle", "seed": 1})
        store.ensure_run("r2")
        for n, key in enumerate(("s-b", "s-a")):
            store.start_session(
                key, run_id="r1", client_name="c", era="handshake", started=f"2026-01-0{n + 1}"
            )
        store.start_session("s-none", transport="stdio", started="2026-01-01")
        seq = 0
        for trial in (0, 1):
            for sample in SAMPLES:
                for turn in (0, 1):
                    for group in (0, 1):
                        seq += 1
                        call = store.begin_call(
                            tool=f"T{group}",
                            arguments={"q": sample, "n": seq},
                            run_id="r1",
                            sample_id=sample,
                            turn=turn,
                            trial=trial,
                            session_key="s-b" if seq % 2 else "s-a",
                            jsonrpc_id=seq,
                            call_group=1 - group,  # groups not in seq order
                            group_source="explicit",
                            wall_time=f"2026-01-01T00:00:{seq % 60:02d}Z",
                        )
                        store.log_message(
                            direction="c2s",
                            kind="request",
                            method="tools/call",
                            body=f'{{"jsonrpc":"2.0","id":{seq},"method":"tools/call"}}',
                            session_key="s-b" if seq % 2 else "s-a",
                            run_id="r1",
                            jsonrpc_id=seq,
                            headers=[("content-type", "application/json"), ("authorization", "Bearer x")],
                        )
                        if seq % 7 == 0:
                            continue  # pending
                        result = FAILED if seq % 5 == 0 else OK
                        store.finish_call(call, result=result, t_resp_ns=seq * 1000)
        store.log_message(  # a row the proxy wrote itself (a --tool-baseline drift note)
            direction="s2c",
            kind="note",
            method="finmcp/tool_drift",
            body='{"finmcp_tool_drift": {"findings": [{"tool": "T0", "change": "changed"}]}}',
            session_key="s-a",
            run_id="r1",
        )
        store.begin_call(tool="T0", arguments={}, run_id="r1", turn=0)  # no sample tag
        store.begin_call(tool="T0", arguments={}, sample_id="x")  # no run
        rpc = store.begin_call(tool="T1", arguments={"x": 1}, run_id="r2", sample_id="a")
        store.finish_call(rpc, rpc_error={"code": -32602, "message": "Invalid params"})


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory, postgres_cluster: PostgresCluster) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("parity")
    db = folder / "trace.sqlite"
    write_trace(db)
    url = postgres_cluster.create_database()
    copy_trace(db, url)
    return db, url


@pytest.fixture
def both(engines: tuple[Path, str]) -> Iterator[tuple[TraceStore, TraceStore, TraceStore]]:
    """The SQLite file read-write and read-only, and the PostgreSQL copy."""
    db, url = engines
    with open_trace_store(db) as lite, open_trace_store(db, readonly=True) as ro, open_trace_store(url) as pg:
        assert (lite.engine, ro.engine, pg.engine) == ("sqlite", "sqlite", "postgresql")
        yield lite, ro, pg


def same(stores: tuple[TraceStore, ...], method: str, *args: object, **kwargs: object) -> Any:
    """Call ``method`` on every store; assert one answer (lists of rows compared whole); return it."""
    COVERED.add(method)
    answers = []
    for store in stores:
        answer = getattr(store, method)(*args, **kwargs)
        answers.append(list(answer) if isinstance(answer, Iterator) else answer)
    for answer in answers[1:]:
        assert answer == answers[0], method
    return answers[0]


def test_the_tables(both: tuple[TraceStore, ...]) -> None:
    runs = same(both, "runs")
    assert [(r["run_id"], r["calls"], r["samples"], r["sessions"]) for r in runs] == [
        ("r1", 49, 6, 2),
        ("r2", 1, 1, 0),
    ]
    assert [s["session_key"] for s in same(both, "sessions")] == ["s-b", "s-none", "s-a"]
    assert len(same(both, "sessions", "r1")) == 2
    assert same(both, "session", "s-none")["transport"] == "stdio"
    assert same(both, "session", "absent") is None
    messages = same(both, "messages")
    assert len(messages) == 49 and messages[0]["headers"][1] != ["authorization", "Bearer x"]
    assert len(same(both, "messages", "s-a")) == 25
    assert [m["method"] for m in messages if m["kind"] == "note"] == ["finmcp/tool_drift"]
    assert same(both, "messages", run_id="r2") == []
    assert same(both, "tools_call_request", "s-b", "1")["jsonrpc_id"] == 1
    assert same(both, "tools_call_request", "s-b", "2") is None
    calls = same(both, "calls", "r1")
    assert [c["sample_id"] for c in calls][:2] == [None, "B"]
    assert len(same(both, "calls", "r1", "é")) == 8
    raw = same(both, "calls", "r1", turn=1, parse_json=False)
    assert raw and isinstance(raw[0]["arguments"], str)
    assert same(both, "calls", "absent") == []
    cut = same(both, "calls", "r1", result_chars=40)  # read cut: SQL substr/length, characters on both
    whole = {c["id"]: c for c in calls}
    texts = {c["id"]: c["result"] for c in same(both, "calls", "r1", parse_json=False)}
    for call in cut:
        text = texts[call["id"]]
        assert call["result_length"] == (None if text is None else len(text))
        if text is not None and len(text) > 40:
            assert call["result"] == text[:40] and call["arguments"] == whole[call["id"]]["arguments"]
        else:
            assert call["result"] == whole[call["id"]]["result"]
    assert any(c["result_length"] and c["result_length"] > 40 for c in cut)
    assert any(
        "é€ü" in text
        for c in same(both, "calls", "r1", result_chars=60)
        if isinstance(text := c["result"], str)
    )
    after = same(both, "calls_after", 40, 5)
    assert [c.call["id"] for c in after] == [41, 42, 43, 44, 45]
    assert after[0].jsonrpc_id_text == "41"


def test_runs_and_counts(both: tuple[TraceStore, ...]) -> None:
    assert same(both, "run_ids") == ["r1", "r2"]
    assert same(both, "run_meta", "r1") == {"agent": "oracle", "seed": 1}
    assert same(both, "run_meta", "r2") is None and same(both, "run_meta", "absent") is None
    assert same(both, "run_ids", 1) == ["r1"]
    assert same(both, "has_calls", "r2") is True and same(both, "has_calls", "absent") is False
    assert same(both, "count_calls", "r1") == 49
    per_sample = same(both, "calls_per_sample", "r1")
    assert per_sample == {None: 1, **{s: 8 for s in SAMPLES}}
    tool_ms = same(both, "tool_ms_per_sample", "r1")
    assert set(tool_ms) == set(SAMPLES) and all(isinstance(ms, float) for ms in tool_ms.values())
    statuses = same(both, "call_statuses", "r1", ["a", "b"])
    assert sum(statuses.values()) == 16 and "ok" in statuses
    assert same(both, "call_statuses", "r1", []) == {}
    assert same(both, "in_flight", "r1") == []
    assert same(both, "outbox_status", 0.0) is None


def test_the_evaluators_stream(both: tuple[TraceStore, ...]) -> None:
    assert "call_group" in same(both, "calls_columns")
    rows = same(both, "prediction_rows", "r1")
    assert len(rows) == 49 and rows[0].sample_id is None and rows[1].sample_id == "B"
    first_turn = [r.call_group for r in rows[1:5]]
    assert first_turn == [0, 1, 0, 1]  # group before seq
    quiet = same(both, "prediction_rows", "r1", outputs=False, sample_ids=["a", "é"])
    assert len(quiet) == 16 and all(r.result is None and r.rpc_error is None for r in quiet)
    assert same(both, "prediction_rows", "r1", sample_ids=[]) == []


def test_the_viewers_pages(both: tuple[TraceStore, ...]) -> None:
    summaries = same(both, "run_summaries")
    assert [r.run_id for r in summaries] == ["r2", "r1"] and summaries[1].meta == {
        "agent": "oracle",
        "seed": 1,
    }
    assert same(both, "run_exists", "r2") and not same(both, "run_exists", "absent")
    assert same(both, "change_cursor") == 51
    page, after = same(both, "sample_page", "r1", None, 2, SampleFilter())
    assert [s.sample_id for s in page] == ["B", "a"] and after == "a"
    assert page[0].tools == {"T0": 4, "T1": 4} and page[0].trials == 2 and page[0].turns == 2
    rest, end = same(both, "sample_page", "r1", "a", 10, SampleFilter())
    assert [s.sample_id for s in rest] == ["a%", "a_1", "b", "é"] and end is None
    searched, _ = same(both, "sample_page", "r1", None, 10, SampleFilter(search="A_"))
    assert [s.sample_id for s in searched] == ["a_1"]  # "_" is a letter, not LIKE's wildcard
    failed, _ = same(both, "sample_page", "r1", None, 10, SampleFilter(failed=True, tool="T1", status="ok"))
    assert failed and all(s.failed for s in failed)
    only, _ = same(both, "sample_page", "r1", None, 10, SampleFilter(), only=["b", "é"])
    assert [s.sample_id for s in only] == ["b", "é"]
    assert same(both, "sample_page", "r1", None, 10, SampleFilter(), only=[]) == ([], None)
    calls = same(both, "sample_calls", "r1", "a")
    assert len(calls) == 8
    pending = [row[0] for row in calls if row[PAGE_COLUMNS.index("status")] == "pending"]
    new = same(both, "new_calls", "r1", "a", calls[-2][0], pending)
    assert {row[0] for row in new} == {calls[-1][0], *pending}
    result = PAGE_COLUMNS.index("result")
    cut = same(both, "sample_calls", "r1", "a", 12)  # the result cut to 12 characters, its length last
    assert [r[:result] + r[result + 1 : -1] for r in cut] == [r[:result] + r[result + 1 :] for r in calls]
    assert [(r[result], r[-1]) for r in cut] == [
        (None, None) if r[result] is None else (r[result][:12], len(r[result])) for r in calls
    ]
    cut_new = same(both, "new_calls", "r1", "a", calls[-2][0], pending, 12)
    assert {len(r) for r in cut_new} == {len(PAGE_COLUMNS) + 1} and {r[0] for r in cut_new} == {
        r[0] for r in new
    }


def test_set_aside_moves_the_same_calls(engines: tuple[Path, str], tmp_path: Path, postgres_url: str) -> None:
    db = tmp_path / "copy.sqlite"
    db.write_bytes(engines[0].read_bytes())
    copy_trace(db, postgres_url)
    with open_trace_store(db) as lite, open_trace_store(postgres_url) as pg:
        keep = {("a", 0), ("b", 1)}
        moved = same((lite, pg), "set_aside", "r1", "r1~partial", keep, {"a", "b", "é"})
        assert moved == 4 + 4 + 8  # a/1, b/0 and both trials of é
        assert same((lite, pg), "calls_per_sample", "r1~partial") == {"a": 4, "b": 4, "é": 8}
        assert (
            same((lite, pg), "set_aside", "r1", "r1~partial", keep, None) == 3 * 8 + 1
        )  # B, a%, a_1, untagged
        assert same((lite, pg), "calls_per_sample", "r1") == {"a": 4, "b": 4}


def test_opening_refuses_what_is_not_a_trace_store(tmp_path: Path, postgres_url: str) -> None:
    with pytest.raises(RecordingsError, match="trace store not found"):
        open_trace_store(tmp_path / "missing.sqlite")
    with pytest.raises(RecordingsError, match="trace store not found"):
        open_trace_store(tmp_path / "missing.sqlite", readonly=True)
    with pytest.raises(RecordingsError, match="not a finmcp trace store yet"):
        open_trace_store(postgres_url)


def test_every_public_method_is_compared() -> None:
    public = {
        name
        for name, member in inspect.getmembers(TraceStore, inspect.isfunction)
        if not name.startswith("_") and name != "close"
    }
    assert public - COVERED == set(), "add the method to the parity suite"
