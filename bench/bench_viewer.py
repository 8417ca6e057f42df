"""Benchmark of ``finmcp-eval view`` on a large store: a run of 100,000 calls opens in under a second.

Builds a trace store with one run of 100,000 calls (20,000 samples of 5 calls: a parallel group of 3,
then 2 sequential calls; ~300-byte outputs). The first 613 samples carry the ids of ``finmcp-sim``
(their reference calls), so the page scores and diffs them; the rest have ids without a reference.
Starts the real viewer (``--bench finmcp-sim``) on loopback and times over HTTP:

- ``view.runs``: the runs list;
- ``view.samples.first`` / ``view.samples.deep``: the first page (50 samples, scored) and a page
  10,000 samples in (keyset ``after=``), then filtered pages (``status=``, ``q=``);
- ``view.sample``: one sample with its calls, reference, diff and metric values;
- ``view.calls.since``: the live poll with nothing new;
- ``view.open``: first samples page + one sample, the time a person waits for a run to open;
- ``view.score_filter.cold`` / ``.warm``: ``min_f1=`` (scores the whole run once, then cached).

Baseline (same run, same machine): what a viewer without pagination would do to open the run -
read every call of the run through ``SqliteTraceStore.calls(run)``. The ratio is baseline / endpoint.

Run directly (``python -m bench.bench_viewer``) or through ``python -m bench``.
"""

from __future__ import annotations

import json
import random
import sqlite3
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from finmcp.evaluator.benchmarks import load_records
from finmcp.recordings import SqliteTraceStore
from finmcp.recordings.plumbing.launch import FinmcpProcess

SEED = 20261201
CALLS = 100_000
PER_SAMPLE = 5
RUN = "big"
REPEATS = 15


def _sim_calls(record: dict[str, Any]) -> list[tuple[int, int, str, dict[str, Any]]]:
    """(turn, group, tool, arguments) of a finmcp-sim reference record, in order."""
    out = []
    for t, turn in enumerate(record["turns"]):
        for g, group in enumerate(turn["calls"]):
            for call in group:
                out.append((t, g, call["tool"], call.get("arguments", {})))
    return out


def build_store(path: Path) -> tuple[list[str], list[str]]:
    """The store; returns (sample ids with a reference, all sample ids)."""
    SqliteTraceStore.open(path).close()
    rng = random.Random(SEED)
    records = load_records("finmcp-sim")
    rows: list[tuple[Any, ...]] = []
    samples: list[str] = []
    t_ns = 10**12
    tools = [f"Tool{i:02d}" for i in range(40)]
    statuses = ["ok"] * 48 + ["tool_error", "rpc_error"]
    for record in records:
        samples.append(record["id"])
        for turn, group, tool, arguments in _sim_calls(record)[: PER_SAMPLE * 2]:
            rows.append((record["id"], turn, group, tool, arguments, rng.choice(statuses), t_ns))
            t_ns += rng.randrange(1, 5) * 10**6
    n = 0
    while len(rows) < CALLS:
        sid = f"syn-{n:06d}"
        n += 1
        samples.append(sid)
        for k in range(PER_SAMPLE):
            group = 0 if k < 3 else k - 2
            rows.append(
                (
                    sid,
                    0,
                    group,
                    rng.choice(tools),
                    {"code": f"{rng.randrange(10**6):06d}"},
                    rng.choice(statuses),
                    t_ns,
                )
            )
            t_ns += rng.randrange(1, 5) * 10**6
    rows = rows[:CALLS]
    payload = json.dumps({"items": [{"code": f"{i:06d}", "nav": 1.0 + i / 1000} for i in range(8)]})
    con = sqlite3.connect(path)
    con.execute("INSERT INTO runs (run_id, created, meta) VALUES (?, '2026-12-01T00:00:00Z', '{}')", (RUN,))
    con.executemany(
        "INSERT INTO calls (run_id, sample_id, turn, seq, tool, arguments, result, status, t_req_ns, t_resp_ns,"
        " wall_time, latency_ms, call_group, group_source, trial) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,0)",
        (
            (
                RUN,
                sid,
                turn,
                i,
                tool,
                json.dumps(arguments, ensure_ascii=False),
                json.dumps(
                    {"content": [{"type": "text", "text": payload}], "isError": status == "tool_error"}
                ),
                status,
                t,
                t + 40_000_000,
                "2026-12-01T00:00:00Z",
                40.0,
                group,
                "explicit",
            )
            for i, (sid, turn, group, tool, arguments, status, t) in enumerate(rows)
        ),
    )
    con.commit()
    con.close()
    return [r["id"] for r in records], samples


def _get(url: str) -> Any:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=60) as response:
        return json.loads(response.read())


def _time(fn: Any, repeats: int = REPEATS) -> tuple[float, float]:
    """(p50, max) in ms."""
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return statistics.median(out), max(out)


def run() -> list[dict[str, Any]]:
    """Build the store, start the viewer, time each endpoint against the full-read baseline."""
    with tempfile.TemporaryDirectory(prefix="bench-viewer-") as tmp:
        db = Path(tmp) / "runs.sqlite"
        started = time.perf_counter()
        with_ref, samples = build_store(db)
        built = time.perf_counter() - started
        store = SqliteTraceStore.open(db)
        try:
            base_p50, base_max = _time(lambda: store.calls(RUN), repeats=3)
        finally:
            store.close()
        args = ["view", "--db", str(db), "--bench", "finmcp-sim", "--host", "127.0.0.1", "--port", "0"]
        with FinmcpProcess("finmcp-eval", args, timeout=120, module="finmcp.evaluator.cli") as view:
            api = view.endpoint("/api")
            deep = sorted(samples)[10_000]
            one = with_ref[1]
            cursor = _get(f"{api}/runs")["cursor"]
            cases = {
                "view.runs": lambda: _get(f"{api}/runs"),
                "view.samples.first": lambda: _get(f"{api}/runs/{RUN}/samples?limit=50"),
                "view.samples.deep": lambda: _get(f"{api}/runs/{RUN}/samples?limit=50&after={deep}"),
                "view.samples.status": lambda: _get(f"{api}/runs/{RUN}/samples?limit=50&status=rpc_error"),
                "view.samples.search": lambda: _get(f"{api}/runs/{RUN}/samples?limit=50&q=tool07"),
                "view.sample": lambda: _get(f"{api}/runs/{RUN}/samples/{one}"),
                "view.calls.since": lambda: _get(f"{api}/runs/{RUN}/samples/{one}/calls?since={cursor}"),
                "view.open": lambda: (
                    _get(f"{api}/runs/{RUN}/samples?limit=50"),
                    _get(f"{api}/runs/{RUN}/samples/{one}"),
                ),
            }
            rows = []
            for name, fn in cases.items():
                p50, worst = _time(fn)
                rows.append(_row(name, p50, worst, base_p50))
            cold, _ = _time(lambda: _get(f"{api}/runs/{RUN}/samples?limit=50&min_f1=0.5"), repeats=1)
            warm, warm_max = _time(lambda: _get(f"{api}/runs/{RUN}/samples?limit=50&min_f1=0.5"))
            rows.append(_row("view.score_filter.cold", cold, cold, base_p50))
            rows.append(_row("view.score_filter.warm", warm, warm_max, base_p50))
        for row in rows:
            row["calls_in_run"] = CALLS
        rows.append(
            {
                "name": "view.baseline.full_read",
                "p50_ms": round(base_p50, 1),
                "max_ms": round(base_max, 1),
                "store_build_s": round(built, 1),
                "calls_in_run": CALLS,
                "samples": len(samples),
            }
        )
        return rows


def _row(name: str, p50: float, worst: float, baseline: float) -> dict[str, Any]:
    return {
        "name": name,
        "p50_ms": round(p50, 2),
        "max_ms": round(worst, 2),
        "baseline_full_read_ms": round(baseline, 1),
        "speedup_vs_full_read": round(baseline / p50, 1) if p50 else None,
        "under_1s": worst < 1000,
    }


if __name__ == "__main__":
    for result in run():
        print(json.dumps(result))
