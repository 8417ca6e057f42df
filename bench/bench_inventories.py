"""Inventory loading: full validation of each built-in inventory vs. just reading its JSON.

Cold = every cache cleared (a fresh process); warm = schemas already meta-validated in this process.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from finmcp.tool_specs import inventory as inv
from finmcp.tool_specs import validation


def _time(fn, repeat: int = 5) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def run() -> list[dict[str, Any]]:
    """Median seconds to load and validate each inventory, against a plain JSON read (baseline)."""
    rows = []
    for name in inv.builtin_names():

        def load(name: str = name, cold: bool = True) -> None:
            inv.clear_cache()
            if cold:
                validation.clear_cache()
            inv.load_inventory(name).mcp_tools  # noqa: B018 - includes building the wire form

        baseline = _time(lambda name=name: inv.read_builtin_document(name))
        full = _time(load)
        warm = _time(lambda name=name: load(name, cold=False))
        rows.append(
            {
                "bench": "inventory_load",
                "inventory": name,
                "tools": len(inv.load_inventory(name)),
                "load_validate_ms": round(full * 1000, 2),
                "warm_reload_ms": round(warm * 1000, 2),
                "baseline_json_read_ms": round(baseline * 1000, 2),
                "ratio": round(full / baseline, 1) if baseline else None,
            }
        )
    return rows
