"""Replay lookup vs. fresh simulation, per call, across qieman79 and fintool760.

Targets (issue 3): p99 < 2 ms for a recorded lookup, < 20 ms for a simulation, on 2 cores.
"first touch" calls build the entities they name (a strategy's NAV from its funds' histories);
"repeat" calls find them cached; start-up warming builds the search indexes. The
baseline measured in the same run is ``json.dumps`` of an already-built answer: the cost floor of
producing the text at all.

Issue 19 goal 3 (every tool's first touch p99 < 20 ms): ``sim_first_touch_per_tool`` calls every tool
of both inventories ``FIRST_TOUCH_CALLS`` times on a warmed simulator, each call with fresh example
arguments (new seeds: new funds, strategies, users), and reports the worst tool's p99 (wall clock and
thread CPU time, which the other processes on a shared machine do not inflate) and how many tools
miss the target.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from finmcp.recordings.store import RecordingStore
from finmcp.server.sim import Simulator
from finmcp.server.sim.example_args import example_arguments
from finmcp.server.sim.simulator import freeze_heap
from finmcp.tool_specs.inventory import load_inventory


def _percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 3),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 3),
    }


def run() -> list[dict[str, Any]]:
    """Time simulation and replay for every tool of both inventories (two argument variants each)."""
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, RecordingStore.open(Path(tmp) / "bench.sqlite") as store:
        for name in ("qieman79", "fintool760"):
            inventory = load_inventory(name)
            sim = Simulator(inventory, seed=0)
            started = time.perf_counter()
            sim.warm()
            freeze_heap()  # as finmcp-server does after its warm-up
            rows.append(
                {
                    "bench": "sim_warm_start",
                    "inventory": name,
                    "seconds": round(time.perf_counter() - started, 2),
                }
            )
            calls = [
                (spec, example_arguments(spec, sim.world, rng_seed=3, variant=v))
                for spec in inventory
                for v in (0, 1)
            ]
            gc.disable()
            try:
                simulate, results = [], []
                for spec, args in calls:
                    started = time.perf_counter()
                    result = sim.simulate(spec.name, args)
                    simulate.append(time.perf_counter() - started)
                    results.append(result)
                again = []
                for spec, args in calls:
                    started = time.perf_counter()
                    sim.simulate(spec.name, args)
                    again.append(time.perf_counter() - started)
                baseline = []
                for result in results:
                    value = json.loads(result["content"][0]["text"])
                    started = time.perf_counter()
                    json.dumps(value, ensure_ascii=False, indent=2)
                    baseline.append(time.perf_counter() - started)
                with store.transaction():
                    for (spec, args), result in zip(calls, results, strict=True):
                        store.put_response(
                            name, spec.name, args, result, "simulated", input_schema=spec.input_schema
                        )
                lookup = []
                for spec, args in calls:
                    started = time.perf_counter()
                    found = store.get_response(name, spec.name, args, input_schema=spec.input_schema)
                    lookup.append(time.perf_counter() - started)
                    assert found is not None
            finally:
                gc.enable()
            base = _percentiles(baseline)
            for label, samples, target in (
                ("simulate_first_touch", simulate, 20.0),
                ("simulate_repeat", again, 20.0),
                ("replay_lookup", lookup, 2.0),
            ):
                stats = _percentiles(samples)
                rows.append(
                    {
                        "bench": f"sim_{label}",
                        "inventory": name,
                        "calls": len(samples),
                        **stats,
                        "target_p99_ms": target,
                        "baseline_dumps_p50_ms": base["p50_ms"],
                        "ratio_p50": round(stats["p50_ms"] / base["p50_ms"], 1) if base["p50_ms"] else None,
                    }
                )
            rows.append(_memory(name, calls))
    rows += _heavy_qieman_calls()
    rows += first_touch_per_tool()
    return rows


# calls per tool: every call names entities drawn with a new seed (qieman batch tools name 1-3 funds or
# strategies, a strategy 10-25 funds). With fewer than 100 samples the p99 is the tool's slowest call.
FIRST_TOUCH_CALLS = {"qieman79": 12, "fintool760": 4}
FIRST_TOUCH_TARGET_MS = 20.0


def first_touch_per_tool(calls: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """Per-tool p99 of first-touch calls, worst tools named; one row per inventory.

    ``FINMCP_BENCH_FIRST_TOUCH=N`` overrides the calls per tool (both inventories).
    """
    per = dict(calls or FIRST_TOUCH_CALLS)
    if os.environ.get("FINMCP_BENCH_FIRST_TOUCH"):
        per = {name: int(os.environ["FINMCP_BENCH_FIRST_TOUCH"]) for name in per}
    rows = []
    for name, k in per.items():
        inventory = load_inventory(name)
        sim = Simulator(inventory, seed=0)
        sim.warm()
        freeze_heap()
        wall: dict[str, list[float]] = {}
        cpu: dict[str, list[float]] = {}
        for spec in inventory:
            calls_ = [example_arguments(spec, sim.world, rng_seed=1000 + i, variant=i % 3) for i in range(k)]
            for args in calls_:
                w0, c0 = time.perf_counter(), time.thread_time()
                sim.simulate(spec.name, args)
                cpu.setdefault(spec.name, []).append(time.thread_time() - c0)
                wall.setdefault(spec.name, []).append(time.perf_counter() - w0)
        p99_wall = {tool: _percentiles(s)["p99_ms"] for tool, s in wall.items()}
        p99_cpu = {tool: _percentiles(s)["p99_ms"] for tool, s in cpu.items()}
        worst = sorted(p99_wall, key=lambda t: -p99_wall[t])
        worst_cpu = sorted(p99_cpu, key=lambda t: -p99_cpu[t])
        every = [x for s in wall.values() for x in s]
        rows.append(
            {
                "bench": "sim_first_touch_per_tool",
                "inventory": name,
                "tools": len(wall),
                "calls_per_tool": k,
                "all_calls_p99_ms": _percentiles(every)["p99_ms"],
                "worst_tool": worst[0],
                "worst_tool_p99_ms": p99_wall[worst[0]],
                "worst_cpu_tool": worst_cpu[0],
                "worst_tool_cpu_p99_ms": p99_cpu[worst_cpu[0]],
                "tools_over_target": sum(1 for v in p99_wall.values() if v >= FIRST_TOUCH_TARGET_MS),
                "tools_over_target_cpu": sum(1 for v in p99_cpu.values() if v >= FIRST_TOUCH_TARGET_MS),
                "next_worst": {t: p99_wall[t] for t in worst[1:5]},
                "target_p99_ms": FIRST_TOUCH_TARGET_MS,
            }
        )
    return rows


# The costliest single Qieman calls, measured here (the tests used to assert limits on them):
# Monte Carlo at its largest request, cold, and the fund screens once their per-world profiles exist.
MONTE_CARLO_LIMITS = {
    "weights": {"equity": 1.0},
    "frequency": "DAY",
    "periodCount": 600,
    "simulationCount": 10_000_000,
}
SCREENS = (
    ("filterBondFundByBondType", {"thresholdList": [0.4], "bondType": "interestRate"}),
    ("filterBondFundByCreditRating", {"thresholdList": [0.2], "timeRange": "LAST_2_YEAR"}),
    ("filterStockFundByStockTurnover", {"thresholdList": [2.0]}),
    ("getBondFundWithAlertRecord", {"bondAlterType": "weekDive"}),
)


def _heavy_qieman_calls() -> list[dict[str, Any]]:
    """Cold Monte Carlo at the request limits (target 20 ms) and warm screens (target p50 20 ms, max 100)."""
    sim = Simulator(load_inventory("qieman79"), seed=0)
    started = time.perf_counter()
    sim.value("MonteCarloSimulate", MONTE_CARLO_LIMITS)
    cold_ms = (time.perf_counter() - started) * 1000
    for tool, args in SCREENS:
        sim.simulate(tool, args)
    warm = []
    for _ in range(5):
        for tool, args in SCREENS:
            started = time.perf_counter()
            sim.simulate(tool, args)
            warm.append(time.perf_counter() - started)
    return [
        {"bench": "sim_monte_carlo_limits_cold", "ms": round(cold_ms, 3), "target_ms": 20.0},
        {
            "bench": "sim_screens_warm",
            "calls": len(warm),
            **_percentiles(warm),
            "max_ms": round(max(warm) * 1000, 3),
            "target_p50_ms": 20.0,
            "target_max_ms": 100.0,
        },
    ]


def _memory(name: str, calls: list) -> dict[str, Any]:
    """Memory a fresh simulator (world included) holds after answering the same calls."""
    tracemalloc.start()
    sim = Simulator(load_inventory(name), seed=0)
    for spec, args in calls:
        sim.simulate(spec.name, args)
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return {
        "bench": "world_memory",
        "inventory": name,
        "calls": len(calls),
        "held_mib": round(held / 2**20, 1),
    }
