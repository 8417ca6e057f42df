"""Server memory over many distinct calls (issue 19 goal 4, the server half).

One ``finmcp-server`` serves all three built-in inventories (``/{inventory}/mcp`` each); the bench
sends ``CALLS`` distinct ``tools/call`` requests (every tool of every inventory in turn, each call with
example arguments drawn from a new seed, so it names new funds, strategies, users and symbols) and reads
the server's resident set (``VmRSS`` of ``/proc/PID/status``) after start-up warming and every
``CALLS // 4`` calls. Target: under 150 MiB after 10^4 calls. The baseline in the same run is the
RSS right after start-up (inventories loaded, warming done), so the growth is what the calls added.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from finmcp.evaluator.harness.mcp_client import McpHttpClient
from finmcp.server.testing import ServerProcess
from finmcp.server.world import World
from finmcp.tool_specs.inventory import load_inventory
from finmcp.tool_specs.model import ToolSpec

INVENTORIES = ("finmcp65", "qieman79", "fintool760")
CALLS = 10_000
TARGET_MIB = 150.0
IN_FLIGHT = 4


def rss_mib(pid: int) -> float:
    """Resident set size of a Linux process in MiB (``VmRSS`` of ``/proc/PID/status``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def distinct_calls(n: int) -> list[tuple[str, ToolSpec, dict[str, Any]]]:
    """``n`` (inventory, tool, arguments): the inventories' tools round-robin, a new seed per call."""
    from finmcp.server.sim.example_args import example_arguments

    world = World(0)
    tools = {name: list(load_inventory(name)) for name in INVENTORIES}
    out = []
    for i in range(n):
        name = INVENTORIES[i % len(INVENTORIES)]
        spec = tools[name][(i // len(INVENTORIES)) % len(tools[name])]
        out.append((name, spec, example_arguments(spec, world, rng_seed=20_000 + i, variant=i % 3)))
    return out


async def _drive(server: ServerProcess, calls: list, marks: set[int], pid: int) -> list[dict[str, Any]]:
    client = McpHttpClient()
    samples: list[dict[str, Any]] = []
    queue = iter(enumerate(calls))
    done = 0
    errors = 0

    async def worker() -> None:
        nonlocal done, errors
        for _, (name, spec, args) in queue:
            result = await client.call_tool(server.endpoint(f"/{name}/mcp"), spec.name, args)
            errors += bool(result.get("isError"))
            done += 1
            if done in marks:
                samples.append({"calls": done, "rss_mib": round(rss_mib(pid), 1)})

    try:
        await asyncio.gather(*(worker() for _ in range(IN_FLIGHT)))
    finally:
        await client.aclose()
    samples.append({"tool_errors": errors})
    return samples


def run(calls: int | None = None) -> list[dict[str, Any]]:
    """One row: RSS after warming and at each quarter of ``CALLS`` distinct calls (``FINMCP_BENCH_MEMORY_CALLS``)."""
    n = calls or int(os.environ.get("FINMCP_BENCH_MEMORY_CALLS", CALLS))
    work = distinct_calls(n)
    args = [a for name in INVENTORIES for a in ("--inventory", name)] + ["--latency", "none"]
    with ServerProcess(args, timeout=120.0, wait_warm=True) as server:  # RSS after the warm-up's caches
        assert server.process is not None
        pid = server.process.pid
        started_mib = rss_mib(pid)
        started = time.perf_counter()
        samples = asyncio.run(_drive(server, work, {n // 4, n // 2, 3 * n // 4, n}, pid))
        elapsed = time.perf_counter() - started
        final_mib = rss_mib(pid)
    errors = samples.pop()["tool_errors"]
    return [
        {
            "bench": "server_rss_distinct_calls",
            "inventories": list(INVENTORIES),
            "calls": n,
            "tool_errors": errors,
            "rss_after_warm_mib": round(started_mib, 1),
            "rss_after_calls_mib": round(final_mib, 1),
            "growth_mib": round(final_mib - started_mib, 1),
            "rss_by_calls": samples,
            "calls_per_s": round(n / elapsed, 1),
            "target_mib": TARGET_MIB,
            "met": final_mib < TARGET_MIB,
        }
    ]
