"""Malformed framing against a real finmcp-proxy on loopback, sent raw over a socket.

From a client: each malformed request gets a 400 (or 413/431/501) JSON-RPC error naming the reason,
the connection closes, the upstream receives nothing, and the trace holds the proxy's answer. From
the upstream: a malformed response reaches the client as a 502 naming the reason, none of its bytes
forwarded.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from finmcp.proxy.testing import ProxyProcess
from tests.proxy.framing_cases import BODY, MALFORMED, REQUEST_ONLY
from tests.support.raw_upstream import RawUpstream
from tests.support.traces import wait_messages

RUN = "framing"
EXTRA: dict[str, tuple[bytes, str, int]] = {
    "head too large": (b"X-Big: " + b"a" * 70_000 + b"\r\n\r\n", "head too large", 431),
    "body too large": (b"Content-Length: 99999999999\r\n\r\n", "request body too large", 413),
    "chunk too large": (  # refused at its size line: the proxy never waits for (or buffers) its data
        b"Transfer-Encoding: chunked\r\n\r\nffffffff\r\nabc",
        "request body too large",
        413,
    ),
    "gzip then chunked": (
        b"Transfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        "only chunked is supported",
        501,
    ),
}
CASES = {
    **{k: (rest, words, 400) for k, (rest, words) in {**MALFORMED, **REQUEST_ONLY}.items()},
    **EXTRA,
}


def slug(case: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in case)


def exchange(port: int, data: bytes) -> bytes:
    """Send ``data`` on a fresh connection and read until the proxy closes it (bounded)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    return received


def status_and_json(answer: bytes) -> tuple[int, dict[str, Any], bytes]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body), head


@pytest.fixture(scope="module")
def proxied(tmp_path_factory) -> Iterator[tuple[ProxyProcess, RawUpstream, str]]:
    db = str(tmp_path_factory.mktemp("framing") / "runs.sqlite")
    with (
        RawUpstream(answers=100, after="close") as upstream,
        ProxyProcess(["--upstream", upstream.url, "--db", db, "--run", RUN]) as proxy,
    ):
        yield proxy, upstream, db


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_malformed_request_gets_its_refusal_and_nothing_is_forwarded(proxied, case: str) -> None:
    proxy, upstream, db = proxied
    rest, words, status = CASES[case]
    port = int(proxy.url.rsplit(":", 1)[1].split("/")[0])
    request = b"POST /r/%s/s/%s/t/0/mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % (
        RUN.encode(),
        slug(case).encode(),
        port,
    )
    got, body, head = status_and_json(exchange(port, request + rest))
    assert got == status, (case, head)
    assert b"connection: close" in head.lower()
    message = body["error"]["message"]
    assert message.startswith("finmcp-proxy: ") and words in message, (case, message)
    assert upstream.seen == [], case  # nothing reached the upstream
    # the trace row carries the path's tags when the head could be read (else the default run only)
    rows = wait_messages(
        db,
        RUN,
        lambda m: m["kind"] == "error" and words in m["body"] and m["sample_id"] in (slug(case), None),
    )
    assert rows[0]["direction"] == "s2c" and rows[0]["session_key"] is None


def test_a_valid_request_after_the_refusals_is_forwarded(proxied) -> None:
    proxy, upstream, _ = proxied
    port = int(proxy.url.rsplit(":", 1)[1].split("/")[0])
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(BODY), BODY)
    head = b"POST /r/%s/s/valid/t/0/mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nTransfer-Encoding: chunked\r\n" % (
        RUN.encode(),
        port,
    )
    answer = exchange(port, head + b"Connection: close\r\n\r\n" + chunked)
    got, body, _ = status_and_json(answer)
    assert got == 200 and body["id"] == 1
    assert [s.method for s in upstream.seen] == ["tools/list"]


class CannedUpstream:
    """Answers each request (read whole by its Content-Length) with ``answers[arguments["case"]]``, then closes."""

    def __init__(self, answers: dict[str, bytes]) -> None:
        self.answers = answers
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/mcp"
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> CannedUpstream:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.listener.close()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, _, body = data.partition(b"\r\n\r\n")
                lines = head.lower().split(b"\r\n")
                length = next(
                    int(line.split(b":")[1]) for line in lines if line.startswith(b"content-length")
                )
                while len(body) < length:
                    body += conn.recv(65536)
                conn.sendall(self.answers[json.loads(body)["params"]["arguments"]["case"]])


@pytest.fixture(scope="module")
def canned(tmp_path_factory) -> Iterator[ProxyProcess]:
    answers = {
        case: b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + rest
        for case, (rest, _) in MALFORMED.items()
    }
    db = str(tmp_path_factory.mktemp("framing-up") / "runs.sqlite")
    with CannedUpstream(answers) as upstream, ProxyProcess(["--upstream", upstream.url, "--db", db]) as proxy:
        yield proxy


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_upstream_response_is_a_clear_502_and_none_of_it_is_forwarded(canned, case) -> None:
    _, words = MALFORMED[case]
    port = int(canned.url.rsplit(":", 1)[1].split("/")[0])
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "X", "arguments": {"case": case}},
    }
    body = json.dumps(call).encode()
    head = (
        b"POST /r/up/s/%s/t/0/mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
        % (
            slug(case).encode(),
            port,
            len(body),
        )
    )
    got, answer, _ = status_and_json(exchange(port, head + body))
    assert got == 502, case
    message = answer["error"]["message"]
    assert "upstream sent a malformed" in message and words in message, (case, message)
    assert answer["id"] == 7
