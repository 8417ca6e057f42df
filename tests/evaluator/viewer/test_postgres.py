"""The viewer over the shared PostgreSQL trace store: the same pages, filters and live increment."""

from __future__ import annotations

import json

import pytest

from finmcp.recordings.plumbing.launch import FinmcpProcess
from tests.support.net import get_json

pytestmark = pytest.mark.slow  # a PostgreSQL cluster for the session


def _call(con, local_id: int, sample: str, seq: int, tool: str, status: str = "ok") -> None:
    con.execute(
        "INSERT INTO calls (origin, local_id, run_id, sample_id, turn, seq, tool, arguments, result, status,"
        " t_req_ns, t_resp_ns, latency_ms, call_group, group_source, trial)"
        " VALUES ('p1', %s, 'pg', %s, 0, %s, %s, %s, %s, %s, %s, %s, 1.0, %s, 'overlap', 0)",
        (
            local_id,
            sample,
            seq,
            tool,
            json.dumps({"keyword": "50%_off"}),
            None if status == "pending" else json.dumps({"content": [{"type": "text", "text": "{}"}]}),
            status,
            1000 * seq,
            None if status == "pending" else 1000 * seq + 500,
            seq,
        ),
    )


def test_view_reads_postgresql(postgres_url: str) -> None:
    from finmcp.recordings.postgres.connection import connect, redacted_url

    con = connect(postgres_url)
    try:
        con.execute("INSERT INTO runs (run_id, created, meta) VALUES ('pg', '2026-12-01', NULL)")
        for i in range(7):
            _call(con, 2 * i, f"s{i}", 0, "SearchFunds")
            _call(con, 2 * i + 1, f"s{i}", 1, "Get_Nav", "tool_error" if i % 2 else "ok")
        args = ["view", "--db", postgres_url, "--host", "127.0.0.1", "--port", "0"]
        with FinmcpProcess("finmcp-eval", args, timeout=60, module="finmcp.evaluator.cli") as view:
            assert view.ready.detail == f"view {redacted_url(postgres_url)}"  # never a password
            runs = get_json(view.endpoint("/api/runs"))["runs"]
            assert [(r["run_id"], r["calls"], r["samples"]) for r in runs] == [("pg", 14, 7)]
            first = get_json(view.endpoint("/api/runs/pg/samples?limit=4"))
            assert [s["sample_id"] for s in first["samples"]] == ["s0", "s1", "s2", "s3"] and first[
                "next"
            ] == "s3"
            rest = get_json(view.endpoint("/api/runs/pg/samples?limit=4&after=s3"))
            assert [s["sample_id"] for s in rest["samples"]] == ["s4", "s5", "s6"] and rest["next"] is None
            failed = get_json(view.endpoint("/api/runs/pg/samples?failed=1&q=GET_n"))  # _ is literal
            assert [s["sample_id"] for s in failed["samples"]] == ["s1", "s3", "s5"]
            sample = get_json(view.endpoint("/api/runs/pg/samples/s2"))
            assert [c["tool"] for c in sample["calls"]] == ["SearchFunds", "Get_Nav"]
            assert sample["calls"][0]["arguments"] == {"keyword": "50%_off"}
            _call(con, 100, "s2", 2, "Late", "pending")
            inc = get_json(view.endpoint(f"/api/runs/pg/samples/s2/calls?since={sample['cursor']}"))
            assert [(c["tool"], c["status"]) for c in inc["calls"]] == [("Late", "pending")]
            late = inc["calls"][0]["id"]
            con.execute("UPDATE calls SET status = 'ok', t_resp_ns = t_req_ns + 1 WHERE id = %s", (late,))
            done = get_json(
                view.endpoint(f"/api/runs/pg/samples/s2/calls?since={inc['cursor']}&pending={late}")
            )
            assert [(c["id"], c["status"]) for c in done["calls"]] == [(late, "ok")]
    finally:
        con.close()
