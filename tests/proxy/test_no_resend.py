"""A request the upstream may have run is never sent twice (RFC 9110 §9.2.2), on both client sides.

The upstream (:class:`tests.support.raw_upstream.RawUpstream`) answers the first request on each
connection, then reads the next one and closes without answering, as a server that crashed (or
was restarted) while running it would. The proxy cannot know whether the upstream ran it: a
``tools/call`` gets a JSON-RPC error and a ``transport_error`` row, and only a method that is safe
to repeat (``tools/list`` here) goes out again on a fresh connection. A pooled connection the
upstream closed *before* the proxy wrote on it is another matter: nothing was sent on it, so the
request simply goes on another connection.
"""

from __future__ import annotations

import asyncio
import json
import select
import threading
from typing import Any

import httpx2

from finmcp.proxy.upstream_conn import ConnectionPool, UpstreamConnection
from finmcp.proxy.upstream_http import Target, build_request
from tests.support.processes import health
from tests.support.raw_upstream import RawUpstream
from tests.support.rpc import modern_headers, modern_message, tool_call
from tests.support.stdio_lines import StdioLines
from tests.support.traces import wait_calls

HANG_GUARD_S = 10.0  # not a speed limit: only ends a test whose answer never comes
NOT_RESENT = "not sent again"


def _post(http: httpx2.Client, url: str, message: dict[str, Any]) -> httpx2.Response:
    return http.post(url, content=json.dumps(message), headers=modern_headers(message["method"]))


def test_http_side_never_resends_a_tool_call_and_resends_a_safe_request(proxy_process, tmp_path):
    db = tmp_path / "runs.sqlite"
    with RawUpstream(answers=1, after="drop") as upstream:
        proxy = proxy_process(["--upstream", upstream.url, "--db", str(db)])
        url = proxy.tagged("once", "s", 0)
        with httpx2.Client(timeout=HANG_GUARD_S) as http:  # one keep-alive client connection
            first = _post(http, url, tool_call("GetCurrentTime", {}, 1))
            second = _post(http, url, tool_call("PlaceOrder", {"fund": "000001"}, 2))
            listed = [_post(http, url, modern_message("tools/list", {}, rid)) for rid in (3, 4)]
        assert first.status_code == 200 and first.json()["result"]["content"][0]["text"] == "answer to 1"
        # the upstream read call 2 and closed: it may have run it, so the client is told, not served twice
        assert second.status_code == 502
        error = second.json()
        assert error["id"] == 2 and error["error"]["code"] == -32000
        assert NOT_RESENT in error["error"]["message"] and "finmcp-proxy" in error["error"]["message"]
        # tools/list is safe to repeat: its lost answer is fetched again on a fresh connection
        assert [r.status_code for r in listed] == [200, 200]
        assert [r.json()["result"] for r in listed] == [{"tools": []}, {"tools": []}]
        assert upstream.ids() == [1, 2, 3, 4, 4]
        assert [s.connection for s in upstream.seen] == [0, 0, 1, 1, 2]
    calls = wait_calls(db, "once", 2, settled=True)
    assert [(c["jsonrpc_id"], c["status"]) for c in calls] == [(1, "ok"), (2, "transport_error")]
    assert NOT_RESENT in calls[1]["rpc_error"]["message"]
    pool = health(proxy)["upstream_connections"]
    assert (pool["lost_after_write"], pool["resent"], pool["not_resent"]) == (2, 1, 1)


def test_stdio_side_never_resends_a_tool_call_and_resends_a_safe_request(tmp_path):
    db = tmp_path / "runs.sqlite"
    with RawUpstream(answers=1, after="drop") as upstream:
        with StdioLines(["--upstream", upstream.url], db, "--run", "once", "--sample", "s") as proxy:
            first = proxy.ask(tool_call("GetCurrentTime", {}, 1))  # one request at a time: its answer
            second = proxy.ask(tool_call("PlaceOrder", {"fund": "000001"}, 2))
            listed = [proxy.ask(modern_message("tools/list", {}, rid)) for rid in (3, 4)]
        assert first["result"]["content"][0]["text"] == "answer to 1"
        assert second["id"] == 2 and NOT_RESENT in second["error"]["message"]
        assert [m["result"] for m in listed] == [{"tools": []}, {"tools": []}]
        assert upstream.ids() == [1, 2, 3, 4, 4]
    calls = wait_calls(db, "once", 2, settled=True)
    assert [(c["jsonrpc_id"], c["status"]) for c in calls] == [(1, "ok"), (2, "transport_error")]


def test_an_idle_connection_the_upstream_closed_is_not_written_to():
    """The upstream closed a pooled connection, and its FIN is in the socket before the loop has seen it."""
    gate = threading.Event()
    with RawUpstream(answers=1, after="close", close_gate=gate) as upstream:

        async def main() -> None:
            pool = ConnectionPool(Target.parse(upstream.url))

            async def call(rid: int) -> tuple[bytes, UpstreamConnection]:
                body = json.dumps(tool_call("GetCurrentTime", {}, rid)).encode()
                head = build_request(b"POST", pool.target, [(b"content-type", b"application/json")], body)
                stream, response = await pool.send(head, body, b"POST")
                data = b"".join([payload async for _raw, payload in stream.body()])
                pool.release(stream.conn, response.keep_alive)
                return data, stream.conn

            data, idle = await call(1)
            assert b"answer to 1" in data
            gate.set()  # the upstream closes it now
            sock = idle.transport.get_extra_info("socket")
            # block the loop until the FIN has arrived: the connection's protocol has not been told
            readable, _, _ = select.select([sock.fileno()], [], [], HANG_GUARD_S)
            assert readable and not idle.closed
            assert pool.take_idle() is None  # found dead before any write: closed, not used
            assert idle.closed
            data, fresh = await call(2)
            assert (
                b"answer to 2" in data and fresh is not idle
            )  # on a fresh connection; nothing was lost or repeated
            assert pool.stats["closed_before_write"] == 1 and pool.stats["lost_after_write"] == 0
            pool.close()

        asyncio.run(main())
        assert upstream.ids() == [1, 2]
        assert [s.connection for s in upstream.seen] == [0, 1]
