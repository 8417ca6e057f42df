"""The HTTP side forwards only what an MCP client sends (issue 30, item 7).

A real proxy in front of a loopback upstream that records every request it gets. The proxy adds
``--upstream-header`` credentials to what it forwards, so a web page that makes the browser send a
``GET`` (an ``<img>``, a no-cors fetch: no ``Origin``) to another path, or to the MCP endpoint
without asking for the event stream, must get the proxy's own refusal and the upstream nothing.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from finmcp.proxy.routing import accepts_event_stream, is_mcp_path
from tests.support.net import serving
from tests.support.rpc import raw_request

UPSTREAM_SECRET = "sk-upstream-0123456789abcdef"
CALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "Echo", "arguments": {}}}
RESULT = b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"ok"}],"isError":false}}'
PAGE = "http://localhost:5173"  # the proxy's --cors-origin


class Recorder(BaseHTTPRequestHandler):
    """Answers anything; remembers (method, path, authorization) of every request."""

    protocol_version = "HTTP/1.1"
    seen: list[tuple[str, str, str | None]] = []

    def log_message(self, *args: object) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        if length:
            self.rfile.read(length)
        Recorder.seen.append((self.command, self.path, self.headers.get("authorization")))
        if self.command == "GET":
            body, kind = b"", "text/event-stream"
        else:
            body, kind = (RESULT, "application/json") if self.command == "POST" else (b"", "text/plain")
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = do_HEAD = do_OPTIONS = _answer  # noqa: N815


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    with serving(Recorder) as base:
        yield f"{base}/mcp"


@pytest.fixture
def proxy(upstream, proxy_process, tmp_path):
    Recorder.seen.clear()
    return proxy_process(
        [
            "--upstream",
            upstream,
            "--db",
            str(tmp_path / "runs.sqlite"),
            "--upstream-header",
            f"Authorization: Bearer {UPSTREAM_SECRET}",
            "--cors-origin",
            PAGE,
        ]
    )


def send(
    proxy, method: str, target: str, headers: dict[str, str], body: bytes = b""
) -> tuple[int, bytes, bytes]:
    """One request on its own connection: (status, head, body) of the answer."""
    headers = {"Host": f"127.0.0.1:{proxy.port}", **headers, "Connection": "close"}
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
        sock.sendall(raw_request(method, target, headers, body))
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, rest = received.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), head, rest


POST_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
IMG_ACCEPT = {"Accept": "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"}
CALL_BODY = json.dumps(CALL).encode()

REFUSED = [
    # (method, target, headers, body, status): a page's <img>/no-cors GETs, and what is not MCP
    ("GET", "/r/x/v1/account/delete", IMG_ACCEPT, b"", 404),
    ("GET", "/r/x/s/1/t/0/v1/transfer?to=mallory&amount=1000", {"Accept": "*/*"}, b"", 404),
    ("GET", "/v1/account/delete", {"Accept": "text/event-stream"}, b"", 404),
    ("POST", "/r/x/v1/transfer", POST_HEADERS, CALL_BODY, 404),
    ("DELETE", "/r/x/v1/account", {}, b"", 404),
    ("POST", "/r/x/../../admin/mcp", POST_HEADERS, CALL_BODY, 404),
    ("POST", "/r/x/admin%2F..%2Fdelete/mcp", POST_HEADERS, CALL_BODY, 404),
    ("GET", "/r/x/s/1/t/0/mcp", IMG_ACCEPT, b"", 406),  # <img src=".../mcp">
    ("GET", "/r/x/mcp", {}, b"", 406),  # no Accept at all
    ("GET", "/mcp", {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}, b"", 406),  # a typed-in URL
    ("PUT", "/r/x/mcp", POST_HEADERS, CALL_BODY, 405),
    ("PATCH", "/mcp", POST_HEADERS, CALL_BODY, 405),
    ("HEAD", "/r/x/mcp", {"Accept": "text/event-stream"}, b"", 405),
    # a cross-site (or same-site: another port of localhost) fetch without an Origin
    ("GET", "/r/x/mcp", {"Accept": "text/event-stream", "Sec-Fetch-Site": "cross-site"}, b"", 403),
    ("POST", "/r/x/mcp", {**POST_HEADERS, "Sec-Fetch-Site": "cross-site"}, CALL_BODY, 403),
    (
        "POST",
        "/r/x/mcp",
        {**POST_HEADERS, "Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "no-cors"},
        CALL_BODY,
        403,
    ),
    ("DELETE", "/mcp", {"Sec-Fetch-Site": "cross-site", "Mcp-Session-Id": "s1"}, b"", 403),
]


@pytest.mark.parametrize(("method", "target", "headers", "body", "status"), REFUSED)
def test_what_no_mcp_client_sends_is_refused_and_never_forwarded(
    proxy, method, target, headers, body, status
):
    got, head, answer = send(proxy, method, target, headers, body)
    assert got == status
    if method != "HEAD":
        error = json.loads(answer)["error"]
        assert error["message"]  # the reason, e.g. "not an MCP endpoint: '/v1/account/delete' ..."
    if status == 405:
        assert b"\r\nallow: get, post, delete, options\r\n" in head.lower() + b"\r\n"
    # the proxy still serves, and the upstream got only what this probe sends
    ok, _, _ = send(proxy, "POST", "/r/probe/mcp", POST_HEADERS, CALL_BODY)
    assert ok == 200
    assert Recorder.seen == [("POST", "/mcp", f"Bearer {UPSTREAM_SECRET}")]
    assert "refused " + method in proxy.stderr_text()


FORWARDED = [
    # (method, target, headers, body, the upstream's path)
    ("POST", "/r/x/s/1/t/0/k/2/mcp", POST_HEADERS, CALL_BODY, "/mcp"),
    ("POST", "/mcp", POST_HEADERS, CALL_BODY, "/mcp"),
    ("POST", "/", POST_HEADERS, CALL_BODY, "/mcp"),
    ("POST", "/r/x/fintool760/mcp", POST_HEADERS, CALL_BODY, "/fintool760/mcp"),  # multi-inventory
    ("GET", "/r/x/mcp", {"Accept": "text/event-stream", "Mcp-Session-Id": "s1"}, b"", "/mcp"),
    ("GET", "/r/x/mcp", {"Accept": "application/json, text/event-stream;q=0.9"}, b"", "/mcp"),
    ("DELETE", "/r/x/mcp", {"Mcp-Session-Id": "s1"}, b"", "/mcp"),
    ("POST", "/r/x/mcp", {**POST_HEADERS, "Sec-Fetch-Site": "same-origin"}, CALL_BODY, "/mcp"),
    ("POST", "/r/x/mcp", {**POST_HEADERS, "Sec-Fetch-Site": "none"}, CALL_BODY, "/mcp"),
    ("POST", "/r/x/mcp", {**POST_HEADERS, "Sec-Fetch-Site": "same-site", "Origin": PAGE}, CALL_BODY, "/mcp"),
    ("POST", "/mcp?x=1", POST_HEADERS, CALL_BODY, "/mcp?x=1"),
]


@pytest.mark.parametrize(("method", "target", "headers", "body", "path"), FORWARDED)
def test_what_an_mcp_client_sends_is_forwarded(proxy, method, target, headers, body, path):
    status, _, _ = send(proxy, method, target, headers, body)
    assert status == 200
    assert Recorder.seen == [(method, path, f"Bearer {UPSTREAM_SECRET}")]


def test_the_proxys_own_endpoints_still_answer(proxy):
    status, _, body = send(proxy, "GET", "/healthz", {})
    assert status == 200 and json.loads(body)["status"] == "ok"
    status, head, _ = send(
        proxy, "OPTIONS", "/r/x/mcp", {"Origin": PAGE, "Access-Control-Request-Method": "POST"}
    )
    assert status == 204 and PAGE.encode() in head  # the CORS preflight, answered by the proxy
    assert Recorder.seen == []


def test_mcp_paths_and_accept_values():
    assert is_mcp_path("/mcp", "/mcp") and is_mcp_path("", "/deep/x") and is_mcp_path("/deep/x", "/deep/x")
    assert is_mcp_path("/fintool760/mcp", "/mcp")
    assert not is_mcp_path("/v1/account/delete", "/mcp")
    assert not is_mcp_path("/../mcp", "/mcp") and not is_mcp_path("/a%2Fb/mcp", "/mcp")
    assert not is_mcp_path("//mcp", "/mcp")
    assert accepts_event_stream(b"application/json, Text/Event-Stream; q=0.5")
    assert not accepts_event_stream(b"*/*") and not accepts_event_stream(None)
    assert not accepts_event_stream(b"text/event-stream-x")
