"""How soon failures are answered and how fast the proxy comes back: the reliability suite's times.

The tests in ``tests/reliability/`` check *that* every client gets an answer (an error where the
upstream failed) and that nothing is lost; how long that takes is measured here, on this machine:

- ``refused``: an upstream that refuses connections; ms until the 502 JSON-RPC error (5 calls);
- ``timeout``: an upstream that accepts and never answers, ``--timeout 1``; s until the 504;
- ``server_killed``: 16 raw 2026-era clients through the proxy, the server SIGKILLed mid-load;
  s from the kill until each client has its error (p50 and worst);
- ``proxy_restart``: the proxy SIGKILLed mid-load, then restarted on the same trace file;
  s until it is ready, and s for 16 clients x 10 calls on it.
"""

from __future__ import annotations

import json
import socket
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2

from finmcp.proxy.testing import ProxyProcess
from finmcp.server.testing import ServerProcess

MODERN = "2026-07-28"
CLIENTS = 16
TOOL = "GetFundDiagnosis"


def _call(rid: int) -> tuple[bytes, dict[str, str]]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    params = {"name": TOOL, "arguments": {"fundNameOrCode": f"{rid % 8 + 1:06d}"}, "_meta": meta}
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": TOOL,
    }
    return json.dumps(
        {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}
    ).encode(), headers


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _timed_posts(url: str, count: int) -> list[float]:
    seconds = []
    with httpx2.Client(timeout=30) as http:
        for rid in range(count):
            body, headers = _call(rid)
            started = time.perf_counter()
            http.post(url, content=body, headers=headers)
            seconds.append(time.perf_counter() - started)
    return seconds


def _refused(db: Path) -> dict[str, Any]:
    with ProxyProcess(["--upstream", f"http://127.0.0.1:{_free_port()}/mcp", "--db", str(db)]) as proxy:
        seconds = _timed_posts(proxy.url, 5)
    p50, worst = statistics.median(seconds), max(seconds)
    return {"bench": "reliability_refused", "p50_ms": round(p50 * 1000, 1), "max_ms": round(worst * 1000, 1)}


def _timeout(db: Path) -> dict[str, Any]:
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:  # accept and never answer
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    upstream = f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
    try:
        with ProxyProcess(["--upstream", upstream, "--db", str(db), "--timeout", "1"]) as proxy:
            seconds = _timed_posts(proxy.url, 3)
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        listener.close()
    return {"bench": "reliability_timeout", "timeout_s": 1.0, "max_answer_s": round(max(seconds), 3)}


async def _load(base: str, run: str, stop_after: int | None, on_answered: Any = None) -> list[float]:
    """CLIENTS clients calling in a loop; returns, per client, the time its first failure came at."""
    failed_at: list[float] = []
    answered = 0

    async def client(index: int) -> None:
        nonlocal answered
        url = f"{base}/r/{run}/s/c{index:02d}/t/0/mcp"
        async with httpx2.AsyncClient(timeout=60) as http:
            for rid in range(1, 10_000):
                body, headers = _call(rid)
                try:
                    response = await http.post(url, content=body, headers=headers)
                    ok = response.status_code == 200 and b'"result"' in response.content
                except httpx2.HTTPError:
                    ok = False
                if not ok:
                    failed_at.append(time.perf_counter())
                    return
                answered += 1
                if on_answered is not None and answered == on_answered[0]:
                    await anyio.to_thread.run_sync(on_answered[1])
                if stop_after is not None and rid >= stop_after:
                    return

    async with anyio.create_task_group() as tg:
        for index in range(CLIENTS):
            tg.start_soon(client, index)
    return failed_at


def _server_killed(db: Path) -> dict[str, Any]:
    killed_at: list[float] = []
    with (
        ServerProcess(["--latency", "fixed:5"], wait_warm=True) as server,
        ProxyProcess(["--upstream", server.url, "--db", str(db), "--timeout", "3"]) as proxy,
    ):

        def kill() -> None:
            assert server.process is not None
            server.process.kill()
            killed_at.append(time.perf_counter())

        failed_at = anyio.run(_load, proxy.base, "srvkill", None, (64, kill))
    waits = sorted(t - killed_at[0] for t in failed_at)
    return {
        "bench": "reliability_server_killed",
        "clients": CLIENTS,
        "p50_error_s": round(statistics.median(waits), 3),
        "worst_error_s": round(waits[-1], 3),
    }


def _proxy_restart(db: Path) -> dict[str, Any]:
    with ServerProcess(["--latency", "fixed:5"], wait_warm=True) as server:
        proxy = ProxyProcess(["--upstream", server.url, "--db", str(db)]).start()

        def crash() -> None:
            if proxy.process is not None:
                proxy.process.kill()

        try:
            anyio.run(_load, proxy.base, "crash", None, (150, crash))
        finally:
            proxy.stop()
        started = time.perf_counter()
        with ProxyProcess(["--upstream", server.url, "--db", str(db)]) as again:
            ready = time.perf_counter() - started
            started = time.perf_counter()
            anyio.run(_load, again.base, "crash-resumed", 10)
            resumed = time.perf_counter() - started
    return {
        "bench": "reliability_proxy_restart",
        "ready_s": round(ready, 3),
        "resume_160_calls_s": round(resumed, 3),
    }


def run() -> list[dict[str, Any]]:
    """Measure each scenario once; print and return one row per scenario."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, measure in (("refused", _refused), ("timeout", _timeout), ("server_killed", _server_killed),
                              ("proxy_restart", _proxy_restart)):  # fmt: skip
            rows.append(measure(Path(tmp) / f"{name}.sqlite"))
    for row in rows:
        print(" ".join(f"{k}={v}" for k, v in row.items()))
    return rows


if __name__ == "__main__":
    run()
