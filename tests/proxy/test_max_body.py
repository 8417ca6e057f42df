"""A request over ``--max-body`` (4 MiB) through the HTTP side, from the real SDK client and raw.

The proxy refuses it (nothing is forwarded) with a 413 and a JSON-RPC error the client can read:
the SDK client (mcp 2.3.0, Streamable HTTP) gets that error, not an empty ``ReadError`` (the proxy
used to close the connection while the client was still sending, and the client saw a reset). The
trace has the refusal: the proxy's answer as a message row and, for a ``tools/call`` whose name and
id can be read from the body's start, a call row ``rpc_error`` with the same message.
"""

from __future__ import annotations

import socket

import anyio
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPError

from tests.support.sdk import first_text
from tests.support.traces import wait_calls, wait_messages

LIMIT = 4 * 1024 * 1024


@pytest.fixture
def proxy(server_process, proxy_process, tmp_path):
    server = server_process(["--latency", "none"])
    db = tmp_path / "runs.sqlite"
    proc = proxy_process(["--upstream", server.url, "--db", str(db)])
    proc.db = db
    return proc


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_sdk_client_gets_a_clear_error_for_a_call_over_max_body_and_the_trace_has_it(proxy, mode):
    run = f"huge-{mode}"

    async def main() -> tuple[Exception | None, str]:
        async with Client(proxy.tagged(run), mode=mode) as client:
            error = None
            try:
                with anyio.fail_after(30):
                    await client.call_tool("GetCurrentTime", {"pad": "x" * (LIMIT + 1000)})
            except MCPError as exc:
                error = exc
            with anyio.fail_after(30):  # the session still works
                after = await client.call_tool("GetCurrentTime", {})
            return error, first_text(after)

    error, after = anyio.run(main)
    assert error is not None, "the call over --max-body was not refused"
    assert "request body too large" in str(error) and "--max-body" in str(error), repr(error)
    assert after
    calls = wait_calls(proxy.db, run, 2, settled=True)
    refused = [c for c in calls if c["status"] == "rpc_error"]
    assert len(refused) == 1 and refused[0]["tool"] == "GetCurrentTime", calls
    assert "request body too large" in refused[0]["rpc_error"]["message"], refused[0]
    answers = wait_messages(
        proxy.db, run, lambda m: m["direction"] == "s2c" and "request body too large" in m["body"]
    )
    assert answers[0]["kind"] == "error"


def test_raw_post_over_max_body_gets_413_with_the_request_id(proxy):
    head_of_body = b'{"jsonrpc":"2.0","id":"big-1","method":"tools/call","params":{"name":"GetCurrentTime","arguments":{"pad":"'
    body = head_of_body + b"x" * (LIMIT + 10) + b'"}}}'
    request = (
        b"POST /r/raw/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body)
    )
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=30) as sock:
        sock.sendall(request + body)  # the whole body goes: the proxy reads it before it answers
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, payload = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413"), head
    assert b'"id":"big-1"' in payload and b"request body too large" in payload, payload
    calls = wait_calls(proxy.db, "raw", 1, settled=True)
    assert [(c["tool"], c["jsonrpc_id"], c["status"]) for c in calls] == [
        ("GetCurrentTime", "big-1", "rpc_error")
    ]


def test_a_client_awaiting_100_continue_gets_the_413_without_sending_the_body(proxy):
    head = (
        b"POST /r/expect/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % (LIMIT + 1)
    )
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=30) as sock:
        sock.sendall(head)  # and waits, as curl does for a body over 1 MiB
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"request body too large" in answer
