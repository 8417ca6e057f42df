"""The replayed ``tools/call`` workload that ``bench_server`` and ``bench_proxy`` both measure.

One tool (``GetFundDiagnosis``) over 32 fund codes whose answers are recorded, so a call costs the
server a replay and nothing else; :func:`drive` times a fixed number of calls from SDK clients and
:func:`call_row` turns the timings into a result row.
"""

from __future__ import annotations

import json
import statistics
import time
from contextlib import AsyncExitStack
from typing import Any

import anyio
from mcp.client import Client

from finmcp.recordings.plumbing.protocol import LATEST_HANDSHAKE_VERSION, LATEST_STATELESS_VERSION
from finmcp.server.testing import minimal_instance
from finmcp.tool_specs.inventory import load_inventory

TOOL = "GetFundDiagnosis"
CODES = [f"{i:06d}" for i in range(1, 33)]
CALLS_PER_RUN = {1: 300, 8: 600}
ERAS = ((LATEST_STATELESS_VERSION, "auto"), (LATEST_HANDSHAKE_VERSION, "legacy"))
"""(era printed in the rows, SDK ``Client`` mode) for both protocol eras."""


def recorded_result(code: str) -> dict[str, Any]:
    """The recorded answer of ``TOOL`` for one fund code (the minimal valid output)."""
    spec = load_inventory("finmcp65").require(TOOL)
    structured = minimal_instance(spec.output_schema) | {"fundCode": code}
    text = json.dumps(structured, ensure_ascii=False, indent=2)
    return {"content": [{"type": "text", "text": text}], "structuredContent": structured, "isError": False}


async def drive(make_client: Any, sessions: int, in_flight: int, total: int) -> tuple[float, list[float]]:
    """Connect ``sessions`` clients (untimed), then time ``total`` calls with ``in_flight`` per client."""
    latencies: list[float] = []
    per_worker = total // (sessions * in_flight)

    async def worker(client: Client, offset: int) -> None:
        for i in range(per_worker):
            code = CODES[(offset + i) % len(CODES)]
            started = time.perf_counter()
            result = await client.call_tool(TOOL, {"fundNameOrCode": code})
            latencies.append(time.perf_counter() - started)
            if result.is_error:
                raise RuntimeError(f"benchmark call failed: {result.content}")

    with anyio.fail_after(120):
        async with AsyncExitStack() as stack:
            clients = [await stack.enter_async_context(make_client()) for _ in range(sessions)]
            for client in clients:
                for code in CODES:  # warm-up: lists tools once, fills the server's replay cache
                    await client.call_tool(TOOL, {"fundNameOrCode": code})
            started = time.perf_counter()
            async with anyio.create_task_group() as group:
                for index, client in enumerate(clients):
                    for j in range(in_flight):
                        group.start_soon(worker, client, index * in_flight + j)
            elapsed = time.perf_counter() - started
    return elapsed, latencies


def call_row(
    kind: str, transport: str, era: str, concurrency: int, elapsed: float, lat: list[float]
) -> dict[str, Any]:
    """Throughput and client-side p50/p99 of one measured (server kind, transport, era, concurrency)."""
    ordered = sorted(lat)
    return {
        "server": kind,
        "transport": transport,
        "era": era,
        "concurrency": concurrency,
        "calls": len(lat),
        "calls_per_s": round(len(lat) / elapsed, 1),
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1000, 2),
    }
