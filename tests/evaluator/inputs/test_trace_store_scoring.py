"""Scoring from PostgreSQL: the same report as from SQLite, streamed with bounded memory, and never a
run whose rows are still being shipped."""

from __future__ import annotations

import json
import time
import tracemalloc
from pathlib import Path

import pytest

from finmcp.evaluator.cli import main
from finmcp.evaluator.inputs.in_flight import wait_until_shipped
from finmcp.evaluator.inputs.model import Call, Reference, ReferenceSet, Turn
from finmcp.evaluator.inputs.trace_db import load_predictions_db
from finmcp.evaluator.inputs.trace_rows import open_trace_rows
from finmcp.evaluator.metrics.options import EvalOptions
from finmcp.evaluator.reports.pipeline import dumps, evaluate
from finmcp.evaluator.reports.streaming import evaluate_trace
from finmcp.recordings.postgres.connection import connect
from tests.evaluator.eval_support import write_trace_db
from tests.support.pg_trace_copy import copy_trace, real_trace
from tests.support.postgres import PostgresCluster


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory, postgres_cluster: PostgresCluster) -> tuple[Path, str]:
    db, _refs = real_trace(tmp_path_factory.mktemp("trace"), samples=6)
    url = postgres_cluster.create_database()
    copy_trace(db, url)
    return db, url


def _score(tmp_path: Path, name: str, db: str, *extra: str) -> dict:
    out = tmp_path / name
    argv = ["score", "--bench", "finmcp-sim", "--db", db, "--run", "noisy", "--report-dir", str(out)]
    assert main([*argv, "--format", "json", "--bootstrap", "50", *extra]) == 0
    return json.loads((out / "report.json").read_text("utf-8"))


@pytest.mark.slow
def test_score_compare_and_export_agree_across_engines(
    stores: tuple[Path, str], tmp_path: Path, capsys
) -> None:
    db, url = stores
    lite, pg = _score(tmp_path, "lite", str(db)), _score(tmp_path, "pg", url)
    assert pg["inputs"].pop("predictions").startswith("postgresql://")
    lite["inputs"].pop("predictions")
    assert dumps(pg) == dumps(lite)
    assert pg["coverage"]["scored"] == 613 and pg["trials"]["trials"] == 2
    assert 0 < pg["official"]["overall"]["macro_F1"] < 1  # the noisy agent got some calls wrong
    # the streamed report is the whole-run report, number for number
    from finmcp.evaluator.benchmarks import open_references

    refs = open_references("finmcp-sim")
    with open_trace_rows(url, "noisy") as rows:
        streamed = evaluate_trace(refs, rows)
    assert dumps(streamed) == dumps(evaluate(refs, load_predictions_db(url, "noisy")))
    for store in (str(db), url):
        out = tmp_path / f"export-{len(store)}.json"
        argv = ["export", "--bench", "finmcp-sim", "--db", store, "--run", "noisy", "--output", str(out)]
        assert main(argv) == 0
    exports = [p.read_text("utf-8") for p in sorted(tmp_path.glob("export-*.json"))]
    assert len(exports) == 2 and exports[0] == exports[1]
    argv = ["compare", "--bench", "finmcp-sim", "--db", url, "--run", "noisy", "--run", "noisy"]
    assert main([*argv, "--bootstrap", "0"]) == 0
    capsys.readouterr()


def test_missing_runs_and_unreachable_servers_are_clear(stores: tuple[Path, str], capsys) -> None:
    _db, url = stores
    assert main(["score", "--bench", "finmcp-sim", "--db", url, "--run", "nope"]) == 2
    assert "run 'nope' not found; runs present: ['noisy']" in capsys.readouterr().err
    down = "postgresql://bob:hunter2@127.0.0.1:9/x"
    assert main(["score", "--bench", "finmcp-sim", "--db", down, "--run", "r"]) == 2
    err = capsys.readouterr().err
    assert "cannot connect to postgresql://bob:***@127.0.0.1:9/x" in err and "hunter2" not in err


def _origin(url: str, origin: str, label: str, pending: int, runs: list[str]) -> None:
    with connect(url) as conn:
        conn.execute(
            "INSERT INTO origins (origin, label, heartbeat, pending_rows, pending_runs) "
            "VALUES (%s, %s, now() - interval '5 seconds', %s, %s) ON CONFLICT (origin) DO UPDATE SET "
            "pending_rows = excluded.pending_rows, pending_runs = excluded.pending_runs",
            (origin, label, pending, json.dumps(runs)),
        )


def test_score_refuses_a_run_still_in_flight_and_waits_for_it(
    postgres_url: str, tmp_path: Path, capsys
) -> None:
    sqlite = write_trace_db(tmp_path / "t.sqlite", [{"run": "noisy", "sample": "s1", "tool": "A"}])
    with connect(postgres_url) as conn:
        conn.execute("INSERT INTO runs (run_id, created) VALUES ('noisy', '2026-01-01')")
        conn.execute(
            "INSERT INTO calls (origin, local_id, run_id, sample_id, turn, seq, tool, arguments, status) "
            "VALUES ('o', 1, 'noisy', 's1', 0, 0, 'A', '{}', 'ok')"
        )
    _origin(postgres_url, "host-a:1", "proxy-a", 17, ["other", "noisy"])
    _origin(postgres_url, "host-b:2", "proxy-b", 4, ["other"])  # not this run
    _origin(postgres_url, "host-c:3", "proxy-c", 0, ["noisy"])  # nothing pending
    argv = ["score", "--bench", "finmcp-sim", "--db", postgres_url, "--run", "noisy", "--bootstrap", "0"]
    assert main([*argv, "--wait-flush", "0"]) == 2
    err = capsys.readouterr().err
    assert (
        "rows of run 'noisy' are still in flight from proxy proxy-a (origin host-a:1): 17 pending rows" in err
    )
    assert "last heartbeat 5." in err and "finmcp-proxy flush" in err and "proxy-b" not in err
    started = time.monotonic()
    assert main([*argv, "--wait-flush", "1"]) == 2
    assert time.monotonic() - started >= 1.0 and "after waiting 1 s" in capsys.readouterr().err
    # the shipper catches up while score waits
    with open_trace_rows(postgres_url, "noisy") as rows:
        calls = iter([True])

        def sleep(_s: float) -> None:
            if next(calls, False):
                _origin(postgres_url, "host-a:1", "proxy-a", 0, [])

        wait_until_shipped(rows, 30, sleep=sleep)
    with open_trace_rows(sqlite, "noisy") as rows:
        wait_until_shipped(rows, 0)  # a SQLite file has nothing in flight


def _big_run(path: Path, samples: int, calls_per_sample: int, trials: int = 1) -> ReferenceSet:
    refs = []
    rows = []
    payload = {"content": [{"type": "text", "text": "x" * 1000}], "isError": False}
    for i in range(samples):
        sid = f"s{i:05d}"
        gold = [[Call("T", {"code": f"{i}"})], [Call("U", {"n": 1})]]
        refs.append(Reference(sid, "multi_tool", "scn", [Turn("q", gold)]))
        for trial in range(trials):
            for j in range(calls_per_sample):
                tool = ("T", "U", "V")[(j + trial) % 3]
                rows.append(
                    {
                        "run": "big",
                        "sample": sid,
                        "tool": tool,
                        "arguments": {"code": f"{i}", "k": j},
                        "group": j,
                        "result": payload,
                        "trial": trial,
                    }
                )
    write_trace_db(path, rows)
    return ReferenceSet(refs, "finmcp")


def test_scoring_streams_samples_instead_of_holding_every_call(tmp_path: Path) -> None:
    # 8,000 calls, 8 MB of outputs; the report's evidence holds the first trial's (1 of 8)
    refs = _big_run(tmp_path / "big.sqlite", samples=200, calls_per_sample=5, trials=8)
    tracemalloc.start()
    try:
        with open_trace_rows(tmp_path / "big.sqlite", "big") as rows:
            streamed = evaluate_trace(refs, rows, opts=EvalOptions(bootstrap=0))
        _, streamed_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        preds = load_predictions_db(tmp_path / "big.sqlite", "big")
        _, loaded_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert dumps(streamed) == dumps(evaluate(refs, preds, EvalOptions(bootstrap=0)))
    assert streamed.coverage.scored == 200
    # the whole streamed scoring, report included, takes a fraction of what merely loading the run takes
    assert streamed_peak * 3 < loaded_peak, (streamed_peak, loaded_peak)
