"""One hostile upstream answer against everyone else: the proxy's peak memory and other clients' p99.

Issue 30 (items 4-6): while one client receives a hostile answer through ``finmcp-proxy``, four other
clients keep calling a small tool on the same upstream through the same proxy (raw keep-alive HTTP,
one thread each). Scenarios (the hostile upstreams are ``bench/big_answer.py`` and
``bench/hostile_sse.py``, on 127.0.0.1):

- ``json_call``: a ``tools/call`` answered with a ``HOSTILE_BYTES`` (200 MB) JSON body;
- ``json_read``: a ``resources/read`` answered with the same body (not a call: streamed whole);
- ``sse_oversized``: a ``tools/call`` answered with one SSE event of ``SSE_EVENT_BYTES`` (80 MiB);
- ``sse_unterminated``: a ``tools/call`` answered with an SSE event that never ends (1 MiB every 10 ms,
  ``HOSTILE_BYTES`` in all).

The hostile client reads its answer to the end (or for ``WINDOW_S`` at most). The baseline is the
same other-client traffic, for as long, through a fresh proxy with no hostile client, in the same
run. Each row: the proxy's peak RSS (``VmHWM``) and the other clients' p99 with and without the
hostile client, their ratios, and whether the goals hold (peak RSS <= ``GOAL_RSS_MIB``, p99 <=
``GOAL_P99_MS``). ``normal`` rows: the other clients alone, through the proxy and direct to the
upstream, calls/s and p50 (``slowdown`` = direct calls/s over proxied calls/s), so a change that
moves normal traffic shows beside the hostile figures.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.big_answer import BigAnswerUpstream
from bench.hostile_sse import HostileSseUpstream
from finmcp.proxy.testing import ProxyProcess

MiB = 1024 * 1024
HOSTILE_BYTES = 200 * 1000 * 1000
SSE_EVENT_BYTES = 80 * MiB
OTHER_CLIENTS = 4
WINDOW_S = 30.0
"""Longest a hostile client reads before it gives up (the scenario's end)."""
MIN_WINDOW_S = 3.0
"""Other clients keep calling at least this long (a refused answer ends at once)."""
NORMAL_S = 5.0
GOAL_RSS_MIB = 600.0
GOAL_P99_MS = 500.0
MODERN = "2026-07-28"


def _post(rid: int, method: str, params: dict[str, Any]) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()
    head = (
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {MODERN}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def _call(rid: int, tool: str) -> bytes:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "bench-hostile", "version": "0"},
    }
    return _post(rid, "tools/call", {"name": tool, "arguments": {}, "_meta": meta})


def _address(url: str) -> tuple[str, int]:
    host, port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    return host, int(port)


def _read_response(sock: socket.socket, buffer: bytearray, deadline: float) -> tuple[int, int]:
    """Read one whole response (Content-Length, chunked, or until close/deadline): (status, body bytes)."""
    while b"\r\n\r\n" not in buffer:
        if time.monotonic() > deadline:
            return 0, 0
        data = sock.recv(1 << 20)
        if not data:
            return 0, 0
        buffer += data
    end = buffer.index(b"\r\n\r\n") + 4
    lines = bytes(buffer[:end]).split(b"\r\n")
    status = int(lines[0].split()[1])
    headers = {
        k.strip().lower(): v.strip() for k, _, v in (line.partition(b":") for line in lines[1:] if line)
    }
    del buffer[:end]
    if b"content-length" in headers:
        need = int(headers[b"content-length"])
        got = 0
        while got < need:
            if buffer:
                take = min(need - got, len(buffer))
                del buffer[:take]
                got += take
                continue
            if time.monotonic() > deadline:
                break
            data = sock.recv(1 << 20)
            if not data:
                break
            buffer += data
        return status, got
    got = 0
    while True:  # chunked (or until close): stop at the last chunk's blank line
        if buffer.endswith(b"0\r\n\r\n") or time.monotonic() > deadline:
            got += len(buffer)
            buffer.clear()
            return status, got
        if len(buffer) > 16:
            got += len(buffer) - 16
            del buffer[:-16]
        data = sock.recv(1 << 20)
        if not data:
            return status, got + len(buffer)
        buffer += data


class Others:
    """``OTHER_CLIENTS`` threads calling ``echo`` on keep-alive connections until stopped; their latencies."""

    def __init__(self, url: str) -> None:
        self.address = _address(url)
        self.latencies: list[float] = []
        self.errors = 0
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._loop, args=(i,), daemon=True) for i in range(OTHER_CLIENTS)
        ]

    def __enter__(self) -> Others:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(15)

    def _loop(self, index: int) -> None:
        rid = index * 10_000_000
        buffer = bytearray()
        sock = socket.create_connection(self.address)
        try:
            while not self._stop.is_set():
                rid += 1
                started = time.perf_counter()
                sock.sendall(_call(rid, "echo"))
                status, _ = _read_response(sock, buffer, time.monotonic() + 15)
                elapsed = time.perf_counter() - started
                self.latencies.append(elapsed)
                if status != 200:
                    self.errors += 1
                    sock.close()
                    buffer.clear()
                    sock = socket.create_connection(self.address)
        finally:
            sock.close()


def _peak_rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for pid {pid}")


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else float("nan")


def _hostile(url: str, request: bytes) -> tuple[int, int, float]:
    """Send the hostile request, read its answer: (status, body bytes, seconds)."""
    started = time.monotonic()
    sock = socket.create_connection(_address(url))
    try:
        sock.sendall(request)
        status, size = _read_response(sock, bytearray(), started + WINDOW_S)
    except OSError:
        status, size = 0, 0
    finally:
        sock.close()
    return status, size, time.monotonic() - started


@contextlib.contextmanager
def _proxy(upstream: str, tmp: Path, name: str) -> Iterator[ProxyProcess]:
    with ProxyProcess(["--upstream", upstream, "--db", str(tmp / f"{name}.sqlite")]) as proxy:
        yield proxy


def _scenario(name: str, upstream: Any, request: bytes, tmp: Path) -> dict[str, Any]:
    with upstream:
        with _proxy(upstream.url, tmp, f"{name}-base") as proxy:
            assert proxy.process is not None
            with Others(proxy.url) as base:
                time.sleep(MIN_WINDOW_S)
            base_rss = _peak_rss_mib(proxy.process.pid)
        with _proxy(upstream.url, tmp, name) as proxy:
            assert proxy.process is not None
            with Others(proxy.url) as others:
                status, size, seconds = _hostile(proxy.url, request)
                if seconds < MIN_WINDOW_S:
                    time.sleep(MIN_WINDOW_S - seconds)
            rss = _peak_rss_mib(proxy.process.pid)
    p99, base_p99 = _p(others.latencies, 0.99), _p(base.latencies, 0.99)
    return {
        "bench": "hostile",
        "scenario": name,
        "hostile_status": status,
        "hostile_body_bytes": size,
        "hostile_seconds": round(seconds, 2),
        "peak_rss_mib": round(rss, 1),
        "baseline_peak_rss_mib": round(base_rss, 1),
        "rss_ratio": round(rss / base_rss, 2),
        "others_calls": len(others.latencies),
        "others_errors": others.errors,
        "others_p99_ms": round(p99, 2),
        "others_max_ms": round(max(others.latencies, default=0) * 1000, 1),
        "baseline_p99_ms": round(base_p99, 2),
        "p99_ratio": round(p99 / base_p99, 2) if base_p99 else None,
        "goal_rss_mib": GOAL_RSS_MIB,
        "goal_p99_ms": GOAL_P99_MS,
        "met": rss <= GOAL_RSS_MIB and p99 <= GOAL_P99_MS,
    }


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (``/proc/PID/stat``)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _normal(tmp: Path) -> list[dict[str, Any]]:
    """The other clients alone: direct to the upstream and through the proxy, interleaved, best of two;
    and the proxy's CPU time per call (less sensitive to a busy machine than calls/s)."""
    best: dict[str, tuple[float, list[float]]] = {}
    cpu_per_call: list[float] = []
    with BigAnswerUpstream(10) as upstream, _proxy(upstream.url, tmp, "normal") as proxy:
        assert proxy.process is not None
        for _ in range(2):
            for kind, url in (("direct", upstream.url), ("proxy", proxy.url)):
                cpu = _cpu_s(proxy.process.pid)
                with Others(url) as others:
                    time.sleep(NORMAL_S)
                if kind == "proxy":
                    cpu_per_call.append((_cpu_s(proxy.process.pid) - cpu) / len(others.latencies))
                rate = len(others.latencies) / NORMAL_S
                if kind not in best or rate > best[kind][0]:
                    best[kind] = (rate, others.latencies)
    direct, proxied = best["direct"], best["proxy"]
    return [
        {
            "bench": "hostile",
            "scenario": "normal",
            "clients": OTHER_CLIENTS,
            "direct_calls_per_s": round(direct[0], 1),
            "proxy_calls_per_s": round(proxied[0], 1),
            "slowdown": round(direct[0] / proxied[0], 2),
            "direct_p50_ms": round(statistics.median(direct[1]) * 1000, 3),
            "proxy_p50_ms": round(statistics.median(proxied[1]) * 1000, 3),
            "proxy_p99_ms": round(_p(proxied[1], 0.99), 3),
            "proxy_cpu_us_per_call": round(min(cpu_per_call) * 1e6, 1),
        }
    ]


SCENARIOS: dict[str, Callable[[], tuple[Any, bytes]]] = {
    "json_call": lambda: (BigAnswerUpstream(HOSTILE_BYTES), _call(1, "big")),
    "json_read": lambda: (BigAnswerUpstream(HOSTILE_BYTES), _post(1, "resources/read", {"uri": "x://big"})),
    "sse_oversized": lambda: (
        HostileSseUpstream("oversized", event_bytes=SSE_EVENT_BYTES),
        _call(1, "hostile"),
    ),
    "sse_unterminated": lambda: (
        HostileSseUpstream("unterminated", piece_bytes=MiB, interval_ms=10, total_bytes=HOSTILE_BYTES),
        _call(1, "hostile"),
    ),
}


def run(only: list[str] | None = None) -> list[dict[str, Any]]:
    """Every scenario (or those named), then the normal-traffic rows."""
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-hostile-") as tmp:
        for name, make in SCENARIOS.items():
            if only and name not in only:
                continue
            upstream, request = make()
            rows.append(_scenario(name, upstream, request, Path(tmp)))
        if not only or "normal" in only:
            rows += _normal(Path(tmp))
    return rows


if __name__ == "__main__":  # python -m bench.bench_hostile [SCENARIO ...]
    import sys

    for row in run(sys.argv[1:] or None):
        print(json.dumps(row))
