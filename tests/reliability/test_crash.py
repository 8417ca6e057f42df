"""Crash safety: SIGKILL the proxy or the server in the middle of a load run.

- Proxy killed: every call whose response reached a client is in the trace database (the row is
  committed before the response is forwarded), the file passes ``PRAGMA integrity_check``, and a
  restarted proxy on the same file continues the run (new rows, numbering after the old ones).
- Server killed: every client gets an error (nothing hangs), no call row stays ``pending``, and once
  the server is back on its port the same proxy serves the run again.
- Several processes logging one run into one file keep ``seq`` unique.

How soon the errors come and how long a restart takes are measurements: ``bench/bench_reliability.py``.
"""

from __future__ import annotations

import json
import multiprocessing
import random
import signal
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

import anyio
import httpx2
import pytest

from finmcp.recordings import RecordingStore
from tests.support.net import free_port
from tests.support.polling import wait_for
from tests.support.processes import SERVER_SIGTERM_EXIT, health, stderr_problems
from tests.support.rpc import answers_for, modern_headers, tool_call
from tests.support.scripts import script
from tests.support.traces import integrity, read_calls, wait_calls
from tests.support.writers import write_in_turn

CLIENTS = 16
TOOL = "GetFundDiagnosis"
HANG_GUARD_S = 120  # not a speed limit (bench/bench_reliability.py measures the times): ends a hang


def call_body(rid: int, sample: str) -> dict:
    return tool_call(TOOL, {"fundNameOrCode": f"{rid % 8 + 1:06d}"}, rid, client=f"crash-{sample}")


HEADERS = modern_headers("tools/call", TOOL)


class LoadClient:
    """Sequential raw 2026-era calls; logs each (sample, id) whose result it received."""

    def __init__(self, base: str, run: str, sample: str, first_id: int = 1) -> None:
        self.base, self.run, self.sample = base, run, sample
        self.next_id = first_id
        self.received: list[int] = []
        self.is_error: dict[int, bool] = {}  # id -> the result's isError, as the client saw it
        self.errors: list[str] = []  # the failure that ended the client's run

    async def go(self, max_calls: int) -> None:
        """Call until ``max_calls`` were answered or the first failure (which ends the client)."""
        url = f"{self.base}/r/{self.run}/s/{self.sample}/t/0/mcp"
        async with httpx2.AsyncClient(timeout=HANG_GUARD_S) as http:
            for _ in range(max_calls):
                rid = self.next_id
                self.next_id += 1
                try:
                    response = await http.post(url, json=call_body(rid, self.sample), headers=HEADERS)
                    (answer,) = answers_for(response.headers.get("content-type", ""), response.content, rid)
                except (httpx2.HTTPError, ValueError) as exc:
                    self.errors.append(repr(exc))
                    return
                if "result" in answer:
                    self.received.append(rid)
                    self.is_error[rid] = bool(answer["result"].get("isError"))
                else:
                    self.errors.append(json.dumps(answer)[:200])
                    return


def run_load(clients: list[LoadClient], max_calls: int = 400, kill_when: int = 0, kill=None) -> None:
    """Run every client concurrently; ``kill()`` (when given) fires once ``kill_when`` calls were answered.

    Each client runs until its first failure or ``max_calls``, so after a kill the run ends when every
    client has seen the crash (a client that never does ends after ``max_calls`` and fails the checks).
    """

    async def main():
        with anyio.fail_after(HANG_GUARD_S):
            async with anyio.create_task_group() as tg:
                for client in clients:
                    tg.start_soon(client.go, max_calls)
                if kill is not None:
                    while sum(len(c.received) for c in clients) < kill_when:
                        await anyio.sleep(0.01)
                    await anyio.to_thread.run_sync(kill)

    anyio.run(main)


@pytest.fixture(scope="module")
def server(module_children):
    return module_children.server(["--latency", "fixed:5"])


@pytest.mark.slow
def test_proxy_killed_mid_load_loses_no_answered_call_and_resumes(server, proxy_process, tmp_path):
    db = tmp_path / "runs.sqlite"
    proxy = proxy_process(["--upstream", server.url, "--db", str(db)], killed=True)
    clients = [LoadClient(proxy.base, "crash", f"c{i:02d}") for i in range(CLIENTS)]
    run_load(clients, kill_when=150, kill=proxy.process.kill)
    assert proxy.process.wait(5) == -signal.SIGKILL
    answered = {(c.sample, rid) for c in clients for rid in c.received}
    assert len(answered) >= 150, "the load did not get going before the kill"
    assert all(c.errors for c in clients), "every client should have seen the proxy die"
    assert integrity(db) == "ok"
    rows = read_calls(db, "crash")
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
    again = proxy_process(["--upstream", server.url, "--db", str(db)])
    resumed = [LoadClient(again.base, "crash", c.sample, c.next_id) for c in clients]
    run_load(resumed, max_calls=10)
    assert all(c.received == list(range(c.next_id - 10, c.next_id)) and not c.errors for c in resumed)
    after = read_calls(db, "crash")
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
            }
        ),
    )


class FixedPortServer:
    """``finmcp-server`` (the console script) on a fixed port, so it can come back on the same URL."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.log = tempfile.NamedTemporaryFile(prefix="finmcp-server-", suffix=".log", delete=False)  # noqa: SIM115 - closed in stop()
        command = [
            script("finmcp-server"),
            "--latency",
            "fixed:5",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ]
        self.process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log
        )
        wait_for(self._up, timeout=60, what=f"finmcp-server on port {port}")

    def _up(self) -> bool:
        assert self.process.poll() is None, f"finmcp-server exited:\n{self.stderr_text()}"
        try:
            return httpx2.get(f"http://127.0.0.1:{self.port}/healthz", timeout=1).status_code == 200
        except httpx2.HTTPError:
            return False

    def stderr_text(self) -> str:
        return Path(self.log.name).read_text(encoding="utf-8", errors="replace")

    def stop(self) -> int:
        """SIGTERM (when still running) and the exit code; the log file is removed."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait(5)
        self.log.close()
        Path(self.log.name).unlink(missing_ok=True)
        return code


@pytest.mark.slow
def test_server_killed_mid_load_gives_errors_then_the_run_resumes(proxy_process, tmp_path):
    db = tmp_path / "runs.sqlite"
    port = free_port()
    upstream = f"http://127.0.0.1:{port}/mcp"
    server = FixedPortServer(port)
    try:
        proxy = proxy_process(["--upstream", upstream, "--db", str(db), "--timeout", "3"])
        clients = [LoadClient(proxy.base, "srvcrash", f"c{i:02d}") for i in range(CLIENTS)]

        def kill() -> None:
            server.process.kill()
            server.process.wait(5)

        run_load(clients, kill_when=64, kill=kill)
        assert all(c.errors for c in clients)
        assert all("finmcp-proxy" in message for c in clients for message in c.errors)
        assert health(proxy)["status"] == "ok"
        rows = wait_calls(db, "srvcrash", 1, settled=True)  # the failures are written behind the errors
        statuses = Counter(r["status"] for r in rows)
        assert statuses["pending"] == 0 and statuses["transport_error"] >= CLIENTS
        answered = {(c.sample, rid) for c in clients for rid in c.received}
        finished = {(r["sample_id"], r["jsonrpc_id"]) for r in rows if r["status"] in ("ok", "tool_error")}
        assert answered <= finished
        killed_server = server

        server = FixedPortServer(port)  # back on the same URL: the run resumes
        resumed = [LoadClient(proxy.base, "srvcrash", c.sample, c.next_id) for c in clients]
        run_load(resumed, max_calls=5)
        assert all(len(c.received) == 5 and not c.errors for c in resumed)
    finally:
        text = server.stderr_text()
        code = server.stop()
    assert killed_server.stop() == -signal.SIGKILL
    assert code == SERVER_SIGTERM_EXIT and stderr_problems(text) == []  # the restarted server stopped cleanly
    assert integrity(db) == "ok"
    print(
        "\nserver crash figures:",
        json.dumps(
            {
                "clients": CLIENTS,
                "answered_before_kill": len(answered),
                "transport_errors": statuses["transport_error"],
            }
        ),
    )


WRITERS, WRITES = 3, 30


def test_several_writer_processes_keep_seq_unique(tmp_path):
    """Three processes (three proxies logging one run) interleave their commits: every seq is distinct."""
    db = tmp_path / "runs.sqlite"
    RecordingStore.open(db).close()  # the schema exists before the writers open the file
    schedule = [index % WRITERS for index in range(WRITES)]
    random.Random(3).shuffle(schedule)  # who commits next changes at every turn
    context = multiprocessing.get_context("spawn")
    turn, changed = context.Value("i", 0), context.Condition()
    writers = [
        context.Process(target=write_in_turn, args=(str(db), "shared", me, schedule, turn, changed))
        for me in range(WRITERS)
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(120)
    assert [w.exitcode for w in writers] == [0] * WRITERS
    calls = read_calls(db, "shared")
    assert sorted(c["seq"] for c in calls) == list(range(WRITES))
    by_seq = sorted(calls, key=lambda c: c["seq"])
    assert [int(c["sample_id"].split("-")[0][1:]) for c in by_seq] == schedule  # seq follows commit order
