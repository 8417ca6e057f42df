"""finmcp-server against a minimal SDK server, measured in the same run on this machine.

Replayed ``tools/call`` throughput (calls/s) and client-side p50/p99 latency at 1 and 8 concurrent
clients, over stdio and Streamable HTTP, in both protocol eras; and ``tools/list`` time for 760 tools.

The baseline is the SDK's low-level ``Server`` with trivial handlers that return prebuilt answers:
the same tool list and the same result bytes as the replay, served by ``streamable_http_app()`` (HTTP)
or ``stdio_server()``. So the ratio isolates finmcp's own per-call work (validation, canonical key,
replay cache, latency/fault checks, routing and security middleware). Over HTTP, 8 concurrent
clients are 8 sessions; over stdio (one connection per process) they are 8 requests in flight on
one session. ``python -m bench.bench_server --baseline http|stdio --inventory NAME`` runs the
baseline server by itself.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from bench.calls import CALLS_PER_RUN, CODES, ERAS, TOOL, call_row, drive, recorded_result
from recordings import RecordingStore
from recordings.plumbing.launch import announce_ready
from server.testing import ServerProcess
from tool_specs.inventory import load_inventory

ROUNDS = 2
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
        from server.transports import run_stdio

        run_stdio(server)
        return 0
    from recordings.plumbing.listener import bind_socket
    from server.transports import run_http

    sock = bind_socket(args.host, args.port, blocking=True, inheritable=True)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def healthz(request: Any) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    app = server.streamable_http_app(host=args.host, custom_starlette_routes=[Route("/healthz", healthz)])
    run_http(app, sock, lambda: announce_ready("finmcp-server", base, "baseline"))
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


def run() -> list[dict[str, Any]]:
    """Rows for finmcp-server and the baseline, plus ratio rows (finmcp / baseline calls/s)."""
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
        with (
            ServerProcess(ours_args) as ours,
            ServerProcess(["--baseline", "http"], module="bench.bench_server") as base,
        ):
            ours_stdio = StdioServerParameters(
                command=py, args=["-m", "server", "--transport", "stdio", *ours_args]
            )
            base_stdio = StdioServerParameters(
                command=py, args=["-m", "bench.bench_server", "--baseline", "stdio"]
            )
            rows += _call_rows({"finmcp": (ours.url, ours_stdio), "baseline": (base.url, base_stdio)})
        with (
            ServerProcess(["--inventory", "fintool760", *ours_args]) as ours,
            ServerProcess(
                ["--baseline", "http", "--inventory", "fintool760"], module="bench.bench_server"
            ) as base,
        ):
            ours_list, base_list = anyio.run(_list_times, ours.url), anyio.run(_list_times, base.url)
    ratios = []
    for row in rows:
        if row["server"] != "finmcp":
            continue
        twin = next(
            r
            for r in rows
            if r["server"] == "baseline" and all(r[k] == row[k] for k in ("transport", "era", "concurrency"))
        )
        ratios.append(
            {
                "bench": "server_vs_baseline",
                "transport": row["transport"],
                "era": row["era"],
                "concurrency": row["concurrency"],
                "ratio_calls_per_s": round(row["calls_per_s"] / twin["calls_per_s"], 3),
                "finmcp_p50_ms": row["p50_ms"],
                "baseline_p50_ms": twin["p50_ms"],
            }
        )
    listing = {
        "bench": "tools_list_760",
        "finmcp_median_ms": round(statistics.median(ours_list) * 1000, 2),
        "baseline_median_ms": round(statistics.median(base_list) * 1000, 2),
        "ratio_time": round(statistics.median(ours_list) / statistics.median(base_list), 3),
    }
    return [{"bench": "server_calls", **row} for row in rows] + ratios + [listing]


if __name__ == "__main__":
    sys.exit(_serve_baseline(sys.argv[1:]))
