"""SSE resumption through the proxy (SEP-1699): a stream that ends resumable gets no injected error.

The upstream here answers a ``tools/call`` with an SSE stream that carries a priming event (an
``id:`` and empty data, ``retry: 50``) and then ends, chunked, without the answer, as the conformance
suite's ``sse-retry`` server does. The client resumes with ``GET`` + ``Last-Event-ID`` and gets the
answer there. Through the proxy the client must get that answer (not "upstream response ended
without an answer"), and the call's row must end ``ok`` with it although it came on the GET stream.
A stream without an event id that ends unanswered still gets the proxy's error, and a call left
waiting for a resumption that never comes is finished as a transport error when the proxy stops.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client import Client

from finmcp.proxy.http_exchange import NO_ANSWER
from tests.support.rpc import HANDSHAKE, sse_messages
from tests.support.sdk import first_text
from tests.support.traces import read_calls, wait_calls

SESSION = "resumable-session"
ANSWER = "answered on the resumed stream"


class ResumableUpstream(ThreadingHTTPServer):
    """A handshake-era MCP server whose ``tools/call`` stream ends before its answer.

    ``resumable=False`` leaves out the event ids (a plain stream that ends unanswered);
    ``answer_on_get=False`` never answers, even on the resumed stream.
    """

    daemon_threads = True

    def __init__(self, resumable: bool = True, answer_on_get: bool = True) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.resumable = resumable
        self.answer_on_get = answer_on_get
        self.pending: Any = None  # id of the call still to answer
        self.last_event_ids: list[str | None] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/mcp"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ResumableUpstream

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _json(self, status: int, body: dict[str, Any] | None) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Mcp-Session-Id", SESSION)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _sse_head(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Mcp-Session-Id", SESSION)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def do_POST(self) -> None:
        msg = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        method, rid = msg.get("method"), msg.get("id")
        if method == "initialize":
            result = {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "resumable", "version": "1"},
            }
            self._json(200, {"jsonrpc": "2.0", "id": rid, "result": result})
        elif rid is None:
            self._json(202, None)
        elif method == "tools/list":
            tool = {"name": "slow", "inputSchema": {"type": "object"}}
            self._json(200, {"jsonrpc": "2.0", "id": rid, "result": {"tools": [tool]}})
        elif method == "tools/call":
            with self.server.lock:
                self.server.pending = rid
            self._sse_head()
            if self.server.resumable:
                self._chunk(b"id: e1\nretry: 50\ndata: \n\n")
            else:
                self._chunk(b": working\n\n")
            self._chunk(b"")  # the stream ends (chunked) without the answer
        else:
            self._json(200, {"jsonrpc": "2.0", "id": rid, "result": {}})

    def do_GET(self) -> None:
        last_event_id = self.headers.get("Last-Event-ID")
        with self.server.lock:
            self.server.last_event_ids.append(last_event_id)
            rid = None
            if last_event_id == "e1":  # only the resumed tools/call stream carries its answer (the spec:
                rid, self.server.pending = self.server.pending, None  # no responses on a standalone GET)
        self._sse_head()
        self._chunk(b"id: g1\nretry: 50\ndata: \n\n")
        if rid is not None and self.server.answer_on_get:
            result = {"content": [{"type": "text", "text": ANSWER}], "isError": False}
            body = json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode()
            self._chunk(b"id: g2\ndata: " + body + b"\n\n")
        self._chunk(b"")

    def do_DELETE(self) -> None:
        self._json(200, None)


def _serve(upstream: ResumableUpstream) -> Iterator[ResumableUpstream]:
    thread = threading.Thread(target=upstream.serve_forever, daemon=True)
    thread.start()
    try:
        yield upstream
    finally:
        upstream.shutdown()
        upstream.server_close()


@pytest.fixture
def resumable() -> Iterator[ResumableUpstream]:
    yield from _serve(ResumableUpstream())


async def _call(url: str) -> str:
    async with Client(url, mode="legacy") as client:
        return first_text(await client.call_tool("slow", {}))


def test_a_resumed_answer_reaches_the_client_through_the_proxy_and_its_row_ends_ok(
    resumable, proxy_process, tmp_path
):
    assert anyio.run(_call, resumable.url) == ANSWER  # direct: the client resumes and gets the answer
    db = tmp_path / "runs.sqlite"
    proxy = proxy_process(["--upstream", resumable.url, "--db", str(db), "--run", "resume"])
    assert anyio.run(_call, proxy.url) == ANSWER
    assert "e1" in resumable.last_event_ids  # the client did resume the POST's stream
    [row] = wait_calls(db, "resume", 1, settled=True)
    assert (row["tool"], row["status"], row["rpc_error"]) == ("slow", "ok", None)
    assert row["result"]["content"][0]["text"] == ANSWER


def _post(http: httpx2.Client, url: str, message: dict[str, Any], sid: str | None = None) -> httpx2.Response:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if sid:
        headers |= {"Mcp-Session-Id": sid, "MCP-Protocol-Version": HANDSHAKE}
    return http.post(url, content=json.dumps(message), headers=headers)


def _open_session(http: httpx2.Client, url: str) -> str:
    params = {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
    response = _post(http, url, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
    return response.headers["mcp-session-id"]


def _unanswered_call(url: str, delete: bool = False) -> list[dict[str, Any]]:
    """Initialize, POST one ``tools/call`` and read its stream to the end: the messages on it.

    ``delete``: then end the session with ``DELETE``.
    """
    with httpx2.Client(timeout=10) as http:
        sid = _open_session(http, url)
        call = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "slow", "arguments": {}},
        }
        messages = sse_messages(_post(http, url, call, sid).content)
        if delete:
            http.delete(url, headers={"Mcp-Session-Id": sid, "MCP-Protocol-Version": HANDSHAKE})
        return messages


def test_a_stream_without_event_ids_that_ends_unanswered_still_gets_the_proxys_error(proxy_process, tmp_path):
    db = tmp_path / "runs.sqlite"
    for upstream in _serve(ResumableUpstream(resumable=False)):
        proxy = proxy_process(["--upstream", upstream.url, "--db", str(db), "--run", "plain"])
        [error] = _unanswered_call(proxy.url)
        assert error["id"] == 7 and NO_ANSWER in error["error"]["message"]
        [row] = wait_calls(db, "plain", 1, settled=True)
        assert row["status"] == "transport_error"


def test_a_call_whose_resumption_never_comes_fails_when_the_proxy_stops(children, tmp_path):
    db = tmp_path / "runs.sqlite"
    for upstream in _serve(ResumableUpstream(answer_on_get=False)):
        proxy = children.proxy(["--upstream", upstream.url, "--db", str(db), "--run", "never"])
        answers = [m for m in _unanswered_call(proxy.url) if "error" in m or "result" in m]
        assert answers == []  # no injected error: the client may resume
        [row] = wait_calls(db, "never", 1)
        assert row["status"] == "pending"
        children.stop(proxy)
        [row] = read_calls(db, "never")
        assert row["status"] == "transport_error"
        assert "stopped before the response" in row["rpc_error"]["message"]


def test_a_call_awaiting_resumption_fails_when_its_session_ends(proxy_process, tmp_path):
    db = tmp_path / "runs.sqlite"
    for upstream in _serve(ResumableUpstream(answer_on_get=False)):
        proxy = proxy_process(["--upstream", upstream.url, "--db", str(db), "--run", "deleted"])
        _unanswered_call(proxy.url, delete=True)
        [row] = wait_calls(db, "deleted", 1, settled=True)
        assert row["status"] == "transport_error"
        assert "session ended before the resumed stream answered" in row["rpc_error"]["message"]
