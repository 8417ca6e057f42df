"""Crash safety: SIGKILL the proxy or the server in the middle of a load run.

- Proxy killed: every call whose response reached a client is in the trace database (the row is
  committed before the response is forwarded), the file passes ``PRAGMA integrity_check``, and a
  restarted proxy on the same file continues the run (new rows, numbering after the old ones).
- Server killed: every client gets an error in bounded time (nothing hangs), no call row stays
  ``pending``, and once the server is back on its port the same proxy serves the run again.
- Several processes logging one run into one file keep ``seq`` unique.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter

import anyio
import httpx2
import pytest

from proxy.testing import ProxyProcess
from recordings import RecordingStore
from server.testing import ServerProcess

MODERN = "2026-07-28"
CLIENTS = 16
ERROR_BOUND_S = 5.0  # a client must get its error within this after a crash


def call_body(rid: int, run: str, sample: str) -> dict:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": f"crash-{sample}", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {
            "name": "GetFundDiagnosis",
            "arguments": {"fundNameOrCode": f"{rid % 8 + 1:06d}"},
            "_meta": meta,
        },
    }


HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": MODERN,
    "Mcp-Method": "tools/call",
    "Mcp-Name": "GetFundDiagnosis",
}


def answer_of(response: httpx2.Response) -> dict:
    """The JSON-RPC answer of a JSON or SSE response body."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in response.text.splitlines():
            if line.startswith("data:"):
                message = json.loads(line[5:])
                if "id" in message:
                    return message
        raise AssertionError(f"no answer in {response.text!r}")
    return response.json()


class LoadClient:
    """Sequential raw 2026-era calls; logs each (sample, id) whose result it received."""

    def __init__(self, base: str, run: str, sample: str, first_id: int = 1) -> None:
        self.base, self.run, self.sample = base, run, sample
        self.next_id = first_id
        self.received: list[int] = []
        self.is_error: dict[int, bool] = {}  # id -> the result's isError, as the client saw it
        self.errors: list[tuple[float, str]] = []  # (seconds the failed request took, message)

    async def go(self, stop: anyio.Event, max_calls: int) -> None:
        url = f"{self.base}/r/{self.run}/s/{self.sample}/t/0/mcp"
        async with httpx2.AsyncClient(timeout=ERROR_BOUND_S + 5) as http:
            for _ in range(max_calls):
                if stop.is_set():
                    return
                rid = self.next_id
                self.next_id += 1
                started = time.monotonic()
                try:
                    response = await http.post(
                        url, json=call_body(rid, self.run, self.sample), headers=HEADERS
                    )
                    answer = answer_of(response)
                except (httpx2.HTTPError, ValueError, AssertionError) as exc:
                    self.errors.append((time.monotonic() - started, repr(exc)))
                    return
                if "result" in answer and answer["id"] == rid:
                    self.received.append(rid)
                    self.is_error[rid] = bool(answer["result"].get("isError"))
                else:
                    self.errors.append((time.monotonic() - started, json.dumps(answer)[:200]))
                    return


def run_load(clients: list[LoadClient], kill_when: int, kill, max_calls: int = 400) -> None:
    """Run every client concurrently; ``kill()`` fires once ``kill_when`` calls were answered (or after
    10 s); every client must then end within the error bound."""

    async def main():
        stop = anyio.Event()
        with anyio.fail_after(10 + ERROR_BOUND_S + 10):
            async with anyio.create_task_group() as tg:
                for client in clients:
                    tg.start_soon(client.go, stop, max_calls)
                with anyio.move_on_after(10):
                    while sum(len(c.received) for c in clients) < kill_when:
                        await anyio.sleep(0.01)
                await anyio.to_thread.run_sync(kill)
                await anyio.sleep(0.2)
                stop.set()

    anyio.run(main)


def integrity(db) -> str:
    with RecordingStore.open(db) as store:
        return store.db.execute("PRAGMA integrity_check").fetchone()[0]


@pytest.fixture(scope="module")
def server():
    with ServerProcess(["--latency", "fixed:5"]) as proc:
        yield proc


def test_proxy_killed_mid_load_loses_no_answered_call_and_resumes(server, tmp_path):
    db = tmp_path / "runs.sqlite"
    proxy = ProxyProcess(["--upstream", server.url, "--db", str(db)]).start()
    clients = [LoadClient(proxy.base, "crash", f"c{i:02d}") for i in range(CLIENTS)]
    try:
        run_load(clients, 150, lambda: os.kill(proxy.process.pid, signal.SIGKILL))
        proxy.process.wait(5)
    finally:
        proxy.stop()
    answered = {(c.sample, rid) for c in clients for rid in c.received}
    assert len(answered) >= 150, "the load did not get going before the kill"
    assert all(c.errors for c in clients), "every client should have seen the proxy die"
    assert all(seconds < ERROR_BOUND_S for c in clients for seconds, _ in c.errors)
    assert integrity(db) == "ok"
    with RecordingStore.open(db) as store:
        rows = store.calls("crash")
    logged = {(r["sample_id"], r["jsonrpc_id"]): r for r in rows}
    missing = answered - set(logged)
    assert not missing, f"{len(missing)} answered calls are not in the database: {sorted(missing)[:5]}"
    seen_error = {(c.sample, rid): flag for c in clients for rid, flag in c.is_error.items()}
    assert all(logged[key]["status"] == ("tool_error" if seen_error[key] else "ok") for key in answered)
    # the rows not answered are at most the calls in flight at the kill (one per client), left pending
    unanswered = [r for key, r in logged.items() if key not in answered]
    assert len(unanswered) <= CLIENTS and all(r["status"] != "transport_error" for r in unanswered)
    before_max_seq = max(r["seq"] for r in rows)

    # restart on the same file and resume the run where each client stopped
    started = time.monotonic()
    with ProxyProcess(["--upstream", server.url, "--db", str(db)]) as again:
        resumed = [LoadClient(again.base, "crash", c.sample, c.next_id) for c in clients]

        async def resume():
            stop = anyio.Event()
            async with anyio.create_task_group() as tg:
                for client in resumed:
                    tg.start_soon(client.go, stop, 10)

        anyio.run(resume)
        recovery_s = time.monotonic() - started
    assert all(c.received == list(range(c.next_id - 10, c.next_id)) and not c.errors for c in resumed)
    with RecordingStore.open(db) as store:
        after = store.calls("crash")
    new = [r for r in after if r["seq"] > before_max_seq]
    assert len(new) == CLIENTS * 10 and all(r["status"] in ("ok", "tool_error") for r in new)
    assert len({(r["session_key"], r["jsonrpc_id"]) for r in after}) == len(after)  # no duplicates
    assert integrity(db) == "ok"
    print(
        "\nproxy crash figures:",
        json.dumps(
            {
                "answered_before_kill": len(answered),
                "clients": CLIENTS,
                "lost": len(missing),
                "pending_after_kill": sum(r["status"] == "pending" for r in unanswered),
                "restart_and_resume_s": round(recovery_s, 2),
            }
        ),
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server_on(port: int, log) -> tuple[subprocess.Popen, float]:
    """``finmcp-server`` on a fixed port (so it can come back on the same URL); returns it and its start time."""
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "server", "--latency", "fixed:5", "--host", "127.0.0.1", "--port", str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx2.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return process, time.monotonic() - started
        except httpx2.HTTPError:
            time.sleep(0.05)
    process.kill()
    raise AssertionError("finmcp-server did not come up")


def test_server_killed_mid_load_gives_errors_then_the_run_resumes(tmp_path):
    db = tmp_path / "runs.sqlite"
    port = free_port()
    log = open(tmp_path / "server.log", "wb")  # noqa: SIM115 - closed below
    upstream = f"http://127.0.0.1:{port}/mcp"
    server, _ = start_server_on(port, log)
    try:
        with ProxyProcess(["--upstream", upstream, "--db", str(db), "--timeout", "3"]) as proxy:
            clients = [LoadClient(proxy.base, "srvcrash", f"c{i:02d}") for i in range(CLIENTS)]
            run_load(clients, 64, lambda: (server.kill(), server.wait(5)))
            assert all(c.errors for c in clients)
            worst = max(seconds for c in clients for seconds, _ in c.errors)
            assert worst < ERROR_BOUND_S, f"a client waited {worst:.2f} s for its error"
            assert all("finmcp-proxy" in message for c in clients for _, message in c.errors)
            assert httpx2.get(proxy.base + "/healthz", timeout=2).json()["status"] == "ok"
            time.sleep(0.3)
            with RecordingStore.open(db) as store:
                rows = store.calls("srvcrash")
            statuses = Counter(r["status"] for r in rows)
            assert statuses["pending"] == 0 and statuses["transport_error"] >= CLIENTS
            answered = {(c.sample, rid) for c in clients for rid in c.received}
            finished = {
                (r["sample_id"], r["jsonrpc_id"]) for r in rows if r["status"] in ("ok", "tool_error")
            }
            assert answered <= finished

            server, boot_s = start_server_on(port, log)  # back on the same URL: the run resumes
            resumed = [LoadClient(proxy.base, "srvcrash", c.sample, c.next_id) for c in clients]

            async def resume():
                stop = anyio.Event()
                async with anyio.create_task_group() as tg:
                    for client in resumed:
                        tg.start_soon(client.go, stop, 5)

            started = time.monotonic()
            anyio.run(resume)
            resume_s = time.monotonic() - started
            assert all(len(c.received) == 5 and not c.errors for c in resumed)
    finally:
        server.kill()
        server.wait(5)
        log.close()
    assert integrity(db) == "ok"
    print(
        "\nserver crash figures:",
        json.dumps(
            {
                "clients": CLIENTS,
                "answered_before_kill": len(answered),
                "transport_errors": statuses["transport_error"],
                "worst_error_s": round(worst, 2),
                "server_restart_s": round(boot_s, 2),
                "resume_80_calls_s": round(resume_s, 2),
            }
        ),
    )


def test_several_writer_processes_keep_seq_unique(tmp_path):
    """Two stores on one file (two proxies logging one run) interleave calls: every seq is distinct."""
    db = tmp_path / "runs.sqlite"
    first, second = RecordingStore.open(db), RecordingStore.open(db)
    try:
        for index in range(20):
            store = first if index % 3 else second
            with store.transaction():
                store.begin_call(tool="T", arguments={}, run_id="shared", sample_id=str(index))
    finally:
        first.close()
        second.close()
    with RecordingStore.open(db) as store:
        seqs = [c["seq"] for c in store.calls("shared")]
    assert sorted(seqs) == list(range(20))
