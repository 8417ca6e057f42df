"""finmcp-server against a minimal SDK server and mcp-recorder's replay server, in the same run.

Replayed ``tools/call`` throughput (calls/s) and client-side p50/p99 at 1 and 8 concurrent clients,
in both protocol eras, under two loads: a raw HTTP client (``bench/raw_http.py``: prebuilt requests,
no SDK, so the servers' cost shows) and the SDK ``Client`` (HTTP and stdio); plus ``tools/list``
time for 760 tools.

The baseline is what issue 19 names: the SDK's low-level ``Server`` with one trivial tool returning
prebuilt answers (the same tool list and result bytes as the replay), ``streamable_http_app()``,
started with ``uvicorn.run`` and its defaults (over stdio: ``stdio_server()``). The replay peer is
mcp-recorder 0.5's replay server (``bench/recorder_peer.py``, the ``bench`` extra) serving a
cassette of finmcp-server's own answers; the variants are finmcp-server with this round's changes
switched off one by one (``bench/server_variants.py``). Over the SDK client's HTTP, 8 concurrent
clients are 8 sessions; over stdio (one connection per process) they are 8 requests in flight on one
session. ``python -m bench.bench_server --baseline http|stdio --inventory NAME`` runs the baseline
server by itself.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from bench.calls import CALLS_PER_RUN, CODES, ERAS, TOOL, call_row, drive, recorded_result
from bench.raw_http import capture, drive_raw, initialize_params
from bench.recorder_peer import RecorderProcess, write_cassette
from bench.recorder_peer import available as recorder_available
from bench.uvicorn_run import run_announced
from finmcp.recordings import RecordingStore
from finmcp.recordings.plumbing import eventloop
from finmcp.server.testing import ServerProcess
from finmcp.tool_specs.inventory import load_inventory

ROUNDS = 2
RAW_ROUNDS = 3
RAW_CALLS = {1: 600, 8: 1600}
"""Calls timed per raw measurement: more than the SDK client's, as each costs the client far less."""
VARIANTS = ("finmcp-before", "finmcp-uvloop", "finmcp-uvloop-httptools")
"""finmcp-server with this round's changes switched off one by one, in the order they landed
(``bench/server_variants.py``): asyncio's loop, h11 and the SDK's path for every call, as it ran
before; then uvloop; then the httptools parser; ``finmcp`` itself adds the tools/call fast path."""
LIST_REPEATS = 10


# ---------------------------------------------------------------- the baseline server


def _baseline_server(inventory_name: str) -> Any:
    import mcp_types as types
    from mcp.server.lowlevel import Server

    tools: dict[str, Any] = {
        "tools": list(load_inventory(inventory_name).mcp_tools),
        "resultType": "complete",
    }
    tools |= {"ttlMs": 0, "cacheScope": "private"}
    answers: dict[Any, dict[str, Any]] = {
        code: {**recorded_result(code), "resultType": "complete"} for code in CODES
    }
    fallback = {"content": [{"type": "text", "text": "ok"}], "isError": True, "resultType": "complete"}

    async def on_list_tools(ctx: Any, params: Any) -> dict[str, Any]:
        return tools

    async def on_call_tool(ctx: Any, params: Any) -> dict[str, Any]:
        return dict(answers.get((params.arguments or {}).get("fundNameOrCode"), fallback))

    server: Server[Any] = Server("baseline", get_tool_input_schema=lambda n: None)
    # as server/app.py registers its handlers (their dict results are what the SDK serialises)
    server.add_request_handler("tools/list", types.PaginatedRequestParams, on_list_tools)
    server.add_request_handler("tools/call", types.CallToolRequestParams, on_call_tool)
    return server


def _serve_baseline(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench.bench_server")
    parser.add_argument("--baseline", choices=("http", "stdio"), required=True)
    parser.add_argument("--inventory", default="finmcp65")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    server = _baseline_server(args.inventory)
    if args.baseline == "stdio":
        from finmcp.server.transports import run_stdio

        run_stdio(server)
        return 0
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def healthz(request: Any) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    app = server.streamable_http_app(host=args.host, custom_starlette_routes=[Route("/healthz", healthz)])
    # as a minimal SDK server is started: uvicorn.run and its defaults (uvloop and httptools when
    # installed, the access log on stdout, which the launcher sends to /dev/null)
    run_announced(app, args.host, args.port, "finmcp-server", "baseline")
    return 0


# ---------------------------------------------------------------- measuring


def _call_rows(targets: dict[str, tuple[str, StdioServerParameters]]) -> list[dict[str, Any]]:
    """Every (transport, era, concurrency) for each server, interleaved, best of ``ROUNDS`` runs."""
    rows = []
    for era, mode in ERAS:
        for concurrency in (1, 8):
            total = CALLS_PER_RUN[concurrency]
            for transport in ("http", "stdio"):
                best: dict[str, tuple[float, list[float]]] = {}
                for _ in range(ROUNDS):
                    for kind, (url, stdio) in targets.items():
                        if transport == "http":
                            measured = anyio.run(
                                drive, lambda m=mode, u=url: Client(u, mode=m), concurrency, 1, total
                            )
                        else:
                            measured = anyio.run(
                                drive, lambda m=mode, p=stdio: Client(p, mode=m), 1, concurrency, total
                            )
                        if kind not in best or measured[0] < best[kind][0]:
                            best[kind] = measured
                for kind, (elapsed, lat) in best.items():
                    rows.append(call_row(kind, transport, era, concurrency, elapsed, lat))
    return rows


async def _list_times(url: str) -> list[float]:
    times = []
    async with Client(url, mode="auto") as client:
        for _ in range(LIST_REPEATS + 1):
            started = time.perf_counter()
            listed = await client.list_tools(cache_mode="bypass")
            times.append(time.perf_counter() - started)
            assert len(listed.tools) == 760
    return times[1:]


def _raw_rows(targets: dict[str, dict[str, str]]) -> list[dict[str, Any]]:
    """Each server (kind -> era -> URL) under the raw HTTP load, interleaved, best of ``RAW_ROUNDS``."""
    rows = []
    for era, _ in ERAS:
        for concurrency in (1, 8):
            total = RAW_CALLS[concurrency]
            best: dict[str, tuple[float, list[float]]] = {}
            for _ in range(RAW_ROUNDS):
                for kind, urls in targets.items():
                    measured = eventloop.run(drive_raw(urls[era], era, concurrency, total))
                    if kind not in best or measured[0] < best[kind][0]:
                        best[kind] = measured
            for kind, (elapsed, lat) in best.items():
                rows.append(call_row(kind, "http-raw", era, concurrency, elapsed, lat))
    return rows


def _recorder_peers(stack: ExitStack, ours_url: str, tmp: Path) -> dict[str, str]:
    """mcp-recorder replay servers (one per era: its matcher cannot tell eras apart), era -> URL.

    Each serves a cassette of finmcp-server's own answers to the benchmark's calls in that era.
    """
    urls = {}
    for era, _ in ERAS:
        initialize, answers, sse = eventloop.run(capture(ours_url, era))

        def request_for(code: str) -> dict[str, Any]:
            params = {"name": TOOL, "arguments": {"fundNameOrCode": code}}
            return {"jsonrpc": "2.0", "id": 0, "method": "tools/call", "params": params}

        cassette = tmp / f"cassette-{era}.json"
        opening = None
        if initialize is not None:
            request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params(era)}
            opening = (request, initialize)
        per_code = RAW_ROUNDS * sum(c + -(-RAW_CALLS[c] // len(CODES)) for c in RAW_CALLS) + 8
        write_cassette(cassette, ours_url, opening, answers, sse, request_for, per_code)
        peer = stack.enter_context(
            RecorderProcess(["--cassette", str(cassette)], module="bench.recorder_peer")
        )
        urls[era] = f"{peer.base}/mcp"
    return urls


def _ratio_rows(
    rows: list[dict[str, Any]], bench: str, ours: str, theirs: str, transports: set[str]
) -> list[dict[str, Any]]:
    """``ours`` calls/s over ``theirs`` for each (transport, era, concurrency) both were measured at."""
    out = []
    for row in rows:
        if row["server"] != ours or row["transport"] not in transports:
            continue
        twin = next(
            (
                r
                for r in rows
                if r["server"] == theirs and all(r[k] == row[k] for k in ("transport", "era", "concurrency"))
            ),
            None,
        )
        if twin is None:
            continue
        out.append(
            {
                "bench": bench,
                "transport": row["transport"],
                "era": row["era"],
                "concurrency": row["concurrency"],
                "ratio_calls_per_s": round(row["calls_per_s"] / twin["calls_per_s"], 3),
                f"{ours}_p50_ms": row["p50_ms"],
                f"{theirs}_p50_ms": twin["p50_ms"],
            }
        )
    return out


def run() -> list[dict[str, Any]]:
    """Rows for finmcp-server, the baseline and mcp-recorder, plus ratio rows (finmcp / other calls/s)."""
    with tempfile.TemporaryDirectory(prefix="bench-server-") as tmp:
        db = Path(tmp) / "recordings.sqlite"
        with RecordingStore.open(db) as store:
            for code in CODES:
                store.put_response(
                    "qieman79", TOOL, {"fundNameOrCode": code}, recorded_result(code), "imported:bench"
                )
        ours_args = ["--miss", "strict", "--recordings", str(db), "--latency", "none"]
        py = sys.executable
        rows: list[dict[str, Any]] = []
        with ExitStack() as stack:
            ours = stack.enter_context(ServerProcess(ours_args, wait_warm=True))
            base = stack.enter_context(ServerProcess(["--baseline", "http"], module="bench.bench_server"))
            raw_targets = {
                "finmcp": {era: ours.url for era, _ in ERAS},
                "baseline": {era: base.url for era, _ in ERAS},
            }
            if os.environ.get("FINMCP_BENCH_SERVER_VARIANTS", "1") != "0":
                for kind in VARIANTS:
                    variant = stack.enter_context(
                        ServerProcess(
                            ["--stack", kind, *ours_args], module="bench.server_variants", wait_warm=True
                        )
                    )
                    raw_targets[kind] = {era: variant.url for era, _ in ERAS}
            if recorder_available():
                raw_targets["mcp-recorder"] = _recorder_peers(stack, ours.url, Path(tmp))
            rows += _raw_rows(raw_targets)
            if os.environ.get("FINMCP_BENCH_SERVER_RAW_ONLY") != "1":
                ours_stdio = StdioServerParameters(
                    command=py, args=["-m", "finmcp.server", "--transport", "stdio", *ours_args]
                )
                base_stdio = StdioServerParameters(
                    command=py, args=["-m", "bench.bench_server", "--baseline", "stdio"]
                )
                rows += _call_rows({"finmcp": (ours.url, ours_stdio), "baseline": (base.url, base_stdio)})
        listing: list[dict[str, Any]] = []
        if os.environ.get("FINMCP_BENCH_SERVER_RAW_ONLY") != "1":
            with (
                ServerProcess(["--inventory", "fintool760", *ours_args], wait_warm=True) as ours,
                ServerProcess(
                    ["--inventory", "fintool760", "--baseline", "http"], module="bench.bench_server"
                ) as base,
            ):
                ours_list, base_list = anyio.run(_list_times, ours.url), anyio.run(_list_times, base.url)
            listing.append(
                {
                    "bench": "tools_list_760",
                    "finmcp_median_ms": round(statistics.median(ours_list) * 1000, 2),
                    "baseline_median_ms": round(statistics.median(base_list) * 1000, 2),
                    "ratio_time": round(statistics.median(ours_list) / statistics.median(base_list), 3),
                }
            )
    ratios = _ratio_rows(rows, "server_vs_baseline", "finmcp", "baseline", {"http", "http-raw", "stdio"})
    ratios += _ratio_rows(rows, "replay_vs_mcp_recorder", "finmcp", "mcp-recorder", {"http-raw"})
    steps = [*VARIANTS, "finmcp"]
    for before, after in zip(steps, steps[1:], strict=False):  # what each change saved, same run
        ratios += _ratio_rows(rows, f"step_{after}_vs_{before}", after, before, {"http-raw"})
    for kind in VARIANTS:
        ratios += _ratio_rows(rows, f"{kind}_vs_baseline", kind, "baseline", {"http-raw"})
    return [{"bench": "server_calls", **row} for row in rows] + ratios + listing


if __name__ == "__main__":
    sys.exit(_serve_baseline(sys.argv[1:]))
