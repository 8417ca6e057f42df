"""Issue 30, item 9: client connections are bounded in time, number and buffered bytes.

A real ``finmcp-proxy`` subprocess with small limits, and raw sockets on 127.0.0.1 playing the
hostile clients: slowloris heads and bodies get a 408 and are closed after ``--head-timeout`` /
``--body-timeout``; an idle kept-alive connection is closed after ``--idle-timeout``; a connection over
``--max-connections`` gets a 503; bytes over ``--max-buffered`` get a 503, and ``/healthz``'s accounting
never passes the limit. Every refusal leaves a log line, and a normal client is served afterwards.
"""

from __future__ import annotations

import contextlib
import socket
import time

import httpx2

from bench.big_answer import BigAnswerUpstream
from tests.support.processes import health
from tests.support.rpc import JSON_HEADERS, tool_call

HEAD = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split("/")[0].split(":")
    sock = socket.create_connection((host, int(port)), timeout=5)
    return sock


def _answer(sock: socket.socket, timeout: float) -> bytes:
    """What the proxy writes before it closes the connection (b"" for a close without a word)."""
    sock.settimeout(timeout)
    got = b""
    with contextlib.suppress(ConnectionResetError):
        while True:
            data = sock.recv(65536)
            if not data:
                break
            got += data
    return got


def _served(url: str) -> None:
    with httpx2.Client(timeout=10) as client:
        answer = client.post(
            url, json=tool_call("echo", {}, 9), headers={**JSON_HEADERS, "MCP-Protocol-Version": "2026-07-28"}
        )
    assert answer.status_code == 200 and answer.json()["result"]["content"][0]["text"] == "ok 9"


def test_slow_heads_and_bodies_get_a_408_and_are_closed(children, tmp_path):
    with BigAnswerUpstream(10) as upstream:
        proxy = children.proxy(
            [
                "--upstream",
                upstream.url,
                "--db",
                str(tmp_path / "t.sqlite"),
                "--head-timeout",
                "0.5",
                "--body-timeout",
                "0.5",
            ]
        )
        heads = [_connect(proxy.url) for _ in range(30)]
        bodies = [_connect(proxy.url) for _ in range(5)]
        silent = _connect(proxy.url)
        started = time.monotonic()
        for sock in heads:
            sock.sendall(HEAD)
        for sock in bodies:
            sock.sendall(HEAD + b"Content-Length: 100\r\n\r\n{")
        for _ in range(5):  # slowloris: a header line now and then, never the end of the head
            time.sleep(0.2)
            for sock in heads:
                with contextlib.suppress(OSError):
                    sock.sendall(b"X-Slow: 1\r\n")
        for sock in [*heads, *bodies, silent]:
            got = _answer(sock, 5)
            assert got.startswith(b"HTTP/1.1 408 ") or got == b"", got[:200]
            sock.close()
        assert time.monotonic() - started < 4
        _served(proxy.url)
        stderr = children.stop(proxy)
    assert "request head not complete within 0.5 s (--head-timeout)" in stderr
    assert "request body not complete within 0.5 s (--body-timeout)" in stderr


def test_a_kept_alive_connection_is_closed_after_the_idle_timeout(children, tmp_path):
    with BigAnswerUpstream(10) as upstream:
        proxy = children.proxy(
            ["--upstream", upstream.url, "--db", str(tmp_path / "t.sqlite"), "--idle-timeout", "0.5"]
        )
        sock = _connect(proxy.url)
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        started = time.monotonic()
        got = _answer(sock, 5)
        assert got.startswith(b"HTTP/1.1 200 ") and 0.4 < time.monotonic() - started < 3
        sock.close()


def test_connections_over_the_cap_get_a_503_and_normal_clients_are_served_after(children, tmp_path):
    with BigAnswerUpstream(10) as upstream:
        proxy = children.proxy(
            ["--upstream", upstream.url, "--db", str(tmp_path / "t.sqlite"), "--max-connections", "8"]
        )
        held = [_connect(proxy.url) for _ in range(8)]
        for sock in held:
            sock.sendall(HEAD)  # an unfinished head keeps each connection open
        time.sleep(0.3)
        extra = _connect(proxy.url)
        extra.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        got = _answer(extra, 5)
        assert got.startswith(b"HTTP/1.1 503 "), got[:200]
        assert b"--max-connections" in got
        extra.close()
        for sock in held:
            sock.close()
        time.sleep(0.3)
        _served(proxy.url)
        assert health(proxy)["client_connections"] <= 8
        stderr = children.stop(proxy)
    assert "refused a client connection: 8 open (--max-connections)" in stderr


def test_buffered_request_bytes_are_bounded_and_the_connection_past_them_gets_a_503(children, tmp_path):
    limit = 1_000_000
    with BigAnswerUpstream(10) as upstream:
        proxy = children.proxy(
            ["--upstream", upstream.url, "--db", str(tmp_path / "t.sqlite"), "--max-buffered", str(limit)]
        )
        socks = [_connect(proxy.url) for _ in range(6)]
        answers = []
        for sock in socks:  # each holds 300,000 bytes of a 400,000-byte body
            with contextlib.suppress(OSError):
                sock.sendall(HEAD + b"Content-Length: 400000\r\n\r\n" + b" " * 300_000)
            time.sleep(0.1)
            assert health(proxy)["buffered_request_bytes"] <= limit
        for sock in socks[3:]:
            answers.append(_answer(sock, 5))
        assert all(a.startswith(b"HTTP/1.1 503 ") or a == b"" for a in answers), [a[:100] for a in answers]
        assert any(b"--max-buffered" in a for a in answers)
        for sock in socks:
            sock.close()
        time.sleep(0.3)
        assert health(proxy)["buffered_request_bytes"] == 0
        _served(proxy.url)
        stderr = children.stop(proxy)
    assert "(--max-buffered)" in stderr
