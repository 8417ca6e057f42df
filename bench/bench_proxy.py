"""finmcp-proxy against direct calls, measured in the same run on this machine.

Replayed ``tools/call`` throughput (calls/s) and client-side p50/p99 at 1 and 8 concurrent clients,
direct to ``finmcp-server`` and through ``finmcp-proxy`` (tracing every message and committing every
call row before its response is forwarded), in both protocol eras:

- HTTP: SDK client → proxy (HTTP side) → server over Streamable HTTP; 8 clients are 8 sessions;
- stdio: SDK client → ``finmcp-proxy --transport stdio --upstream-cmd "server --transport stdio"``;
  8 clients are 8 requests in flight on one session (one pipe per process).

Over HTTP a bare TCP relay (``bench/relay.py``: bytes copied both ways, no parsing, no logging, the
same event loop) is measured too: the floor any Python proxy pays for two extra loopback hops.

Rows are interleaved and the best of ``ROUNDS`` runs is kept for each, so background load hits both
sides alike. ``slowdown`` is direct calls/s over proxied calls/s (1.0 = free); ``added_p50_ms`` is
the proxied p50 minus the direct p50. When an ``mcp-proxy`` executable is found (``FINMCP_BENCH_MCP_PROXY``
or on ``PATH``), its stdio→HTTP bridge (``mcp-proxy --transport streamablehttp URL``) is measured on
the same server and ``ours_over_theirs`` (calls/s) is printed.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from bench.calls import CALLS_PER_RUN, CODES, ERAS, TOOL, call_row, drive, recorded_result
from proxy.testing import ProxyProcess
from recordings import RecordingStore
from server.testing import ServerProcess

ROUNDS = 2


def _measure(make_client: Any, transport: str, concurrency: int) -> tuple[float, list[float]]:
    total = CALLS_PER_RUN[concurrency]
    if transport == "http":
        return anyio.run(drive, make_client, concurrency, 1, total)
    return anyio.run(drive, make_client, 1, concurrency, total)


def _best(
    targets: dict[str, Any], transport: str, era: str, mode: str, concurrency: int
) -> list[dict[str, Any]]:
    best: dict[str, tuple[float, list[float]]] = {}
    for _ in range(ROUNDS):
        for kind, target in targets.items():
            if target is None:
                continue

            def make(t: Any = target) -> Client:
                return Client(t, mode=mode)

            measured = _measure(make, transport, concurrency)
            if kind not in best or measured[0] < best[kind][0]:
                best[kind] = measured
    return [
        {"bench": "proxy_calls", **call_row(kind, transport, era, concurrency, *best[kind])}
        for kind in targets
        if kind in best
    ]


def _mcp_proxy() -> str | None:
    found = os.environ.get("FINMCP_BENCH_MCP_PROXY") or shutil.which("mcp-proxy")
    return found if found and Path(found).exists() else None


def _ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    index = {(r["server"], r["transport"], r["era"], r["concurrency"]): r for r in rows}
    for (kind, transport, era, concurrency), row in index.items():
        if kind == "direct":
            continue
        direct = index.get(("direct", transport, era, concurrency))
        if direct is None:
            continue
        ratio = {
            "bench": "proxy_vs_direct",
            "proxy": kind,
            "transport": transport,
            "era": era,
            "concurrency": concurrency,
            "slowdown": round(direct["calls_per_s"] / row["calls_per_s"], 3),
            "added_p50_ms": round(row["p50_ms"] - direct["p50_ms"], 2),
            "direct_calls_per_s": direct["calls_per_s"],
            "proxied_calls_per_s": row["calls_per_s"],
        }
        theirs = index.get(("mcp-proxy", transport, era, concurrency))
        if kind == "finmcp-proxy" and theirs is not None:
            ratio["ours_over_theirs"] = round(row["calls_per_s"] / theirs["calls_per_s"], 3)
        out.append(ratio)
    return out


def run() -> list[dict[str, Any]]:
    """Rows for direct, finmcp-proxy (and mcp-proxy when installed), then the ratio rows."""
    py = sys.executable
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-proxy-") as tmp:
        rec = Path(tmp) / "recordings.sqlite"
        with RecordingStore.open(rec) as store:
            for code in CODES:
                store.put_response(
                    "qieman79", TOOL, {"fundNameOrCode": code}, recorded_result(code), "imported:bench"
                )
        server_args = ["--miss", "strict", "--recordings", str(rec), "--latency", "none"]
        db = Path(tmp) / "runs.sqlite"
        with (
            ServerProcess(server_args) as server,
            ProxyProcess(["--upstream", server.url, "--db", str(db)]) as proxy,
            ProxyProcess(["--upstream", server.url], module="bench.relay") as relay,
        ):
            relay_url = (
                relay.base + "/" + server.url.split("/", 3)[3]
            )  # bytes pass as sent: the server's path
            direct_stdio = StdioServerParameters(
                command=py, args=["-m", "server", "--transport", "stdio", *server_args]
            )
            upstream_cmd = " ".join([py, "-m", "server", "--transport", "stdio", *server_args])
            proxied_stdio = StdioServerParameters(
                command=py,
                args=["-m", "proxy", "--transport", "stdio", "--upstream-cmd", upstream_cmd, "--db", str(db)],
            )
            theirs_bin = _mcp_proxy()
            theirs = (
                StdioServerParameters(
                    command=theirs_bin,
                    args=["--log-level", "WARNING", "--transport", "streamablehttp", server.url],
                )
                if theirs_bin
                else None
            )
            ours_stdio_http = StdioServerParameters(
                command=py,
                args=["-m", "proxy", "--transport", "stdio", "--upstream", server.url, "--db", str(db)],
            )
            for era, mode in ERAS:
                for concurrency in (1, 8):
                    rows += _best(
                        {
                            "direct": server.url,
                            "finmcp-proxy": proxy.tagged("bench", f"http-{mode}"),
                            "tcp-relay": relay_url,
                        },
                        "http",
                        era,
                        mode,
                        concurrency,
                    )
                    rows += _best(
                        {"direct": direct_stdio, "finmcp-proxy": proxied_stdio},
                        "stdio",
                        era,
                        mode,
                        concurrency,
                    )
                    if theirs is not None and mode == "legacy":
                        rows += _best(
                            {"direct": server.url, "finmcp-proxy": ours_stdio_http, "mcp-proxy": theirs},
                            "stdio->http",
                            era,
                            mode,
                            concurrency,
                        )
    if _mcp_proxy() is None:
        rows.append(
            {
                "bench": "mcp_proxy",
                "note": "mcp-proxy not found (FINMCP_BENCH_MCP_PROXY or PATH): not measured",
            }
        )
    return rows + _ratios([r for r in rows if r.get("bench") == "proxy_calls"])
