"""Entity adoption: the start-up cost of the harvest and the per-call cost of the near-miss layer.

On finmcp-sim's embedded recordings (1,779 answers) and samples (613): the harvest that
``finmcp-server --recordings`` now runs at start-up (``harvest_recordings``, one pass that also keeps
the recorded answers) against the code scan it replaced (``known_codes.codes_from_recordings``), both
measured in this run; the samples' harvest (``--entities``); and a perturbed gold call answered by the
near-miss simulator against the plain simulator, on the same warmed world.
"""

from __future__ import annotations

import gzip
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from finmcp.recordings.jsonl import import_jsonl
from finmcp.recordings.store import RecordingStore
from finmcp.server.sim.entity_harvest import harvest_recordings, harvest_samples
from finmcp.server.sim.known_codes import codes_from_recordings
from finmcp.server.sim.near_miss import NearMissSimulator, RecordedAnswers
from finmcp.server.sim.perturb import perturbations
from finmcp.server.sim.simulator import Simulator
from finmcp.server.world import World
from finmcp.tool_specs.inventory import load_inventory

BENCHMARKS = Path(__file__).resolve().parent.parent / "evaluator" / "benchmarks"


def _best(fn: Any, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def run() -> list[dict[str, Any]]:
    """Rows: start-up harvest vs. the code scan; samples harvest; near-miss vs. plain simulation per call."""
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = RecordingStore.open(Path(tmp) / "sim.sqlite")
        with gzip.open(BENCHMARKS / "finmcp_sim.recordings.jsonl.gz", "rt", encoding="utf-8") as handle:
            import_jsonl(store, handle)
        scan = _best(lambda: codes_from_recordings(store))
        harvest_s = _best(lambda: harvest_recordings(store, keep=[]))
        samples_s = _best(lambda: harvest_samples([BENCHMARKS / "finmcp_sim.jsonl.gz"], outputs=False))
        rows.append(
            {
                "bench": "adoption_startup_harvest",
                "recordings": store.count(),
                "harvest_ms": round(harvest_s * 1000, 1),
                "baseline_code_scan_ms": round(scan * 1000, 1),
                "ratio": round(harvest_s / scan, 2),
                "samples_harvest_ms": round(samples_s * 1000, 1),
            }
        )
        kept: list[tuple[str, Any, Any]] = []
        harvest = harvest_recordings(store, keep=kept)
        inventory = load_inventory("finmcp65")
        plain = Simulator(inventory, 0, World(0, **harvest.world_arguments()))
        near = NearMissSimulator(plain, RecordedAnswers(kept), harvest)
        calls = []
        for tool, arguments, _ in kept[::7]:
            spec = inventory.get(tool)
            if spec is not None:
                calls += [(tool, a) for _, a in perturbations(tool, arguments, harvest, spec.input_schema)]
        calls = calls[:300]
        near.answers.warm()  # as the server's warm-up does
        for tool, arguments in calls:  # warm the entities both will read
            plain.simulate(tool, arguments)
        timings: dict[str, list[float]] = {"plain": [], "near": []}
        for tool, arguments in calls:
            for name, sim in (("plain", plain), ("near", near)):
                t = time.perf_counter()
                sim.simulate(tool, json.loads(json.dumps(arguments)))
                timings[name].append(time.perf_counter() - t)
        p50 = {k: statistics.median(v) for k, v in timings.items()}
        p99 = {k: sorted(v)[int(len(v) * 0.99)] for k, v in timings.items()}
        rows.append(
            {
                "bench": "adoption_near_miss_call",
                "n": len(calls),
                "p50_ms": round(p50["near"] * 1000, 3),
                "p99_ms": round(p99["near"] * 1000, 3),
                "baseline_plain_sim_p50_ms": round(p50["plain"] * 1000, 3),
                "baseline_plain_sim_p99_ms": round(p99["plain"] * 1000, 3),
                "ratio_p50": round(p50["near"] / p50["plain"], 2),
            }
        )
        store.close()
    return rows
