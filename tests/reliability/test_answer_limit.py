"""Issue 30, item 4: one huge upstream answer must not exhaust the proxy (``--max-answer``).

The hostile upstream is :class:`bench.big_answer.BigAnswerUpstream` on 127.0.0.1. A ``tools/call``
answer over the limit is refused (its row must be committed before its bytes go, so it would be held
whole): the client gets a 502 JSON-RPC error, the call row says ``transport_error`` with the same
reason, stderr has one line. Any other answer over the limit is forwarded whole as it streams and its
message row keeps the first ``--max-answer`` bytes, the whole length and its SHA-256.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading

import httpx2
import pytest

from bench.big_answer import BigAnswerUpstream
from bench.socket_http import SocketPeer, read_json_request
from finmcp.recordings import SqliteTraceStore
from tests.support.polling import wait_for
from tests.support.rpc import JSON_HEADERS
from tests.support.stdio_lines import StdioLines
from tests.support.traces import wait_calls

LIMIT = 1024 * 1024
ANSWER = 3 * LIMIT
STATELESS = {"MCP-Protocol-Version": "2026-07-28"}


def _call(rid: int, tool: str) -> dict:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    }
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": tool, "arguments": {}, "_meta": meta},
    }


@pytest.mark.parametrize("chunked", [False, True], ids=["length", "chunked"])
def test_a_call_answer_over_the_limit_is_refused_and_the_trace_agrees(children, tmp_path, chunked):
    db = tmp_path / "trace.sqlite"
    with BigAnswerUpstream(ANSWER, chunked=chunked) as upstream:
        proxy = children.proxy(["--upstream", upstream.url, "--db", str(db), "--max-answer", str(LIMIT)])
        url = f"{proxy.url.removesuffix('/mcp')}/r/big/s/s1/mcp"
        headers = {**JSON_HEADERS, **STATELESS}
        with httpx2.Client(timeout=20) as client:
            big = client.post(url, json=_call(1, "big"), headers=headers)
            small = client.post(url, json=_call(2, "echo"), headers=headers)
        assert big.status_code == 502
        error = big.json()["error"]
        assert error["code"] == -32000 and "over the proxy's limit" in error["message"]
        assert "--max-answer" in error["message"]
        assert small.status_code == 200 and small.json()["result"]["content"][0]["text"] == "ok 2"
        calls = {str(c["jsonrpc_id"]): c for c in wait_calls(db, "big", 2, settled=True)}
        assert calls["1"]["status"] == "transport_error"
        assert calls["1"]["rpc_error"]["message"] == error["message"].removeprefix("finmcp-proxy: ")
        assert calls["2"]["status"] == "ok"
        stderr = children.stop(proxy)
    lines = [line for line in stderr.splitlines() if "--max-answer" in line]
    assert len(lines) == 1 and "WARNING" in lines[0], stderr


def test_another_answer_over_the_limit_streams_whole_and_its_row_is_bounded(children, tmp_path):
    db = tmp_path / "trace.sqlite"
    with BigAnswerUpstream(ANSWER) as upstream:
        proxy = children.proxy(["--upstream", upstream.url, "--db", str(db), "--max-answer", str(LIMIT)])
        url = f"{proxy.url.removesuffix('/mcp')}/r/read/mcp"
        body = {"jsonrpc": "2.0", "id": 7, "method": "resources/read", "params": {"uri": "x://big"}}
        with httpx2.Client(timeout=20) as client:
            answer = client.post(url, json=body, headers={**JSON_HEADERS, **STATELESS})
        assert answer.status_code == 200 and len(answer.content) == ANSWER
        assert answer.json()["id"] == 7

        def rows() -> list[dict]:
            with SqliteTraceStore.open(db) as store:
                return [m for m in store.messages(run_id="read") if m["direction"] == "s2c"]

        found = wait_for(rows, lambda r: len(r) == 1, what="the answer's message row")
        stored = json.loads(found[0]["body"])
        marker = stored["finmcp_truncated"]
        assert marker == {
            "bytes": ANSWER,
            "stored": LIMIT,
            "sha256": hashlib.sha256(answer.content).hexdigest(),
        }
        assert stored["prefix"].encode() == answer.content[:LIMIT]
        stderr = children.stop(proxy)
    lines = [line for line in stderr.splitlines() if "--max-answer" in line]
    assert len(lines) == 1 and "WARNING" in lines[0], stderr


@pytest.mark.parametrize("chunked", [False, True], ids=["length", "chunked"])
def test_the_stdio_side_refuses_any_answer_over_the_limit_and_the_trace_agrees(tmp_path, chunked):
    """A stdio line is one whole message: the stdio side refuses a call's and a read's answer alike."""
    db = tmp_path / "stdio.sqlite"
    read = {"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "big://1"}}
    with BigAnswerUpstream(ANSWER, chunked=chunked) as upstream:
        flags = ("--run", "stdio", "--max-answer", str(LIMIT))
        with StdioLines(["--upstream", upstream.url], db, *flags) as proxy:
            big = proxy.ask(_call(1, "big"))
            whole = proxy.ask(read)
            small = proxy.ask(_call(3, "echo"))
    size = f"{ANSWER} bytes" if not chunked else f"more than {LIMIT} bytes"
    for answer, rid in ((big, 1), (whole, 2)):
        assert answer["id"] == rid and f"upstream answer too large ({size}" in answer["error"]["message"]
        assert "--max-answer" in answer["error"]["message"]
    assert small["result"]["content"][0]["text"] == "ok 3"
    assert proxy.stderr.count("over the proxy's limit") == 2
    calls = wait_calls(db, "stdio", 2, settled=True)
    assert [c["status"] for c in calls] == ["transport_error", "ok"]
    assert calls[0]["rpc_error"]["message"] == big["error"]["message"].removeprefix("finmcp-proxy: ")


class OneHugeChunk(SocketPeer):
    """Answers a request with a chunked body whose one chunk claims ``claimed`` bytes, sends ``sent`` of
    them, then waits (until :attr:`release` is set or the test ends): a hostile upstream that would
    have the proxy hold a giant chunk whole before anything of it moves."""

    def __init__(self, claimed: int, sent: int) -> None:
        super().__init__()
        self.claimed, self.sent = claimed, sent
        self.release = threading.Event()

    def serve(self, conn: socket.socket, index: int) -> None:
        if read_json_request(conn, bytearray()) is None:
            return
        head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
        conn.sendall(head + b"%x\r\n" % self.claimed + b"x" * self.sent)
        self.release.wait(30)

    def close(self) -> None:
        self.release.set()
        super().close()


def test_one_giant_chunk_is_not_held_whole(children, tmp_path):
    """A call's answer is refused once its bytes pass the limit, a read's starts reaching the client, though
    the upstream's one chunk (64 MiB claimed) never ends."""
    db = tmp_path / "trace.sqlite"
    headers = {**JSON_HEADERS, **STATELESS}
    read = {"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "x://big"}}
    with OneHugeChunk(claimed=64 * LIMIT, sent=2 * LIMIT) as upstream:
        proxy = children.proxy(["--upstream", upstream.url, "--db", str(db), "--max-answer", str(LIMIT)])
        url = f"{proxy.url.removesuffix('/mcp')}/r/chunk/mcp"
        with httpx2.Client(timeout=10) as client:
            refused = client.post(url, json=_call(1, "big"), headers=headers)
            assert refused.status_code == 502 and "--max-answer" in refused.json()["error"]["message"]
            received = 0
            with client.stream("POST", url, json=read, headers=headers) as answer:
                assert answer.status_code == 200
                for piece in answer.iter_raw():
                    received += len(piece)
                    if received >= LIMIT:
                        break
        assert received >= LIMIT
        upstream.release.set()
        children.stop(proxy)


def test_readers_take_a_huge_stored_result_cut(tmp_path):
    """A row stored before the limit (or under a large one): the viewer, ``show`` and the store read it cut."""
    import subprocess
    import sys

    from finmcp.evaluator.viewer import queries

    db = tmp_path / "trace.sqlite"
    text = "é" * 3_000_000
    with SqliteTraceStore.open(db) as store:
        store.ensure_run("huge")
        call = store.begin_call(tool="big", arguments={}, run_id="huge", sample_id="s", turn=0)
        store.finish_call(call, result={"content": [{"type": "text", "text": text}]})
    with SqliteTraceStore.open(db) as store:
        [cut] = store.calls("huge", result_chars=1000)
        view = queries.sample_calls(store, "huge", "s")[0]
    assert len(cut["result"]) == 1000 and cut["result_length"] > 3_000_000
    assert view["result"] is None and len(view["output_head"]) == queries.OUTPUT_MAX_CHARS
    assert view["output_cut"].startswith(f"{cut['result_length']} characters")
    shown = subprocess.run(
        [sys.executable, "-m", "finmcp.proxy", "show", "--db", str(db), "--run", "huge"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert f"({cut['result_length']} characters, cut)" in shown.stdout
