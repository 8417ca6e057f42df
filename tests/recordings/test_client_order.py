"""A parallel group's calls come back in their client's order, whatever order they arrived in.

A sharded run under load scored consist 0.1875 against the unsharded run's 0.25: the proxy read a
step's second request (id 10) before its first (id 9), so ``seq`` put them the other way round.
"""

from __future__ import annotations

from pathlib import Path

from finmcp.recordings.client_order import in_client_order
from finmcp.recordings.trace_store import SqliteTraceStore


def _write(path: Path, calls: list[tuple[str, int, int | str, str]]) -> None:
    """Calls of sample ``s`` turn 0 as (tool, group, JSON-RPC id, session), in arrival order."""
    with SqliteTraceStore.open(path) as store:
        store.ensure_run("r")
        for tool, group, rid, session in calls:
            store.begin_call(
                tool=tool,
                arguments={},
                run_id="r",
                sample_id="s",
                turn=0,
                session_key=session,
                jsonrpc_id=rid,
                call_group=group,
                group_source="explicit",
            )


def _tools(path: Path) -> list[str]:
    with SqliteTraceStore.open(path) as store:
        return [row.tool or "" for row in store.prediction_rows("r")]


def test_a_group_read_out_of_order_comes_back_in_the_clients_order(tmp_path: Path) -> None:
    db = tmp_path / "t.sqlite"
    _write(db, [("News", 0, 2, "k"), ("Funds", 0, 10, "k"), ("Analysis", 0, 9, "k"), ("Limit", 1, 19, "k")])
    assert _tools(db) == ["News", "Analysis", "Funds", "Limit"]


def test_string_ids_or_two_sessions_keep_the_arrival_order(tmp_path: Path) -> None:
    strings = tmp_path / "strings.sqlite"
    _write(strings, [("A", 0, "b", "k"), ("B", 0, "a", "k")])
    assert _tools(strings) == ["A", "B"]
    sessions = tmp_path / "sessions.sqlite"
    _write(sessions, [("A", 0, 5, "k1"), ("B", 0, 1, "k2")])
    assert _tools(sessions) == ["A", "B"]


def test_groups_are_never_merged_or_moved() -> None:
    rows = [
        ("s", 0, 0, None, 1, "x", None, None, None, "ok", "k", "3"),
        ("s", 0, 0, None, 2, "y", None, None, None, "ok", "k", "1"),  # no group: left as it came
        ("s", 0, 0, 0, 3, "b", None, None, None, "ok", "k", "8"),
        ("s", 0, 0, 0, 4, "a", None, None, None, "ok", "k", "7"),
        ("s", 0, 0, 1, 5, "c", None, None, None, "ok", "k", "6"),
    ]
    assert [row[5] for row in in_client_order(rows)] == ["x", "y", "a", "b", "c"]
    assert all(len(row) == 10 for row in in_client_order(rows))
