"""SDK client (both eras) → finmcp-proxy (HTTP side) → finmcp-server, all real processes on loopback."""

from __future__ import annotations

import json
import time

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from proxy.testing import ProxyProcess
from recordings import RecordingStore
from server.testing import ServerProcess

MODES = ["auto", "legacy"]
ERA = {"auto": "2026-07-28", "legacy": "handshake"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def upstream():
    with ServerProcess(["--latency", "fixed:40"]) as proc:
        yield proc


@pytest.fixture(scope="module")
def slow_upstream():
    with ServerProcess(["--latency", "fixed:1500"]) as proc:
        yield proc


@pytest.fixture(scope="module")
def proxy(upstream, tmp_path_factory):
    db = tmp_path_factory.mktemp("proxy") / "runs.sqlite"
    with ProxyProcess(["--upstream", upstream.url, "--db", str(db)]) as proc:
        proc.db = db
        yield proc


def read_calls(db, run, sample=None, expect=None, timeout=5.0):
    """Call rows of a run (waits until ``expect`` rows exist: message rows lag, call rows never do)."""
    deadline = time.monotonic() + timeout
    while True:
        with RecordingStore.open(db) as store:
            calls = store.calls(run, sample)
        if expect is None or len(calls) >= expect or time.monotonic() > deadline:
            return calls
        time.sleep(0.05)


def read_messages(db, run, predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while True:
        with RecordingStore.open(db) as store:
            rows = [m for m in store.messages(run_id=run) if predicate(m)]
        if rows or time.monotonic() > deadline:
            return rows
        time.sleep(0.05)


# ---------------------------------------------------------------- tags, groups, exactly once


@pytest.mark.parametrize("mode", MODES)
def test_calls_logged_once_with_tags_and_inferred_groups(proxy, mode):
    run = f"infer-{mode}"

    async def main():
        async with Client(proxy.tagged(run, "s1", 0), mode=mode) as client:
            await client.list_tools()  # warm the client (tool cache, connections): the calls leave together
            async with anyio.create_task_group() as tg:
                for _ in range(3):  # one parallel group of three
                    tg.start_soon(client.call_tool, "GetCurrentTime", {})
        async with Client(proxy.tagged(run, "s1", 1), mode=mode) as client:
            await client.call_tool("GetCurrentTime", {})
            await anyio.sleep(0.15)  # think time beyond --group-gap-ms: a new group
            await client.call_tool("GetCurrentTime", {})
            result = await client.call_tool("GetCurrentTime", {})  # right after: still a new group?
            return result

    anyio.run(main)
    calls = read_calls(proxy.db, run, expect=6)
    assert len(calls) == 6
    assert {c["sample_id"] for c in calls} == {"s1"}
    assert all(c["status"] == "ok" and c["tool"] == "GetCurrentTime" for c in calls)
    assert len({(c["session_key"], json.dumps(c["jsonrpc_id"]), c["turn"]) for c in calls}) == 6
    turn0 = [c for c in calls if c["turn"] == 0]
    turn1 = [c for c in calls if c["turn"] == 1]
    assert [c["call_group"] for c in turn0] == [0, 0, 0]
    assert sorted(c["group_source"] for c in turn0) == ["gap", "overlap", "overlap"]
    # sequential calls: the 150 ms pause opens group 1; the next call follows within the 30 ms gap
    assert [c["call_group"] for c in turn1] == [0, 1, 1]
    assert all(c["protocol_version"] for c in calls) and all(c["client_name"] == "mcp" for c in calls)
    time.sleep(0.2)  # session rows are written behind the traffic
    with RecordingStore.open(proxy.db) as store:
        sessions = {s["session_key"]: s for s in store.sessions(run)}
    assert {s["era"] for s in sessions.values()} == {ERA[mode]}


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_both_event_loops_forward_and_log_every_call(upstream, tmp_path, loop):
    db = tmp_path / "runs.sqlite"
    with ProxyProcess(["--upstream", upstream.url, "--db", str(db), "--loop", loop]) as proxy:
        assert f"loop {loop}" in proxy.stderr_text()

        async def main():
            for mode in MODES:
                tagged = proxy.tagged(f"loop-{mode}", "s1", 0)
                async with Client(tagged, mode=mode) as client, anyio.create_task_group() as tg:
                    for _ in range(4):
                        tg.start_soon(client.call_tool, "GetCurrentTime", {})

        anyio.run(main)
        assert httpx2.get(proxy.base + "/healthz").json()["loop"] == loop
        for mode in MODES:
            calls = read_calls(db, f"loop-{mode}", expect=4)
            assert [c["status"] for c in calls] == ["ok"] * 4
            assert [c["call_group"] for c in calls] == [0] * 4


@pytest.mark.parametrize("mode", MODES)
def test_explicit_group_tags_win(proxy, mode):
    run = f"explicit-{mode}"

    async def main():
        async with Client(proxy.tagged(run, "s2", 0), mode=mode) as client:
            for label in ("a", "a", "b", "a"):  # sequential, but tagged: a, a, b, a
                await client.call_tool("GetCurrentTime", {}, meta={"io.finmcp/group": label})
            async with anyio.create_task_group() as tg:  # concurrent, but tagged apart
                for label in ("c", "d"):
                    tg.start_soon(
                        lambda lab=label: client.call_tool(
                            "GetCurrentTime", {}, meta={"io.finmcp/group": lab}
                        )
                    )

    anyio.run(main)
    calls = read_calls(proxy.db, run, expect=6)
    assert all(c["group_source"] == "explicit" for c in calls)
    assert [c["call_group"] for c in calls[:4]] == [0, 0, 1, 0]
    assert sorted(c["call_group"] for c in calls[4:]) == [2, 3]


def test_header_tags_override_the_path(proxy):
    async def main():
        tags = {"X-Finmcp-Run": "hdr", "X-Finmcp-Sample": "h1", "X-Finmcp-Turn": "3"}
        async with httpx2.AsyncClient(headers=tags) as http:
            transport = streamable_http_client(proxy.tagged("path-run", "p1", 0), http_client=http)
            async with Client(transport, mode="auto") as client:
                await client.call_tool("GetCurrentTime", {})

    anyio.run(main)
    calls = read_calls(proxy.db, "hdr", expect=1)
    assert [(c["sample_id"], c["turn"]) for c in calls] == [("h1", 3)]
    assert read_calls(proxy.db, "path-run") == []


def test_upstream_session_id_is_what_the_client_sees(proxy, upstream):
    with httpx2.Client(timeout=10) as http:
        init = http.post(proxy.tagged("sid"), json=INIT, headers=JSON_HEADERS)
        assert init.status_code == 200
        sid = init.headers["mcp-session-id"]
        headers = {**JSON_HEADERS, "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert http.post(proxy.tagged("sid"), json=note, headers=headers).status_code == 202
        # the same id works on the upstream directly: it is the upstream's own session id
        listed = http.post(
            upstream.url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=headers
        )
        assert listed.status_code == 200 and "GetCurrentTime" in listed.text
        assert http.delete(proxy.tagged("sid"), headers=headers).status_code in (200, 204)
    deadline = time.monotonic() + 5
    while True:
        with RecordingStore.open(proxy.db) as store:
            session = next((s for s in store.sessions("sid") if s["session_key"] == sid), None)
        if (session and session["ended"]) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert session is not None and session["ended"]
    assert session["client_name"] == "raw" and session["protocol_version"] == "2025-11-25"


# ---------------------------------------------------------------- progress, cancellation, failures


def test_a_call_in_flight_is_already_on_disk_as_pending(slow_upstream, tmp_path):
    db = tmp_path / "runs.sqlite"
    with ProxyProcess(["--upstream", slow_upstream.url, "--db", str(db)]) as proxy:
        seen = []

        async def watch():
            while not seen:
                await anyio.sleep(0.05)
                seen.extend(c["status"] for c in read_calls(db, "inflight"))

        async def main():
            tagged = proxy.tagged("inflight", "p", 0)
            async with Client(tagged, mode="auto") as client, anyio.create_task_group() as tg:
                tg.start_soon(watch)
                result = await client.call_tool("GetCurrentTime", {})  # 1.5 s upstream latency
            return result

        assert not anyio.run(main).is_error
        assert seen == ["pending"]  # written while the upstream worked, long before the answer
        assert [c["status"] for c in read_calls(db, "inflight")] == ["ok"]


def test_a_locked_trace_database_holds_answers_but_not_the_proxy(upstream, tmp_path):
    import sqlite3

    db = tmp_path / "runs.sqlite"
    with ProxyProcess(["--upstream", upstream.url, "--db", str(db)]) as proxy:
        other = sqlite3.connect(db, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another program keeps the write lock
        answered = []

        async def call():
            async with Client(proxy.tagged("locked", "s", 0), mode="auto") as client:
                answered.append(await client.call_tool("GetCurrentTime", {}))

        async def main():
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await anyio.sleep(0.6)
                started = time.monotonic()
                health = httpx2.get(proxy.base + "/healthz", timeout=5).json()
                assert time.monotonic() - started < 0.5  # the proxy still serves while rows wait
                assert not answered  # the call's answer waits for its committed row
                assert health["pending"] == 0 and health["calls"] == 1
                other.execute("COMMIT")

        anyio.run(main)
        other.close()
        assert len(answered) == 1 and not answered[0].is_error
        assert [c["status"] for c in read_calls(db, "locked")] == ["ok"]


@pytest.mark.parametrize("mode", MODES)
def test_progress_and_cancellation_pass_through(slow_upstream, tmp_path, mode):
    db = tmp_path / "runs.sqlite"
    with ProxyProcess(["--upstream", slow_upstream.url, "--db", str(db)]) as proxy:
        progress = []
        before = slow_upstream.health()["calls"]["finmcp65"].get("cancelled", 0)

        async def on_progress(value, total, message):
            progress.append(value)

        async def main():
            async with Client(proxy.tagged("slow", "p", 0), mode=mode) as client:
                result = await client.call_tool("GetCurrentTime", {}, progress_callback=on_progress)
                assert not result.is_error
                with anyio.move_on_after(0.4):
                    await client.call_tool("GetCurrentTime", {})
                await anyio.sleep(0.3)

        anyio.run(main)
        assert progress, "no notifications/progress reached the client"
        deadline = time.monotonic() + 5
        while (
            slow_upstream.health()["calls"]["finmcp65"].get("cancelled", 0) <= before
            and time.monotonic() < deadline
        ):
            time.sleep(0.05)
        assert slow_upstream.health()["calls"]["finmcp65"].get("cancelled", 0) > before
    calls = read_calls(db, "slow")
    assert [c["status"] for c in calls] == ["ok", "cancelled"]
    kinds = read_messages(db, "slow", lambda m: m["method"] == "notifications/progress")
    assert kinds and all(m["direction"] == "s2c" for m in kinds)


@pytest.mark.parametrize("mode", MODES)
def test_upstream_killed_mid_run_gives_errors_and_logged_failures(tmp_path, mode):
    db = tmp_path / "runs.sqlite"
    server = ServerProcess(["--latency", "fixed:800"]).start()
    try:
        with ProxyProcess(["--upstream", server.url, "--db", str(db), "--timeout", "10"]) as proxy:

            async def main():
                async with Client(proxy.tagged("killed", "k", 0), mode=mode) as client:
                    await client.call_tool("GetCurrentTime", {})

                    async def kill_soon():
                        await anyio.sleep(0.3)
                        server.process.kill()

                    errors = []
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(kill_soon)
                        with anyio.fail_after(8):
                            try:
                                await client.call_tool("GetCurrentTime", {})  # in flight when killed
                            except MCPError as exc:
                                errors.append(exc)
                    with anyio.fail_after(8):
                        try:
                            await client.call_tool("GetCurrentTime", {})  # upstream gone
                        except MCPError as exc:
                            errors.append(exc)
                    return errors

            errors = anyio.run(main)
    finally:
        server.stop()
    assert len(errors) == 2 and all("finmcp-proxy" in str(e) for e in errors)
    calls = read_calls(db, "killed")
    assert [c["status"] for c in calls] == ["ok", "transport_error", "transport_error"]
    assert all(c["rpc_error"]["message"] for c in calls[1:])


def test_unreachable_upstream_answers_a_jsonrpc_error(tmp_path):
    db = tmp_path / "runs.sqlite"
    with ProxyProcess(["--upstream", "http://127.0.0.1:9/mcp", "--db", str(db)]) as proxy:
        body = {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}
        with httpx2.Client(timeout=10) as http:
            response = http.post(proxy.url, json=body, headers=JSON_HEADERS)
        assert response.status_code == 502
        answer = response.json()
        assert answer["id"] == 7 and answer["error"]["code"] == -32000
        assert "unreachable" in answer["error"]["message"]

        async def main():
            with anyio.fail_after(10):
                async with Client(proxy.url, mode="auto"):
                    pass

        with pytest.raises(Exception):  # noqa: B017 - the SDK wraps it; what matters is: no hang
            anyio.run(main)


# ---------------------------------------------------------------- bad input, security, redaction


def test_bad_requests_get_clear_errors_and_are_logged(proxy, upstream):
    with httpx2.Client(timeout=10) as http:
        bad_json = http.post(proxy.tagged("bad"), content=b"{not json", headers=JSON_HEADERS)
        assert bad_json.status_code >= 400  # the upstream's own answer, passed through
        text_type = http.post(proxy.tagged("bad"), content=b"hello", headers={"Content-Type": "text/plain"})
        assert text_type.status_code >= 400
        bad_tag = http.post(proxy.base + "/r/bad/t/one/mcp", json=INIT, headers=JSON_HEADERS)
        assert (
            bad_tag.status_code == 400
            and "turn tag 'one' is not an integer" in bad_tag.json()["error"]["message"]
        )
        huge = http.post(proxy.tagged("bad"), content=b"[" + b"1," * 3_000_000 + b"1]", headers=JSON_HEADERS)
        assert huge.status_code == 413
        assert http.get(proxy.base + "/healthz").json()["status"] == "ok"  # still alive
    invalid = read_messages(proxy.db, "bad", lambda m: m["kind"] == "invalid")
    assert any(m["body"] == "{not json" for m in invalid)


def test_host_origin_and_token_checks(upstream, tmp_path):
    db = tmp_path / "runs.sqlite"
    args = ["--upstream", upstream.url, "--db", str(db), "--token", "t0ken-123"]
    with ProxyProcess(args) as proxy, httpx2.Client(timeout=10) as http:
        if True:
            assert http.post(proxy.url, json=INIT, headers=JSON_HEADERS).status_code == 401
            evil = {**JSON_HEADERS, "Authorization": "Bearer t0ken-123", "Host": "evil.example"}
            assert http.post(proxy.url, json=INIT, headers=evil).status_code == 421
            origin = {**JSON_HEADERS, "Authorization": "Bearer t0ken-123", "Origin": "http://evil.example"}
            assert http.post(proxy.url, json=INIT, headers=origin).status_code == 403
            good = {**JSON_HEADERS, "Authorization": "Bearer t0ken-123"}
            assert http.post(proxy.url, json=INIT, headers=good).status_code == 200
            assert http.get(proxy.base + "/healthz").status_code == 200


def test_secrets_are_redacted_in_stored_copies_only(proxy):
    secret = "sk-live-0123456789abcdef"
    with httpx2.Client(timeout=10) as http:
        headers = {**JSON_HEADERS, "Authorization": f"Bearer {secret}", "Cookie": f"sid={secret}"}
        response = http.post(proxy.tagged("secret") + f"?apiKey={secret}", json=INIT, headers=headers)
        assert response.status_code == 200
    rows = read_messages(proxy.db, "secret", lambda m: m["direction"] == "c2s")
    assert rows
    stored = json.dumps(rows, ensure_ascii=False)
    assert secret not in stored and "[REDACTED]" in stored
