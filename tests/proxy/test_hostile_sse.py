"""SSE answers from a hostile upstream, through a real finmcp-proxy (issue 30, items 5, 6 and 10).

The upstream is :class:`bench.hostile_sse.HostileSseUpstream` on 127.0.0.1: its ``hostile`` tool
answers with an oversized event, an event that never ends, or progress that never ends; every other
call is answered at once. Each test checks that the client and the trace tell the same story (one
JSON-RPC error for the call's id, a ``transport_error`` row with the same reason), that the bound
leaves a line on the proxy's stderr, and that other clients are served meanwhile.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx2

from bench.hostile_sse import HostileSseUpstream
from finmcp.recordings import SqliteTraceStore
from tests.support.rpc import messages_of, modern_call, sse_messages, tool_call
from tests.support.stdio_lines import StdioLines
from tests.support.traces import wait_calls

KiB = 1024
MiB = 1024 * KiB
GUARD_S = 30.0  # not a speed limit: a client that gets nothing within it was never answered


def post(url: str, name: str, rid: int) -> httpx2.Response:
    """One raw 2026-era ``tools/call``."""
    body, headers = modern_call(name, {}, rid)
    with httpx2.Client(timeout=GUARD_S) as http:
        return http.post(url, content=body, headers=headers)


def answers(response: httpx2.Response, rid: int) -> list[dict[str, Any]]:
    """The messages for ``rid``: SSE events once the stream had started, else a 502's JSON body."""
    ctype = response.headers["content-type"]
    assert (response.status_code, ctype.startswith("text/event-stream")) in ((200, True), (502, False))
    return [m for m in messages_of(ctype, response.content) if m.get("id") == rid]


def start(children: Any, tmp_path: Any, upstream: HostileSseUpstream, *flags: str) -> Any:
    db = tmp_path / "runs.sqlite"
    proxy = children.proxy(["--upstream", upstream.url, "--db", str(db), *flags])
    proxy.db = db
    return proxy


def test_an_oversized_sse_event_is_refused_whole_and_the_trace_agrees(children, tmp_path):
    """Over --max-event-bytes: none of the event reaches the client, which gets one error; so does the row."""
    with HostileSseUpstream("oversized", event_bytes=3 * MiB, piece_bytes=256 * KiB) as upstream:
        proxy = start(children, tmp_path, upstream, "--max-event-bytes", str(MiB))
        response = post(proxy.tagged("big", "s", 0), "hostile", 7)
        (answer,) = answers(response, 7)
        assert "result" not in answer
        message = answer["error"]["message"]
        assert message.startswith("finmcp-proxy: ") and f"SSE event over {MiB} bytes" in message
        assert len(response.content) < 64 * KiB  # not one byte of the event was forwarded
        (call,) = wait_calls(proxy.db, "big", 1, settled=True)
        assert call["status"] == "transport_error"
        assert call["rpc_error"]["message"] == message.removeprefix("finmcp-proxy: ")
        assert post(proxy.tagged("big", "s", 0), "echo", 8).status_code == 200  # the proxy goes on
        stderr = children.stop(proxy)
    assert f"SSE event over {MiB} bytes (--max-event-bytes); stream stopped" in stderr


def test_an_sse_event_under_the_limit_passes_whole_across_many_chunks(children, tmp_path):
    """An event split over 15 upstream chunks is held to its end, then forwarded: the answer is intact."""
    with HostileSseUpstream("oversized", event_bytes=900 * KiB, piece_bytes=64 * KiB) as upstream:
        proxy = start(children, tmp_path, upstream, "--max-event-bytes", str(MiB))
        response = post(proxy.tagged("fits", "s", 0), "hostile", 7)
        (answer,) = answers(response, 7)
        text = answer["result"]["content"][0]["text"]
        assert len(text) > 800 * KiB and set(text) == {"x"}
        (call,) = wait_calls(proxy.db, "fits", 1, settled=True)
        assert call["status"] == "ok"


def test_an_unterminated_sse_event_is_stopped_and_other_clients_are_served(children, tmp_path):
    """An event that never ends (256 KiB every 5 ms) stops at --max-event-bytes; 40 other calls run meanwhile."""
    with HostileSseUpstream("unterminated", piece_bytes=256 * KiB, interval_ms=5) as upstream:
        proxy = start(children, tmp_path, upstream, "--max-event-bytes", str(8 * MiB))
        others: list[int] = []

        def other_client() -> None:
            for rid in range(40):
                response = post(proxy.tagged("others", "s", 0), "echo", rid)
                others.append(json.loads(response.content)["id"])

        thread = threading.Thread(target=other_client)
        thread.start()
        response = post(proxy.tagged("endless", "s", 0), "hostile", 99)
        thread.join(GUARD_S)
        (answer,) = answers(response, 99)
        assert f"SSE event over {8 * MiB} bytes" in answer["error"]["message"]
        assert len(response.content) < 64 * KiB
        assert others == list(range(40))
        assert [c["status"] for c in wait_calls(proxy.db, "others", 40, settled=True)] == ["ok"] * 40
        (call,) = wait_calls(proxy.db, "endless", 1, settled=True)
        assert call["status"] == "transport_error" and "SSE event over" in call["rpc_error"]["message"]
        stderr = children.stop(proxy)
    assert stderr.count("stream stopped") == 1


def test_endless_progress_on_one_call_is_bounded(children, tmp_path):
    """Progress forever: the stream stops at --max-stream-messages, with one error; rows stay bounded."""
    limit = 50
    with HostileSseUpstream("progress", interval_ms=1) as upstream:
        proxy = start(children, tmp_path, upstream, "--max-stream-messages", str(limit))
        response = post(proxy.tagged("chatty", "s", 0), "hostile", 5)
        received = sse_messages(response.content)
        progress = [m for m in received if m.get("method") == "notifications/progress"]
        (answer,) = answers(response, 5)
        assert f"more than {limit} messages" in answer["error"]["message"]
        assert len(progress) <= limit and received[-1] == answer  # the error ends the stream
        (call,) = wait_calls(proxy.db, "chatty", 1, settled=True)
        assert call["status"] == "transport_error"
        assert call["rpc_error"]["message"] == answer["error"]["message"].removeprefix("finmcp-proxy: ")
        stderr = children.stop(proxy)  # every queued row is committed
    with SqliteTraceStore.open(proxy.db) as store:
        rows = store.messages(run_id="chatty")
    stored_progress = [r for r in rows if r["method"] == "notifications/progress"]
    assert len(stored_progress) == len(progress)  # the client and the trace saw the same messages
    assert len(rows) <= limit + 2  # the request, the progress, the error
    assert f"more than {limit} messages on this request's stream (--max-stream-messages); stream" in stderr


def test_the_stdio_side_bounds_endless_progress_and_oversized_events(tmp_path):
    """The stdio side's HTTP upstream: the same two bounds, one error line for the request, the same row."""
    db = tmp_path / "stdio.sqlite"
    flags = ("--run", "stdio", "--max-stream-messages", "30", "--max-event-bytes", str(MiB))
    with HostileSseUpstream("progress", interval_ms=1) as chatty:
        with StdioLines(["--upstream", chatty.url], db, *flags) as proxy:
            proxy.send(tool_call("hostile", {}, 1))
            lines = [proxy.read() for _ in range(31)]
        assert [m.get("method") for m in lines[:30]] == ["notifications/progress"] * 30
        assert lines[30]["id"] == 1 and "more than 30 messages" in lines[30]["error"]["message"]
        assert "more than 30 messages on this request's stream (--max-stream-messages)" in proxy.stderr
    with HostileSseUpstream("oversized", event_bytes=3 * MiB, piece_bytes=256 * KiB) as big:
        with StdioLines(["--upstream", big.url], db, *flags) as proxy:
            answer = proxy.ask(tool_call("hostile", {}, 2))
        assert answer["id"] == 2 and f"SSE event over {MiB} bytes" in answer["error"]["message"]
    calls = wait_calls(db, "stdio", 2, settled=True)
    assert [c["status"] for c in calls] == ["transport_error"] * 2
    assert [c["rpc_error"]["message"] for c in calls] == [
        m["error"]["message"].removeprefix("finmcp-proxy: ") for m in (lines[30], answer)
    ]
