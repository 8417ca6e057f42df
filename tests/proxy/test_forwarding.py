"""Byte-level transparency of the HTTP side, against a scripted upstream that records what it got."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler

import httpx2
import pytest

from finmcp.recordings import SqliteTraceStore
from tests.support.net import serving
from tests.support.polling import wait_for
from tests.support.rpc import JSON_HEADERS, raw_request

CALL = {
    "jsonrpc": "2.0",
    "id": "a-1",
    "method": "tools/call",
    "params": {"name": "Echo", "arguments": {"x": 1}},
}
RESULT = b'{"jsonrpc":"2.0","id":"a-1","result":{"content":[{"type":"text","text":"hi"}],"isError":false,"_meta":{"k":1}}}'

_EVENT = b"event: message\r\ndata: " + RESULT + b"\r\n\r\n"
SSE_WITH_END = b"%x\r\n%s\r\n0\r\n\r\n" % (len(_EVENT), _EVENT)


FLOOD_CHUNK = 64 * 1024
FLOOD_TOTAL = 48 * 1024 * 1024
TIMEOUT_S = 2.0  # the proxy's --timeout here
HOLD_S = 1.5  # how long the "sse" upstream holds its answer back at most (< TIMEOUT_S)


class Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list[tuple[str, str, dict[str, str], bytes]] = []
    mode = "json"
    flood_sent = 0
    release = threading.Event()  # "sse": the test got the first event; send the answer
    answer_sent = False

    def log_message(self, *args):
        pass

    def do_GET(self):  # a download as fast as the socket takes it (mode "flood")
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        piece = b"%x\r\n%s\r\n" % (FLOOD_CHUNK, b"x" * FLOOD_CHUNK)
        while Upstream.flood_sent < FLOOD_TOTAL:
            self.wfile.write(piece)
            Upstream.flood_sent += FLOOD_CHUNK
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        Upstream.seen.append(("POST", self.path, dict(self.headers.items()), body))
        if Upstream.mode == "json":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("X-Upstream", "yes")
            self.send_header("Content-Length", str(len(RESULT)))
            self.end_headers()
            self.wfile.write(RESULT)
        elif Upstream.mode == "sse":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            progress = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}'
            for data in (progress, RESULT):
                if data is RESULT:  # hold the answer until the client has the progress event (or HOLD_S)
                    Upstream.release.wait(HOLD_S)
                    Upstream.answer_sent = True
                event = b"event: message\r\ndata: " + data + b"\r\n\r\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        elif Upstream.mode == "sse_with_end":  # the last event and the end of the stream in one segment
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            self.wfile.write(SSE_WITH_END)
            self.wfile.flush()
        elif Upstream.mode == "json_chunked":  # a JSON answer in two chunks, then the last chunk
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            half = len(RESULT) // 2
            for part in (RESULT[:half], RESULT[half:]):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        elif Upstream.mode == "silent":
            time.sleep(TIMEOUT_S + 2)


@pytest.fixture(scope="module")
def fake_upstream():
    with serving(Upstream) as base:
        yield f"{base}/deep/mcp?fixed=1"


@pytest.fixture
def proxied(fake_upstream, proxy_process, tmp_path):
    Upstream.seen.clear()
    Upstream.mode = "json"
    Upstream.release.clear()
    Upstream.answer_sent = False
    db = tmp_path / "runs.sqlite"
    proc = proxy_process(["--upstream", fake_upstream, "--db", str(db), "--timeout", str(TIMEOUT_S)])
    proc.db = db
    return proc


def test_request_and_response_bytes_pass_unchanged(proxied):
    body = json.dumps(CALL, indent=3).encode()  # odd formatting must survive
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "X-Custom": "kept",
        "X-Finmcp-Run": "fw",
        "X-Finmcp-Sample": "s",
    }
    with httpx2.Client(timeout=10) as http:
        response = http.post(proxied.base + "/t/4/mcp", content=body, headers=headers)
    assert response.status_code == 200
    assert response.content == RESULT
    assert response.headers["x-upstream"] == "yes"
    method, path, seen_headers, seen_body = Upstream.seen[-1]
    assert (method, path, seen_body) == ("POST", "/deep/mcp?fixed=1", body)
    lowered = {k.lower(): v for k, v in seen_headers.items()}
    assert lowered["x-custom"] == "kept"
    assert not any(k.startswith("x-finmcp") for k in lowered)
    with SqliteTraceStore.open(proxied.db) as store:
        calls = store.calls("fw")
    assert [(c["sample_id"], c["turn"], c["jsonrpc_id"], c["status"]) for c in calls] == [
        ("s", 4, "a-1", "ok")
    ]
    assert calls[0]["result"]["content"] == [{"type": "text", "text": "hi"}]


def test_a_chunked_json_answer_is_forwarded_whole_after_its_row(proxied):
    Upstream.mode = "json_chunked"
    with httpx2.Client(timeout=5) as http:
        response = http.post(proxied.tagged("chunked"), content=json.dumps(CALL), headers=JSON_HEADERS)
    assert response.status_code == 200 and response.content == RESULT
    with SqliteTraceStore.open(proxied.db) as store:
        assert [c["status"] for c in store.calls("chunked")] == ["ok"]


def test_host_header_names_the_upstream(proxied, fake_upstream):
    with httpx2.Client(timeout=10) as http:
        http.post(proxied.url, content=json.dumps(CALL), headers={"Content-Type": "application/json"})
    host = {k.lower(): v for k, v in Upstream.seen[-1][2].items()}["host"]
    assert host == fake_upstream.split("/")[2]


def test_sse_is_streamed_as_it_arrives(proxied):
    Upstream.mode = "sse"
    arrivals = []  # (was the upstream's answer already sent when this event arrived?, line)
    with (
        httpx2.Client(timeout=10) as http,
        http.stream(
            "POST", proxied.tagged("sse"), content=json.dumps(CALL), headers={"Accept": "text/event-stream"}
        ) as response,
    ):
        assert response.headers["content-type"] == "text/event-stream"
        for line in response.iter_lines():
            if line.startswith("data:"):
                arrivals.append((Upstream.answer_sent, line))
                Upstream.release.set()
    assert len(arrivals) == 2
    # the progress event reached the client while the upstream still held its answer back
    assert arrivals[0][0] is False and "notifications/progress" in arrivals[0][1]
    assert arrivals[1][1] == "data: " + RESULT.decode()
    with SqliteTraceStore.open(proxied.db) as store:
        assert [c["status"] for c in store.calls("sse")] == ["ok"]


def test_an_sse_answer_and_its_end_arriving_together_pass_unchanged(proxied):
    Upstream.mode = "sse_with_end"
    host, port = proxied.base.removeprefix("http://").split(":")
    headers = {"host": f"{host}:{port}", "accept": "text/event-stream", "content-type": "application/json"}
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(raw_request("POST", "/r/together/mcp", headers, json.dumps(CALL).encode()))
        received = b""
        while not received.endswith(b"0\r\n\r\n"):
            received += sock.recv(65536)
    assert received.split(b"\r\n\r\n", 1)[1] == SSE_WITH_END  # chunk framing included, byte for byte
    with SqliteTraceStore.open(proxied.db) as store:
        assert [c["status"] for c in store.calls("together")] == ["ok"]


def test_silent_upstream_times_out_with_a_jsonrpc_error(proxied):
    Upstream.mode = "silent"
    with httpx2.Client(timeout=10) as http:
        response = http.post(
            proxied.tagged("slow"), content=json.dumps(CALL), headers={"Content-Type": "application/json"}
        )
    assert response.status_code == 504
    error = response.json()
    assert error["id"] == "a-1" and f"did not answer within {TIMEOUT_S} s" in error["error"]["message"]
    with SqliteTraceStore.open(proxied.db) as store:
        calls = store.calls("slow")
    assert [c["status"] for c in calls] == ["transport_error"]


def test_a_client_that_reads_slowly_holds_the_upstream_back(proxied):
    """Backpressure: the proxy stops reading the upstream while the client is not reading."""
    Upstream.flood_sent = 0
    with socket.create_connection(("127.0.0.1", proxied.port)) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        sock.sendall(raw_request("GET", "/mcp", {"host": "127.0.0.1", "accept": "text/event-stream"}))
        held_back_at = wait_for(_flood_stalled, what="the upstream held back")  # the client reads nothing
        rss_kb = _rss_kb(proxied.process.pid)
        received = bytearray()
        sock.settimeout(5)
        while not received.endswith(b"\r\n0\r\n\r\n"):
            data = sock.recv(1 << 20)
            assert data, "the proxy closed the stream early"
            received += data
    assert held_back_at < FLOOD_TOTAL // 3  # measured: 7-9 MB of 48 (socket buffers on both hops)
    assert rss_kb < 150_000  # nothing piles up in the proxy meanwhile
    head, _, body = bytes(received).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    assert len(body) == (FLOOD_TOTAL // FLOOD_CHUNK) * (len(b"%x" % FLOOD_CHUNK) + 4 + FLOOD_CHUNK) + 5


def _flood_stalled() -> int:
    """What the flooding upstream has sent, once it stopped sending for a while (else 0)."""
    before = Upstream.flood_sent
    time.sleep(0.3)
    return before if before and Upstream.flood_sent == before else 0


def _rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
