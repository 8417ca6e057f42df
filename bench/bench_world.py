"""Synthetic world: cost of building one fund (with its full NAV history), strategy and user.

Each sample builds an entity never built before in that world (shared universes and market factors
warm, as in a running server); the baseline is ``json.dumps`` of an already-built fund in the same run.
Also reports one-off cold-start costs and the memory held after building many entities.
"""

from __future__ import annotations

import json
import statistics
import time
import tracemalloc
from typing import Any

from finmcp.server.world import World


def _pcts(samples: list[float]) -> tuple[float, float]:
    s = sorted(samples)
    return statistics.median(s), s[min(len(s) - 1, int(len(s) * 0.99))]


def _timed(fn, keys) -> list[float]:
    out = []
    for k in keys:
        t = time.perf_counter()
        fn(k)
        out.append(time.perf_counter() - t)
    return out


def _row(bench: str, samples: list[float], baseline: float, **extra: Any) -> dict[str, Any]:
    p50, p99 = _pcts(samples)
    return {
        "bench": bench,
        "n": len(samples),
        "p50_ms": round(p50 * 1000, 3),
        "p99_ms": round(p99 * 1000, 3),
        "baseline_json_dumps_ms": round(baseline * 1000, 3),
        "ratio_p50": round(p50 / baseline, 1) if baseline else None,
        **extra,
    }


def run() -> list[dict[str, Any]]:
    """Rows: fund / strategy / user build percentiles vs. the JSON baseline, cold start, memory."""
    rows: list[dict[str, Any]] = []
    t = time.perf_counter()
    world = World(0)
    world.fund_universe()
    universe_s = time.perf_counter() - t
    t = time.perf_counter()
    world.fund(world.fund_codes()[0])  # also builds stocks, bonds and the market factors it needs
    first_fund_s = time.perf_counter() - t
    prebuilt = world.require_fund(world.fund_codes()[0]).to_dict()
    baseline = statistics.median(_timed(lambda _: json.dumps(prebuilt, ensure_ascii=False), range(200)))

    codes = world.fund_codes()[1::10][:300]
    rows.append(_row("world_fund_full_nav", _timed(world.fund, codes), baseline))
    nav_codes = world.fund_codes()[2::10][:300]
    rows.append(_row("world_fund_nav_series_only", _timed(world.fund_nav_series, nav_codes), baseline))
    rows.append(_row("world_strategy", _timed(world.strategy, world.strategy_codes()[:300]), baseline))
    rows.append(_row("world_strategy_nav", _timed(world.strategy_nav, world.strategy_codes()[:50]), baseline))
    rows.append(_row("world_user", _timed(world.user, world.user_ids(300)), baseline))
    rows.append(
        {
            "bench": "world_cold_start",
            "universe_ms": round(universe_s * 1000, 2),
            "first_fund_ms": round(first_fund_s * 1000, 2),
            "funds_in_universe": len(world.fund_codes()),
        }
    )

    tracemalloc.start()
    fresh = World(0)
    for c in fresh.fund_codes()[::10]:
        fresh.fund(c)
    for c in fresh.strategy_codes()[:50]:
        fresh.strategy(c)
    for u in fresh.user_ids(50):
        fresh.user(u)
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rows.append(
        {
            "bench": "world_memory",
            "funds": len(fresh.fund_codes()[::10]),
            "strategies": 50,
            "users": 50,
            "current_mib": round(current / 2**20, 1),
            "peak_mib": round(peak / 2**20, 1),
        }
    )
    return rows


if __name__ == "__main__":
    for row in run():
        print(json.dumps(row, ensure_ascii=False))
