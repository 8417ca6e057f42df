"""SDK client (both eras) → finmcp-proxy (HTTP side) → finmcp-server, all real processes on loopback."""

from __future__ import annotations

import json
import signal
import sqlite3
from functools import partial

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.support.net import free_port
from tests.support.polling import wait_for
from tests.support.processes import health
from tests.support.rpc import JSON_HEADERS, initialize
from tests.support.sdk import request_meta
from tests.support.traces import read_calls, wait_calls, wait_messages, wait_sessions

MODES = ["auto", "legacy"]
ERA = {"auto": "stateless", "legacy": "handshake"}
INIT = initialize()
# Groups are inferred from timing. The upstream's latency keeps concurrent calls overlapping and the gap
# is wide enough that "right after" holds on a loaded machine, while the think time clearly exceeds it.
LATENCY_MS = 200
GAP_MS = 300
THINK_S = 3 * GAP_MS / 1000


@pytest.fixture(scope="module")
def upstream(module_children):
    return module_children.server(["--latency", f"fixed:{LATENCY_MS}"])


@pytest.fixture(scope="module")
def slow_upstream(module_children):
    return module_children.server(["--latency", "fixed:1500"])


@pytest.fixture(scope="module")
def proxy(upstream, module_children, tmp_path_factory):
    db = tmp_path_factory.mktemp("proxy") / "runs.sqlite"
    proc = module_children.proxy(["--upstream", upstream.url, "--db", str(db), "--group-gap-ms", str(GAP_MS)])
    proc.db = db
    return proc


def cancelled(server) -> int:
    """How many calls the server saw cancelled."""
    return health(server)["calls"]["finmcp65"].get("cancelled", 0)


# ---------------------------------------------------------------- tags, groups, exactly once


@pytest.mark.slow
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
            await anyio.sleep(THINK_S)  # think time beyond --group-gap-ms: a new group
            await client.call_tool("GetCurrentTime", {})
            result = await client.call_tool("GetCurrentTime", {})  # right after, on the same connection
            return result

    anyio.run(main)
    calls = wait_calls(proxy.db, run, 6)
    assert len(calls) == 6
    assert {c["sample_id"] for c in calls} == {"s1"}
    assert all(c["status"] == "ok" and c["tool"] == "GetCurrentTime" for c in calls)
    assert len({(c["session_key"], json.dumps(c["jsonrpc_id"]), c["turn"]) for c in calls}) == 6
    turn0 = [c for c in calls if c["turn"] == 0]
    turn1 = [c for c in calls if c["turn"] == 1]
    assert [c["call_group"] for c in turn0] == [0, 0, 0]
    assert sorted(c["group_source"] for c in turn0) == ["gap", "overlap", "overlap"]
    # sequential calls: the pause opens group 1; the next call, sent on the connection that had just
    # delivered the answer, follows it (within the gap, but the sequence rule comes first)
    assert [(c["call_group"], c["group_source"]) for c in turn1] == [
        (0, "gap"),
        (1, "sequence"),
        (2, "sequence"),
    ]
    assert all(c["protocol_version"] for c in calls) and all(c["client_name"] == "mcp" for c in calls)
    # session rows are written behind the traffic: one per session key the calls used
    keys = {c["session_key"] for c in calls}
    sessions = wait_sessions(proxy.db, run, lambda rows: {s["session_key"] for s in rows} >= keys)
    assert {s["era"] for s in sessions} == {ERA[mode]}


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_both_event_loops_forward_and_log_every_call(upstream, proxy_process, tmp_path, loop):
    db = tmp_path / "runs.sqlite"
    proxy = proxy_process(["--upstream", upstream.url, "--db", str(db), "--loop", loop])
    assert f"loop {loop}" in proxy.stderr_text()

    async def main():
        for mode in MODES:
            tagged = proxy.tagged(f"loop-{mode}", "s1", 0)
            async with Client(tagged, mode=mode) as client, anyio.create_task_group() as tg:
                for _ in range(4):
                    tg.start_soon(client.call_tool, "GetCurrentTime", {})

    anyio.run(main)
    assert health(proxy)["loop"] == loop
    for mode in MODES:
        calls = wait_calls(db, f"loop-{mode}", 4)
        assert [c["status"] for c in calls] == ["ok"] * 4
        assert [c["call_group"] for c in calls] == [0] * 4


@pytest.mark.parametrize("mode", MODES)
def test_explicit_group_tags_win(proxy, mode):
    run = f"explicit-{mode}"

    async def main():
        async with Client(proxy.tagged(run, "s2", 0), mode=mode) as client:
            for label in ("a", "a", "b", "a"):  # sequential, but tagged: a, a, b, a
                await client.call_tool("GetCurrentTime", {}, meta=request_meta({"io.finmcp/group": label}))
            async with anyio.create_task_group() as tg:  # concurrent, but tagged apart
                for label in ("c", "d"):
                    tg.start_soon(
                        partial(
                            client.call_tool,
                            "GetCurrentTime",
                            {},
                            meta=request_meta({"io.finmcp/group": label}),
                        )
                    )

    anyio.run(main)
    calls = wait_calls(proxy.db, run, 6)
    assert len(calls) == 6 and all(c["group_source"] == "explicit" for c in calls)
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
    calls = wait_calls(proxy.db, "hdr", 1)
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
    sessions = wait_sessions(
        proxy.db, "sid", lambda rows: any(s["session_key"] == sid and s["ended"] for s in rows)
    )
    (session,) = [s for s in sessions if s["session_key"] == sid]
    assert session["client_name"] == "raw" and session["protocol_version"] == "2025-11-25"


# ---------------------------------------------------------------- progress, cancellation, failures


@pytest.mark.slow
def test_a_call_in_flight_is_already_on_disk_as_pending(slow_upstream, proxy_process, tmp_path):
    db = tmp_path / "runs.sqlite"
    proxy = proxy_process(["--upstream", slow_upstream.url, "--db", str(db)])
    seen: list[str] = []

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


def test_a_locked_trace_database_holds_answers_but_not_the_proxy(upstream, proxy_process, tmp_path):
    db = tmp_path / "runs.sqlite"
    proxy = proxy_process(["--upstream", upstream.url, "--db", str(db)])
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another program keeps the write lock
    answered = []

    async def call():
        async with Client(proxy.tagged("locked", "s", 0), mode="auto") as client:
            answered.append(await client.call_tool("GetCurrentTime", {}))

    def upstream_answered() -> dict:
        # /healthz answers while the lock is held (the loop is not blocked), and shows the upstream's
        # answer has arrived (nothing pending) for the one call the proxy saw
        return wait_for(
            lambda: health(proxy), lambda h: h["calls"] == 1 and h["pending"] == 0, what="the upstream answer"
        )

    async def main():
        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await anyio.to_thread.run_sync(upstream_answered)
            assert not answered  # the call's answer waits for its committed row
            other.execute("COMMIT")

    try:
        anyio.run(main)
    finally:
        other.close()
    assert len(answered) == 1 and not answered[0].is_error
    assert [c["status"] for c in read_calls(db, "locked")] == ["ok"]


@pytest.mark.parametrize("mode", MODES)
def test_progress_and_cancellation_pass_through(slow_upstream, proxy_process, tmp_path, mode):
    db = tmp_path / "runs.sqlite"
    proxy = proxy_process(["--upstream", slow_upstream.url, "--db", str(db)])
    progress = []
    before = cancelled(slow_upstream)

    async def on_progress(value, total, message):
        progress.append(value)

    async def main():
        async with Client(proxy.tagged("slow", "p", 0), mode=mode) as client:
            result = await client.call_tool("GetCurrentTime", {}, progress_callback=on_progress)
            assert not result.is_error
            with anyio.move_on_after(0.4):
                await client.call_tool("GetCurrentTime", {})
            # the session stays open until the cancellation has reached the upstream
            await anyio.to_thread.run_sync(
                lambda: wait_for(
                    lambda: cancelled(slow_upstream),
                    lambda n: n > before,
                    what="the upstream's cancelled count",
                )
            )

    anyio.run(main)
    assert progress, "no notifications/progress reached the client"
    calls = wait_calls(db, "slow", 2, settled=True)
    assert [c["status"] for c in calls] == ["ok", "cancelled"]
    kinds = wait_messages(db, "slow", lambda m: m["method"] == "notifications/progress")
    assert all(m["direction"] == "s2c" for m in kinds)


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_upstream_killed_mid_run_gives_errors_and_logged_failures(
    server_process, proxy_process, tmp_path, mode
):
    db = tmp_path / "runs.sqlite"
    server = server_process(["--latency", "fixed:800"], killed=True)
    proxy = proxy_process(["--upstream", server.url, "--db", str(db), "--timeout", "10"])

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
    assert server.process.wait(5) == -signal.SIGKILL
    assert len(errors) == 2 and all("finmcp-proxy" in str(e) for e in errors)
    calls = read_calls(db, "killed")
    assert [c["status"] for c in calls] == ["ok", "transport_error", "transport_error"]
    assert all(c["rpc_error"]["message"] for c in calls[1:])
    assert health(proxy)["status"] == "ok"  # the proxy outlives its upstream


def test_unreachable_upstream_answers_a_jsonrpc_error(proxy_process, tmp_path):
    db = tmp_path / "runs.sqlite"
    proxy = proxy_process(["--upstream", f"http://127.0.0.1:{free_port()}/mcp", "--db", str(db)])
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

    with pytest.raises(Exception) as caught:  # noqa: B017 - the SDK wraps it; what matters is: no hang
        anyio.run(main)
    assert not isinstance(caught.value, TimeoutError), "the SDK client hung on an unreachable upstream"


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
    invalid = wait_messages(proxy.db, "bad", lambda m: m["kind"] == "invalid")
    assert any(m["body"] == "{not json" for m in invalid)


def test_host_origin_and_token_checks(upstream, proxy_process, tmp_path):
    db = tmp_path / "runs.sqlite"
    proxy = proxy_process(["--upstream", upstream.url, "--db", str(db), "--token", "t0ken-123"])
    with httpx2.Client(timeout=10) as http:
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
    rows = wait_messages(proxy.db, "secret", lambda m: m["direction"] == "c2s")
    stored = json.dumps(rows, ensure_ascii=False)
    assert secret not in stored and "[REDACTED]" in stored
