"""The whole loop (issue 19 goal 5): ``finmcp-eval demo`` calls/s beside its parts, in the same run.

The demo (3 agents x 613 finmcp-sim samples through finmcp-proxy and finmcp-server, then scoring) runs
in this process as ``finmcp-eval demo`` runs it; its parts are measured inside that same run: the CPU
seconds the server, the proxy and this process (the harness with its agents and HTTP client) spent
during the runs, and the scoring's wall clock. With one machine's cores shared by three processes, the
runs' wall clock is at least the largest part and at most their sum. The runs start once the server
has finished its start-up warm-up (``run_demo`` waits for it when it measures): its CPU is not
counted as the runs', and ``runs_s`` is the runs alone (``startup_s``: loading the benchmark,
starting the server and the proxy, the warm-up). The leaderboard must stay the
demo's (oracle 1.000, noisy-light TF1 0.904, noisy-heavy 0.683).

The demo runs twice: first as the harness ran before (the httpx2 HTTP client, ``bench/httpx2_pool.py``
put in the lean client's place for that run, on asyncio's event loop, ``--loop asyncio``) as the
same-run baseline, then as it runs now (the lean client, :mod:`evaluator.harness.http_pool`, on
uvloop); a third row gives the ratios to the baseline.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from pathlib import Path
from typing import Any

from bench import httpx2_pool
from finmcp.evaluator.harness.demo import run_demo
from finmcp.evaluator.harness.options import DemoOptions

EXPECTED_TF1 = {"oracle": "1.000", "noisy-light": "0.904", "noisy-heavy": "0.683"}


def run() -> list[dict[str, Any]]:
    """A row per HTTP client (httpx2 baseline, lean) and one of the lean run's ratios to the baseline."""
    baseline = demo_row("httpx2", "asyncio")
    lean = demo_row("lean", "auto")
    ratios: dict[str, Any] = {"bench": "demo_whole_loop_now_vs_before"}
    for key in ("calls_per_s", "runs_s", "harness_cpu_s", "parts_cpu_sum_s"):
        if baseline.get(key) and lean.get(key) is not None:
            ratios[f"{key}_ratio"] = round(lean[key] / baseline[key], 3)
    return [baseline, lean, ratios]


def demo_row(backend: str, loop: str = "auto") -> dict[str, Any]:
    """One demo with the harness's ``backend`` HTTP client on ``loop``: calls/s, parts' CPU, scoring."""
    client = httpx2_pool.installed() if backend == "httpx2" else contextlib.nullcontext()
    with client, tempfile.TemporaryDirectory(prefix="bench-demo-") as tmp:
        options = DemoOptions(out=str(Path(tmp) / "demo"), progress=False, loop=loop)
        timings: dict[str, Any] = {}
        with contextlib.redirect_stdout(io.StringIO()):
            if run_demo(options, timings) != 0:
                raise RuntimeError("finmcp-eval demo failed")
    table = timings.pop("leaderboard")
    tf1 = {line.split("|")[1].strip(): line.split("|")[3].split()[0] for line in table.splitlines()[2:]}
    if tf1 != EXPECTED_TF1:
        raise RuntimeError(f"demo leaderboard changed: TF1 {tf1}, expected {EXPECTED_TF1}")
    calls, runs = timings["calls"], timings["runs_s"]
    parts = {k: timings[f"{k}_cpu_s"] for k in ("server", "proxy", "harness")}
    row: dict[str, Any] = {
        "bench": f"demo_whole_loop_{backend}_{loop}",
        "calls": calls,
        "startup_s": round(timings["startup_s"], 2),
        "runs_s": round(runs, 2),
        "calls_per_s": round(calls / runs, 1),
        "scoring_s": round(timings["scoring_s"], 2),
        "total_s": round(runs + timings["scoring_s"], 2),
    }
    for kind, cpu in parts.items():
        row[f"{kind}_cpu_s"] = None if cpu is None else round(cpu, 2)
        row[f"{kind}_calls_per_cpu_s"] = round(calls / cpu, 1) if cpu else None
    known = [c for c in parts.values() if c is not None]
    row["parts_cpu_sum_s"] = round(sum(known), 2)
    row["harness_share_of_cpu"] = (
        round(parts["harness"] / sum(known), 3) if known and parts["harness"] else None
    )
    row["leaderboard_tf1"] = tf1
    return row
