"""Replay lookup vs. fresh simulation, per call, across qieman79 and fintool760.

Targets (issue 3): p99 < 2 ms for a recorded lookup, < 20 ms for a simulation, on 2 cores.
"first touch" calls build the entities they name (a strategy's NAV from its funds' histories);
"repeat" calls find them cached; start-up warming builds the search indexes. The
baseline measured in the same run is ``json.dumps`` of an already-built answer: the cost floor of
producing the text at all.
"""

from __future__ import annotations

import gc
import json
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from recordings.store import RecordingStore
from server.sim import Simulator
from server.sim.example_args import example_arguments
from tool_specs.inventory import load_inventory


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
