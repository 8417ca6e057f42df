"""Proxies ship their SQLite outbox to one PostgreSQL: exact counts through load, SIGKILL and outages.

Real processes on loopback: a ``finmcp-server`` replaying recorded answers, ``finmcp-proxy --ship-to``
processes (HTTP and stdio), raw 2026-era clients, and the session's throwaway PostgreSQL cluster. Every
test compares PostgreSQL with the proxies' own SQLite files row for row, so a lost, duplicated or
stale row fails it. The URL carries a password (the test cluster trusts loopback, so any password
works): it must never show in ``/healthz``, logs or stored rows.
"""

from __future__ import annotations

import functools
import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from finmcp.recordings import RecordingStore
from finmcp.recordings.postgres.connection import connect
from tests.support.loadgen import TOOL, record_diagnoses
from tests.support.polling import wait_for
from tests.support.processes import health
from tests.support.rpc import answers_for, headers_for, tool_call
from tests.support.stdio_lines import StdioLines

CODES = [f"{i:06d}" for i in range(1, 33)]
PASSWORD = "s3cret-ship-pw"
HANG_GUARD_S = 300  # not a speed limit: only ends a run that hangs
TABLES = ("calls", "messages", "sessions", "runs")


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    return record_diagnoses(tmp_path_factory.mktemp("rec") / "rec.sqlite", CODES, "imported:ship")


@pytest.fixture
def upstream(recordings, server_process):
    return server_process(["--miss", "strict", "--recordings", str(recordings), "--latency", "none"])


@pytest.fixture
def ship_url(postgres_url: str) -> str:
    """The test database's URL with a password in it."""
    return postgres_url.replace("postgresql://postgres@", f"postgresql://postgres:{PASSWORD}@")


# ------------------------------------------------------------------------- helpers


class Clients:
    """Raw 2026-era clients calling ``GetFundDiagnosis``; each checks every answer names its fund."""

    def __init__(self) -> None:
        self.ok = 0
        self.errors: list[str] = []
        self.stop = threading.Event()

    async def client(
        self, url: Any, sample: str, calls: int, *, pause: float = 0.0, retry: bool = False
    ) -> None:
        """``calls`` calls (or until :attr:`stop`) to ``url()``; with ``retry`` a failed call is sent again."""
        async with httpx2.AsyncClient(timeout=30) as http:
            j = 0
            while j < calls and not self.stop.is_set():
                code = CODES[j % len(CODES)]
                message = tool_call(TOOL, {"fundNameOrCode": code}, j + 1)
                try:
                    response = await http.post(
                        f"{url()}/r/ship/s/{sample}/t/0/mcp",
                        content=json.dumps(message),
                        headers=headers_for(message),
                    )
                    answers = answers_for(response.headers.get("content-type", ""), response.content, j + 1)
                    text = answers[0]["result"]["content"][0]["text"]
                    assert json.loads(text)["fundCode"] == code
                except (httpx2.HTTPError, KeyError, IndexError, AssertionError) as exc:
                    if not retry:
                        self.errors.append(f"{sample} call {j}: {type(exc).__name__}: {exc}")
                        return
                    await anyio.sleep(0.05)  # the proxy is being restarted: send it again
                    continue
                self.ok += 1
                j += 1
                if pause:
                    await anyio.sleep(pause)

    def run(self, jobs: list[tuple[Any, str, int]], **options: Any) -> None:
        """Run ``(url, sample, calls)`` clients concurrently until all are done."""

        async def main() -> None:
            with anyio.fail_after(HANG_GUARD_S):
                async with anyio.create_task_group() as tg:
                    for url, sample, calls in jobs:
                        tg.start_soon(functools.partial(self.client, url, sample, calls, **options))

        anyio.run(main)


def pg_query(url: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    conn = connect(url)
    try:
        return list(conn.execute(sql, params).fetchall())
    finally:
        conn.close()


def local_rows(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every trace row of a proxy's file, keyed like PostgreSQL's rows (local id, then the columns)."""
    with RecordingStore.open(db) as store:
        conn = store.db.conn
        return {
            "calls": conn.execute("SELECT * FROM calls ORDER BY id").fetchall(),
            "messages": conn.execute("SELECT * FROM messages ORDER BY id").fetchall(),
            "sessions": conn.execute("SELECT * FROM sessions ORDER BY session_key").fetchall(),
            "runs": conn.execute("SELECT * FROM runs ORDER BY run_id").fetchall(),
        }


def origin_of(db: Path) -> str:
    with RecordingStore.open(db) as store:
        row = store.db.conn.execute("SELECT origin FROM ship_origin").fetchone()
    return str(row[0])


def shipped_rows(url: str, origin: str) -> dict[str, list[tuple[Any, ...]]]:
    """One origin's rows in PostgreSQL, shaped like :func:`local_rows`."""
    return {
        "calls": [
            r[2:] for r in pg_query(url, "SELECT * FROM calls WHERE origin = %s ORDER BY local_id", origin)
        ],
        "messages": [
            r[2:] for r in pg_query(url, "SELECT * FROM messages WHERE origin = %s ORDER BY local_id", origin)
        ],
        "sessions": [
            r[2:]
            for r in pg_query(url, "SELECT * FROM sessions WHERE origin = %s ORDER BY session_key", origin)
        ],
    }


def assert_same_rows(url: str, db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """PostgreSQL holds exactly the proxy file's rows: nothing lost, nothing twice, every state current."""
    local = local_rows(db)
    shipped = shipped_rows(url, origin_of(db))
    for table in ("calls", "messages", "sessions"):
        assert len(shipped[table]) == len(local[table]), table
        assert shipped[table] == [tuple(row) for row in local[table]], table
    runs = {r[0] for r in pg_query(url, "SELECT run_id FROM runs")}
    assert {r[0] for r in local["runs"]} <= runs
    return local


def wait_shipped(url: str, db: Path, timeout: float = 30.0) -> None:
    """Wait until PostgreSQL holds the same rows as the file (the shipper runs behind the traffic)."""

    def same() -> bool:
        try:
            assert_same_rows(url, db)
        except AssertionError:
            return False
        return True

    wait_for(same, timeout=timeout, interval=0.2, what=f"the rows of {db.name} in PostgreSQL")


def assert_no_password(*texts: str) -> None:
    for text in texts:
        assert PASSWORD not in text


def flush(db: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "finmcp.proxy", "flush", "--db", str(db), "--ship-to", url, *extra],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def sessions_text(db: Path) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "finmcp.proxy", "sessions", "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return result.stdout


# ------------------------------------------------------------------------- tests


@pytest.mark.slow
def test_two_proxies_eight_clients_a_hundred_calls_each_land_exactly_once(
    upstream, proxy_process, children, ship_url, tmp_path
):
    dbs = [tmp_path / "p0.sqlite", tmp_path / "p1.sqlite"]
    proxies = [
        proxy_process(
            ["--upstream", upstream.url, "--db", str(db), "--ship-to", ship_url, "--log-level", "info"]
        )
        for db in dbs
    ]
    clients = Clients()
    jobs = [(lambda p=proxy: p.base, f"p{i}c{j}", 100) for i, proxy in enumerate(proxies) for j in range(8)]
    clients.run(jobs)
    assert clients.errors == [] and clients.ok == 1600

    for db in dbs:
        wait_shipped(ship_url, db)
    states = [health(proxy)["shipping"] for proxy in proxies]
    assert all(s["state"] == "shipping" and s["last_error"] is None for s in states), states
    assert all(s["target"].endswith(ship_url.rsplit("@", 1)[1]) for s in states)
    assert sum(s["shipped_rows"] for s in states) >= 1600
    stderr = [children.stop(proxy) for proxy in proxies]  # SIGTERM: ships the session ends, then exits
    for db in dbs:
        assert_same_rows(ship_url, db)
    calls = pg_query(ship_url, "SELECT origin, local_id, status, sample_id, arguments, result FROM calls")
    assert len(calls) == 1600 == len({(c[0], c[1]) for c in calls})
    assert {c[2] for c in calls} == {"ok"}
    per_sample: dict[str, int] = {}
    for _, _, _, sample, arguments, result in calls:  # each row holds the answer to its own call
        per_sample[sample] = per_sample.get(sample, 0) + 1
        code = json.loads(arguments)["fundNameOrCode"]
        assert json.loads(json.loads(result)["content"][0]["text"])["fundCode"] == code
    assert per_sample == {f"p{i}c{j}": 100 for i in range(2) for j in range(8)}
    origins = pg_query(
        ship_url, "SELECT origin, label, pending_rows, pending_runs FROM origins ORDER BY label"
    )
    assert len(origins) == 2 and {o[0] for o in origins} == {origin_of(db) for db in dbs}
    assert all(o[2] == 0 and o[3] == "[]" and "pid" in o[1] for o in origins)
    assert_no_password(json.dumps(states), *stderr, json.dumps(origins))
    assert_no_password(*(json.dumps(pg_query(ship_url, f"SELECT * FROM {t}"), default=str) for t in TABLES))


@pytest.mark.slow
def test_a_proxy_killed_mid_run_and_restarted_on_its_outbox_loses_and_duplicates_nothing(
    upstream, proxy_process, children, ship_url, tmp_path
):
    db = tmp_path / "local.sqlite"
    args = ["--upstream", upstream.url, "--db", str(db), "--ship-to", ship_url, "--ship-interval", "0.5"]
    first = proxy_process(args, killed=True)
    where = {"base": first.base}
    clients = Clients()
    runner = threading.Thread(
        target=clients.run,
        args=([(lambda: where["base"], f"c{j}", 80) for j in range(4)],),
        kwargs={"retry": True},
    )
    runner.start()
    try:
        wait_for(lambda: clients.ok, lambda ok: ok >= 120, timeout=60, what="120 answered calls")
        assert first.process is not None
        first.process.send_signal(
            signal.SIGKILL
        )  # rows committed locally but not yet shipped stay in the outbox
        first.process.wait(timeout=10)
        second = proxy_process(args)
        where["base"] = second.base
    finally:
        runner.join(HANG_GUARD_S)
    assert clients.errors == [] and clients.ok == 320
    wait_shipped(ship_url, db)
    children.stop(second)
    local = assert_same_rows(ship_url, db)  # PostgreSQL holds exactly the file's rows: none lost or doubled
    statuses = [row[13] for row in local["calls"]]
    # Every answered call is there. A call the killed proxy had answered (its row committed before the
    # answer was written) but whose answer never reached the client was sent again by that client: at
    # most one such call per client, each a second row of the same (sample, JSON-RPC id).
    assert 320 <= statuses.count("ok") <= 324
    answered = "SELECT count(DISTINCT (sample_id, jsonrpc_id)) FROM calls WHERE status = 'ok'"
    assert pg_query(ship_url, answered) == [(320,)]
    assert len(pg_query(ship_url, "SELECT DISTINCT origin FROM calls")) == 1  # the file kept its identity


@pytest.mark.slow
def test_postgres_down_for_ten_seconds_clients_see_nothing_and_every_row_arrives(
    upstream, proxy_process, children, postgres_cluster, ship_url, tmp_path
):
    db = tmp_path / "local.sqlite"
    proxy = proxy_process(["--upstream", upstream.url, "--db", str(db), "--ship-to", ship_url])
    clients = Clients()
    runner = threading.Thread(
        target=clients.run,
        args=([(lambda: proxy.base, f"c{j}", 10**6) for j in range(4)],),
        kwargs={"pause": 0.02},
    )
    runner.start()
    try:
        wait_for(lambda: health(proxy)["shipping"]["shipped_rows"], lambda n: n > 0, what="a first shipment")
        postgres_cluster.stop("immediate")
        try:
            down = wait_for(
                lambda: health(proxy)["shipping"], lambda s: s["state"] == "down", what="the shipper noticing"
            )
            time.sleep(10)
            during = health(proxy)["shipping"]
            assert during["state"] == "down" and during["outbox_pending_rows"] > 0
            assert during["pending_runs"] == ["ship"] and during["lag_seconds"] > 5
            assert clients.errors == [] and runner.is_alive()  # the proxy kept serving
        finally:
            postgres_cluster.start()
            postgres_cluster.wait_ready()
        wait_for(
            lambda: health(proxy)["shipping"]["state"], lambda s: s == "shipping", timeout=30, what="resumed"
        )
        time.sleep(0.5)
    finally:
        clients.stop.set()
        runner.join(HANG_GUARD_S)
    assert clients.errors == [] and clients.ok > 0
    wait_shipped(ship_url, db)
    after = health(proxy)["shipping"]
    stderr = children.stop(proxy)
    assert_same_rows(ship_url, db)
    assert pg_query(ship_url, "SELECT count(*) FROM calls WHERE status = 'ok'") == [(clients.ok,)]
    assert "shipping to postgresql://" in stderr and " paused: " in stderr and " resumed after " in stderr
    assert stderr.count(" paused: ") == 1 and stderr.count(" resumed after ") == 1  # one line per change
    assert_no_password(json.dumps(down), json.dumps(during), json.dumps(after), stderr)


@pytest.mark.slow
def test_stdio_proxy_ships_and_drains_at_exit(upstream, ship_url, tmp_path):
    db = tmp_path / "stdio.sqlite"
    with StdioLines(["--upstream", upstream.url], db, "--run", "ship", "--ship-to", ship_url) as proxy:
        for j in range(30):
            answer = proxy.ask(tool_call(TOOL, {"fundNameOrCode": CODES[j % len(CODES)]}, j + 1))
            assert answer["id"] == j + 1 and "result" in answer
    local = assert_same_rows(ship_url, db)  # stdin closed: the proxy shipped what was left, then exited
    assert [row[13] for row in local["calls"]] == ["ok"] * 30
    assert pg_query(ship_url, "SELECT label FROM origins")[0][0].startswith("stdio pid ")
    assert_no_password(proxy.stderr)


@pytest.mark.slow
def test_flush_drains_the_outbox_of_a_proxy_that_never_reached_postgres(
    upstream, proxy_process, postgres_cluster, ship_url, tmp_path
):
    db = tmp_path / "local.sqlite"
    nowhere = postgres_cluster.url("no_such_database").replace("postgres@", f"postgres:{PASSWORD}@")
    proxy = proxy_process(["--upstream", upstream.url, "--db", str(db), "--ship-to", nowhere], killed=True)
    Clients().run([(lambda: proxy.base, "c0", 40)])
    # the shipper failed at start, before any call; its count of waiting rows is refreshed at each
    # retry (backoff up to 2 s), so wait for the retry that sees the 40 calls
    status = wait_for(
        lambda: health(proxy)["shipping"],
        lambda s: s["state"] == "down" and s["outbox_pending_rows"] > 0,
        what="the shipper failing with rows waiting",
    )
    assert "no_such_database" in status["last_error"]
    assert_no_password(json.dumps(status))
    assert proxy.process is not None
    proxy.process.send_signal(signal.SIGKILL)
    proxy.process.wait(timeout=10)

    waiting = sessions_text(db)
    assert "outbox: " in waiting and "rows waiting to ship" in waiting and "runs ship" in waiting
    failed = flush(db, nowhere, "--timeout", "1")
    assert failed.returncode == 1 and "rows still wait" in failed.stderr
    assert_no_password(failed.stdout, failed.stderr)
    done = flush(db, ship_url)
    assert done.returncode == 0, done.stderr
    assert "the outbox is empty" in done.stdout
    assert_no_password(done.stdout, done.stderr)
    local = assert_same_rows(ship_url, db)
    assert len(local["calls"]) == 40
    assert "outbox: empty" in sessions_text(db)
    assert flush(db, ship_url).returncode == 0  # nothing left: still a success


def test_ship_to_must_be_a_postgres_url(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "proxy",
            "--upstream",
            "http://127.0.0.1:9/mcp",
            "--db",
            str(tmp_path / "x.sqlite"),
        ]
        + ["--ship-to", "http://127.0.0.1:5432/db"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2 and "expected a postgresql:// URL" in result.stderr


def test_flush_refuses_a_missing_file(tmp_path):
    result = flush(tmp_path / "none.sqlite", "postgresql://127.0.0.1:9/x")
    assert result.returncode == 2 and "finmcp-proxy flush: trace store not found:" in result.stderr
