"""The model door (``finmcp-proxy --llm-upstream``) against direct model calls, beside the tool door.

A fake OpenAI-compatible upstream (``tests/support/fake_llm.py``, run as a process: streamed Chat
Completions of ``CHUNKS`` text events, usage included) is called directly and through the proxy by a raw
HTTP/1.1 client (keep-alive connections, one streamed request in flight each; the client's own cost
is small and the same for both). Per concurrency (1 and 8 clients): exchanges/s, p50 time to first
token (the first body byte after the head) and p50 per exchange, against two upstreams: ``instant``
(every answer at once: the door's own cost per exchange shows whole) and ``paced`` (``PACE`` seconds
between events, ~60 ms an answer, as a fast model streams). The ratio row gives ``slowdown`` (direct
exchanges/s over proxied, the same load; target with the paced upstream at 8 clients: <= 1.10), ``added_ttft_p50_ms``
and ``added_p50_ms``, and beside them the tool door's ``tool_added_p50_ms`` (``tools/call`` through
``finmcp-proxy`` vs direct to ``finmcp-server``, measured in the same run with ``bench/raw_http.py``,
as ``bench_server`` does). Rows are interleaved and the best of ``ROUNDS`` kept.

``model_door_soak``: ``SOAK`` (10^4) streamed exchanges from 8 connections through the proxy, its
RSS sampled after ``SOAK_WARMUP`` exchanges, half-way and at the end; ``flat`` when the end is within
``SOAK_FLAT_MIB`` of the start, and every exchange has its row.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio

from bench.calls import CODES, TOOL, recorded_result
from bench.raw_http import drive_raw
from finmcp.proxy.testing import ProxyProcess
from finmcp.recordings import RecordingStore
from finmcp.recordings.plumbing.protocol import LATEST_STATELESS_VERSION
from finmcp.server.testing import ServerProcess

ROOT = Path(__file__).resolve().parent.parent
CHUNKS = 8
ROUNDS = 2
EXCHANGES = {1: 300, 8: 800}
SOAK = 10_000
SOAK_WARMUP = 1_000
SOAK_FLAT_MIB = 2.0
PACE = 0.005
"""Seconds between the paced upstream's stream events (``CHUNKS`` + 4 events: ~60 ms, a fast model)."""
UPSTREAMS = {"instant": "fake", "paced": "fake-slow"}
"""The fake's model per upstream kind: ``instant`` sends each answer at once (the door's own cost shows
whole), ``paced`` spaces its events ``PACE`` apart (what a model does; the throughput target's case)."""
PATH = "/r/{run}/s/{sample}/t/0/v1/chat/completions"


def _body(model: str) -> bytes:
    return json.dumps(
        {
            "model": model,
            "stream": True,
            "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": "What is the answer?"}],
        }
    ).encode()


class _Conn:
    """One keep-alive connection sending streamed chat requests and reading them to their last chunk."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port

    async def open(self) -> _Conn:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        return self

    async def exchange(self, path: str, body: bytes) -> tuple[float, float]:
        """``(time to first body byte, whole exchange)`` in seconds."""
        start = time.perf_counter()
        self.writer.write(
            b"POST %s HTTP/1.1\r\nhost: %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
            % (path.encode(), self.host.encode(), len(body), body)
        )
        head = await self.reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"model door bench: {head[:80]!r}")
        first = await self.reader.read(65536)
        ttft = time.perf_counter() - start
        data = first
        while not data.endswith(b"0\r\n\r\n"):
            more = await self.reader.read(65536)
            if not more:
                raise RuntimeError("model door bench: connection closed mid-stream")
            data = data[-8:] + more
        return ttft, time.perf_counter() - start

    def close(self) -> None:
        self.writer.close()


async def _drive(
    base: str,
    clients: int,
    total: int,
    on_done: Any = None,
    run: str | None = "bench",
    model: str = "fake",
) -> tuple[float, list[float], list[float]]:
    """Time ``total`` streamed exchanges from ``clients`` connections (``run``: through the door's tags)."""
    parts = urlsplit(base)
    path = "/v1/chat/completions" if run is None else PATH.replace("{run}", run)
    body = _body(model)
    conns = [await _Conn(parts.hostname or "127.0.0.1", parts.port or 80).open() for _ in range(clients)]
    ttfts: list[float] = []
    wholes: list[float] = []
    per = total // clients
    try:
        for i, conn in enumerate(conns):  # warm: one untimed exchange each
            await conn.exchange(path.format(sample=f"w{i}"), body)

        async def worker(index: int, conn: _Conn) -> None:
            for k in range(per):
                ttft, whole = await conn.exchange(path.format(sample=f"s{(index * per + k) % 64}"), body)
                ttfts.append(ttft)
                wholes.append(whole)
                if on_done is not None:
                    on_done()

        started = time.perf_counter()
        await asyncio.wait_for(asyncio.gather(*(worker(i, c) for i, c in enumerate(conns))), timeout=600)
        elapsed = time.perf_counter() - started
    finally:
        for conn in conns:
            conn.close()
    return elapsed, ttfts, wholes


def _ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 3)


class _Fake:
    def __enter__(self) -> str:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.fake_llm", "--chunks", str(CHUNKS), "--delay", str(PACE)],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.startswith("READY "):
            self.proc.kill()
            raise RuntimeError(f"fake model upstream did not start: {line!r}")
        return line.split(" ", 1)[1]

    def __exit__(self, *exc: object) -> None:
        self.proc.kill()
        self.proc.wait(5)


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def _tool_door(tmp: Path) -> dict[int, float]:
    """The tool door's added p50 (ms) per concurrency: raw ``tools/call`` through the proxy vs direct."""
    rec = tmp / "recordings.sqlite"
    with RecordingStore.open(rec) as store:
        for code in CODES:
            store.put_response(
                "qieman79", TOOL, {"fundNameOrCode": code}, recorded_result(code), "imported:bench"
            )
    args = ["--miss", "strict", "--recordings", str(rec), "--latency", "none"]
    added = {}
    with (
        ServerProcess(args, wait_warm=True) as server,
        ProxyProcess(["--upstream", server.url, "--db", str(tmp / "tools.sqlite")]) as proxy,
    ):
        for clients, total in EXCHANGES.items():
            best: dict[str, float] = {}
            for _ in range(ROUNDS):
                for kind, url in (("direct", server.url), ("proxy", proxy.tagged("bench", "s", 0))):
                    _, lat = anyio.run(drive_raw, url, LATEST_STATELESS_VERSION, clients, total)
                    best[kind] = min(best.get(kind, float("inf")), statistics.median(lat) * 1000)
            added[clients] = round(best["proxy"] - best["direct"], 3)
    return added


def _soak(base: str, pid: int, db: Path) -> dict[str, Any]:
    samples: dict[str, float] = {}
    done = [0]

    def tick() -> None:
        done[0] += 1
        if done[0] == SOAK_WARMUP:
            samples["start"] = _rss_mib(pid)
        elif done[0] == SOAK // 2:
            samples["middle"] = _rss_mib(pid)

    before = _rss_mib(pid)
    elapsed, _, _ = asyncio.run(_drive(base, 8, SOAK, tick, run="soak"))
    samples["end"] = _rss_mib(pid)
    time.sleep(0.5)
    with sqlite3.connect(db) as con:
        rows = con.execute(
            "SELECT count(*) FROM model_exchanges WHERE run_id = 'soak' AND status = 'ok'"
        ).fetchone()[0]
    return {
        "bench": "model_door_soak",
        "exchanges": SOAK,
        "rows_ok": rows,
        "exchanges_per_s": round(SOAK / elapsed, 1),
        "rss_idle_mib": round(before, 1),
        "rss_start_mib": round(samples["start"], 1),
        "rss_middle_mib": round(samples["middle"], 1),
        "rss_end_mib": round(samples["end"], 1),
        "growth_mib": round(samples["end"] - samples["start"], 2),
        "flat": samples["end"] - samples["start"] <= SOAK_FLAT_MIB,
    }


def _compare(
    upstream: str, door: str, kind: str, model: str, clients: int, total: int, tool_added: float
) -> list[dict[str, Any]]:
    """Direct and model-door rows for one upstream kind and concurrency, then their ratio row."""
    if kind == "paced":
        total = total // 4  # ~60 ms an exchange: a quarter of the instant count takes as long
    best: dict[str, tuple[float, list[float], list[float]]] = {}
    for _ in range(ROUNDS):
        for path, base in (("direct", upstream), ("model-door", door)):
            measured = asyncio.run(
                _drive(base, clients, total, run=None if path == "direct" else "bench", model=model)
            )
            if path not in best or measured[0] < best[path][0]:
                best[path] = measured
    rows = [
        {
            "bench": "model_door_exchanges",
            "upstream": kind,
            "path": path,
            "concurrency": clients,
            "exchanges_per_s": round(total / elapsed, 1),
            "ttft_p50_ms": _ms(ttfts),
            "p50_ms": _ms(wholes),
        }
        for path, (elapsed, ttfts, wholes) in best.items()
    ]
    direct, proxied = best["direct"], best["model-door"]
    rows.append(
        {
            "bench": "model_door_vs_direct",
            "upstream": kind,
            "concurrency": clients,
            "slowdown": round(proxied[0] / direct[0], 3),
            "target": "<= 1.10 (paced, 8 clients)",
            "added_ttft_p50_ms": round(_ms(proxied[1]) - _ms(direct[1]), 3),
            "added_p50_ms": round(_ms(proxied[2]) - _ms(direct[2]), 3),
            "tool_added_p50_ms": tool_added,
        }
    )
    return rows


def run() -> list[dict[str, Any]]:
    """Direct and proxied rows at 1 and 8 clients, the ratio rows (beside the tool door's), the soak."""
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-model-door-") as tmp_name:
        tmp = Path(tmp_name)
        tool_added = _tool_door(tmp)
        db = tmp / "model.sqlite"
        with (
            _Fake() as upstream,
            ProxyProcess(
                ["--upstream", "http://127.0.0.1:9/mcp", "--db", str(db), "--llm-upstream", upstream]
            ) as proxy,
        ):
            for kind, model in UPSTREAMS.items():
                for clients, total in EXCHANGES.items():
                    rows += _compare(upstream, proxy.base, kind, model, clients, total, tool_added[clients])
            assert proxy.process is not None
            rows.append(_soak(proxy.base, proxy.process.pid, db))
    return rows


if __name__ == "__main__":
    for row in run():
        print(json.dumps(row))
