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

Memory (issue 19, goal 4): ``proxy_soak`` sends ``SOAK_CALLS`` (10^5) 2026-era ``tools/call`` POSTs
from ``SOAK_CONNECTIONS`` raw keep-alive connections (tags cycling over ``SOAK_SAMPLES`` samples)
through ``finmcp-proxy --db`` to a canned upstream (``bench/upstream_stub.py``, so the proxy's
own speed sets the pace) and samples the proxy's RSS after the warm-up (``SOAK_WARMUP`` calls),
half-way and at the end. ``flat`` is true when the end is within ``SOAK_FLAT_MIB`` of the start.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from bench.calls import CALLS_PER_RUN, CODES, ERAS, TOOL, call_row, drive, recorded_result
from finmcp.proxy.testing import ProxyProcess
from finmcp.recordings import RecordingStore
from finmcp.server.testing import ServerProcess

ROUNDS = 2
SOAK_CALLS = 100_000
SOAK_WARMUP = 10_000
SOAK_CONNECTIONS = 8
SOAK_SAMPLES = 64
SOAK_FLAT_MIB = 2.0
"""RSS growth (MiB) from the sample after the warm-up to the end that still counts as flat."""


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


def _rss_mib(pid: int) -> float:
    """Resident set size of a process (Linux ``/proc``), MiB."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


class _SoakClient(asyncio.Protocol):
    """One keep-alive connection sending one ``tools/call`` at a time until the shared budget is spent."""

    def __init__(self, soak: _Soak, index: int) -> None:
        self.soak, self.index = soak, index
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.sent = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a stream connection gets an asyncio.Transport
        self._send()

    def _send(self) -> None:
        if not self.soak.take():
            assert self.transport is not None
            self.transport.close()
            return
        self.sent += 1
        sample = (self.index * 7 + self.sent) % SOAK_SAMPLES
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": self.sent,
                "method": "tools/call",
                "params": {
                    "name": TOOL,
                    "arguments": {"fundNameOrCode": CODES[self.sent % len(CODES)]},
                    "_meta": {
                        "io.modelcontextprotocol/protocolVersion": ERAS[0][0],
                        "io.modelcontextprotocol/clientInfo": {"name": "soak", "version": "1"},
                    },
                },
            }
        ).encode()
        head = (
            f"POST /r/soak/s/{sample}/t/0/mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n"
            "content-type: application/json\r\naccept: application/json, text/event-stream\r\n"
            f"mcp-protocol-version: {ERAS[0][0]}\r\ncontent-length: {len(body)}\r\n\r\n"
        ).encode()
        assert self.transport is not None
        self.transport.write(head + body)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return
        head = bytes(self.buffer[:end]).lower()
        if not head.startswith(b"http/1.1 200"):
            self.soak.fail(f"soak call answered {head[:40]!r}")
            return
        length = int(head.split(b"content-length:", 1)[1].split(b"\r\n", 1)[0])
        if len(self.buffer) < end + 4 + length:
            return
        del self.buffer[: end + 4 + length]
        self.soak.done()
        self._send()

    def connection_lost(self, exc: Exception | None) -> None:
        self.soak.closed()


class _Soak:
    """The shared call budget of the soak's connections, and the RSS samples taken on the way."""

    def __init__(self, pid: int, total: int) -> None:
        self.pid, self.total = pid, total
        self.issued = self.answered = 0
        self.open = SOAK_CONNECTIONS
        self.samples: dict[str, float] = {}
        self.started = 0.0
        self.finished: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.error: str | None = None

    def take(self) -> bool:
        if self.issued >= self.total or self.error is not None:
            return False
        self.issued += 1
        return True

    def done(self) -> None:
        self.answered += 1
        if self.answered == SOAK_WARMUP:
            self.samples["start"] = _rss_mib(self.pid)
            self.started = time.perf_counter()
        elif self.answered == (SOAK_WARMUP + self.total) // 2:
            self.samples["middle"] = _rss_mib(self.pid)
        elif self.answered == self.total:
            self.samples["end"] = _rss_mib(self.pid)

    def fail(self, message: str) -> None:
        self.error = self.error or message

    def closed(self) -> None:
        self.open -= 1
        if self.open == 0 and not self.finished.done():
            self.finished.set_result(None)


async def _drive_soak(host: str, port: int, pid: int, total: int) -> _Soak:
    soak = _Soak(pid, total)
    loop = asyncio.get_running_loop()
    for index in range(SOAK_CONNECTIONS):
        await loop.create_connection(functools.partial(_SoakClient, soak, index), host, port)
    await asyncio.wait_for(soak.finished, 900)
    if soak.error is not None:
        raise RuntimeError(soak.error)
    return soak


def soak(total: int = SOAK_CALLS) -> dict[str, Any]:
    """The proxy's RSS over ``total`` calls (start = after the warm-up, middle, end): one bench row."""
    with (
        tempfile.TemporaryDirectory(prefix="bench-soak-") as tmp,
        ProxyProcess([], module="bench.upstream_stub") as stub,
        ProxyProcess(["--upstream", stub.url, "--db", str(Path(tmp) / "soak.sqlite")]) as proxy,
    ):
        assert proxy.process is not None
        pid = proxy.process.pid
        before = _rss_mib(pid)
        started = time.perf_counter()
        result = asyncio.run(_drive_soak("127.0.0.1", proxy.port, pid, total))
        elapsed = time.perf_counter() - started
        measured = time.perf_counter() - result.started
        samples = result.samples
    growth = samples["end"] - samples["start"]
    return {
        "bench": "proxy_soak",
        "calls": total,
        "connections": SOAK_CONNECTIONS,
        "samples_cycled": SOAK_SAMPLES,
        "rss_idle_mib": round(before, 1),
        "rss_start_mib": round(samples["start"], 1),
        "rss_middle_mib": round(samples["middle"], 1),
        "rss_end_mib": round(samples["end"], 1),
        "growth_mib": round(growth, 2),
        "bound_mib": SOAK_FLAT_MIB,
        "flat": growth <= SOAK_FLAT_MIB,
        "calls_per_s": round((total - SOAK_WARMUP) / measured, 1),
        "seconds": round(elapsed, 1),
    }


def run() -> list[dict[str, Any]]:
    """Rows for direct, finmcp-proxy (and mcp-proxy when installed), the ratio rows, then the soak."""
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
            ServerProcess(server_args, wait_warm=True) as server,
            ProxyProcess(["--upstream", server.url, "--db", str(db)]) as proxy,
            ProxyProcess(["--upstream", server.url], module="bench.relay") as relay,
        ):
            relay_url = (
                relay.base + "/" + server.url.split("/", 3)[3]
            )  # bytes pass as sent: the server's path
            direct_stdio = StdioServerParameters(
                command=py, args=["-m", "finmcp.server", "--transport", "stdio", *server_args]
            )
            upstream_cmd = " ".join([py, "-m", "finmcp.server", "--transport", "stdio", *server_args])
            proxied_stdio = StdioServerParameters(
                command=py,
                args=[
                    "-m",
                    "finmcp.proxy",
                    "--transport",
                    "stdio",
                    "--upstream-cmd",
                    upstream_cmd,
                    "--db",
                    str(db),
                ],
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
                args=[
                    "-m",
                    "finmcp.proxy",
                    "--transport",
                    "stdio",
                    "--upstream",
                    server.url,
                    "--db",
                    str(db),
                ],
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
    return [*rows, *_ratios([r for r in rows if r.get("bench") == "proxy_calls"]), soak()]
