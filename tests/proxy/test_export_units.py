"""The pieces the standard exports share: the wall clock anchor, request/response pairing, trial tags."""

from __future__ import annotations

from typing import Any

from finmcp.proxy.exports.exchanges import WallClock, pair_messages, request_trial, wall_ns
from finmcp.proxy.exports.otlp import trace_id

SECOND = 1_000_000_000


def test_wall_ns_reads_the_stored_form_exactly():
    assert wall_ns("1970-01-01T00:00:01.000002Z") == SECOND + 2_000
    assert wall_ns("2026-05-09T07:35:25.123456Z") % SECOND == 123_456_000
    assert wall_ns("not a time") is None and wall_ns(None) is None


def test_one_anchor_per_clock_keeps_monotonic_durations_exact():
    boot = wall_ns("2026-05-09T07:00:00.000000Z")
    # one machine: wall − monotonic jitters by microseconds between reads
    here = [
        (5 * SECOND + i * 1_000_003, _iso(boot + 5 * SECOND + i * 1_000_003 + jitter))
        for i, jitter in enumerate((0, 7_000, -3_000, 12_000, 1_000))
    ]
    # another machine (or a stepped wall clock): its offset is hours away
    there = [(SECOND, _iso(boot + 3_600 * SECOND)), (2 * SECOND, _iso(boot + 3_601 * SECOND))]
    clock = WallClock(here + there)
    a, b = clock.unix_ns(*here[0]), clock.unix_ns(*here[3])
    assert b - a == here[3][0] - here[0][0]  # the monotonic difference, not the wall one
    assert abs(a - wall_ns(here[0][1])) < 20_000  # anchored within the jitter
    x, y = clock.unix_ns(*there[0]), clock.unix_ns(*there[1])
    assert y - x == SECOND and abs(x - (boot + 3_600 * SECOND)) < 1_000
    assert clock.unix_ns(None, here[1][1]) == wall_ns(here[1][1])  # no monotonic time: the wall time


def _iso(unix_ns: int) -> str:
    from datetime import UTC, datetime

    moment = datetime.fromtimestamp(unix_ns // SECOND, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{unix_ns % SECOND // 1000:06d}Z"


def _msg(
    mid: int, seq: int, direction: str, kind: str, rid: Any = None, session: str = "a"
) -> dict[str, Any]:
    return {
        "id": mid,
        "seq": seq,
        "session_key": session,
        "direction": direction,
        "kind": kind,
        "jsonrpc_id": rid,
        "method": None,
        "headers": None,
    }


def test_pairing_follows_seq_per_session_and_direction():
    rows = [
        _msg(1, 1, "c2s", "request", 1),
        _msg(2, 1, "c2s", "request", 1, session="b"),  # same id, other session
        _msg(3, 2, "s2c", "request", 1),  # a server request reusing id 1 (other direction)
        _msg(4, 3, "c2s", "response", 1),  # answers the server's request
        _msg(5, 4, "s2c", "error", 1),  # answers the client's request
        _msg(6, 5, "c2s", "request", 1),  # the id reused after its answer
        _msg(7, 6, "c2s", "notification"),
        _msg(8, 7, "s2c", "response", 99),  # answers nothing logged: dropped
        _msg(9, 2, "s2c", "response", 1, session="b"),
    ]
    pairs = {e.request["id"]: (e.response or {}).get("id") for e in pair_messages(list(reversed(rows)))}
    assert pairs == {1: 5, 2: 9, 3: 4, 6: None, 7: None}


def test_trial_tags_come_from_the_path_or_the_header_only_when_named():
    assert request_trial([[":path", "/r/R/s/S/k/3/t/0/mcp"]]) == 3
    assert request_trial([[":path", "/r/R/s/S/t/0/mcp?x=1"], ["X-Finmcp-Trial", "2"]]) == 2
    assert request_trial([[":path", "/r/R/s/k/t/0/mcp"]]) is None  # a sample named "k" is not a trial
    assert request_trial([[":path", "/r/R/k/-1/mcp"]]) is None  # a bad tag: the proxy refused it
    assert request_trial(None) is None


def test_trace_ids_are_stable_and_distinct():
    assert trace_id("run", "s1", 0) == trace_id("run", "s1", 0)
    ids = {trace_id("run", s, k) for s in ("s1", "s2") for k in (0, 1)}
    assert len(ids) == 4 and all(len(i) == 32 and int(i, 16) for i in ids)
