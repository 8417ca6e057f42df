"""Sequence evidence: a call sent after its client got an answer of the current group opens a new group.

The proxy runs with a think-time gap of 10 s, so the gap rule alone would put every call below in
one group: only the ``sequence`` rule (checked before the gap) can keep sequential calls apart. The
upstream answers at once (:class:`tests.support.raw_upstream.RawUpstream`), so no call overlaps
another.
"""

from __future__ import annotations

import json
import socket
from typing import Any

import httpx2

from tests.support.raw_upstream import RawUpstream
from tests.support.rpc import modern_headers, raw_request, tool_call
from tests.support.stdio_lines import StdioLines
from tests.support.traces import wait_calls

GAP_MS = "10000"  # far above any pause below: without sequence evidence, everything would be one group
HANG_GUARD_S = 10.0  # not a speed limit: only ends a test whose answer never comes


def groups(calls: list[dict[str, Any]], turn: int) -> list[tuple[int, str]]:
    return [(c["call_group"], c["group_source"]) for c in calls if c["turn"] == turn]


def test_http_calls_awaited_one_by_one_are_a_sequence_and_pipelined_ones_are_not(proxy_process, tmp_path):
    db = tmp_path / "runs.sqlite"
    with RawUpstream(answers=100) as upstream:
        proxy = proxy_process(["--upstream", upstream.url, "--db", str(db), "--group-gap-ms", GAP_MS])
        with httpx2.Client(timeout=HANG_GUARD_S) as http:  # a scripted agent: await each answer, no pause
            for rid in range(4):
                message = tool_call("GetCurrentTime", {}, rid)
                answer = http.post(
                    proxy.tagged("seq", "s", 0), content=json.dumps(message), headers=modern_headers()
                )
                assert answer.json()["id"] == rid
        # two requests in one write: the second was sent before the first's answer, so it is no sequence
        requests = b"".join(
            raw_request(
                "POST",
                "/r/seq/s/s/t/1/mcp",
                {"Host": "127.0.0.1", **modern_headers()},
                json.dumps(tool_call("GetCurrentTime", {}, rid)).encode(),
            )
            for rid in (10, 11)
        )
        port = int(proxy.base.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.settimeout(HANG_GUARD_S)
            sock.sendall(requests)
            assert _answers(sock, 2)
        # a parallel burst on fresh connections: the second connection was opened before the first
        # answer left, so its call belongs to the burst however late its bytes come
        with (
            socket.create_connection(("127.0.0.1", port)) as first,
            socket.create_connection(("127.0.0.1", port)) as second,
        ):
            for sock, rid in ((first, 20), (second, 21)):
                sock.settimeout(HANG_GUARD_S)
                body = json.dumps(tool_call("GetCurrentTime", {}, rid)).encode()
                sock.sendall(
                    raw_request("POST", "/r/seq/s/s/t/2/mcp", {"Host": "127.0.0.1", **modern_headers()}, body)
                )
                assert _answers(sock, 1)
    calls = wait_calls(db, "seq", 8, settled=True)
    assert groups(calls, 0) == [(0, "gap"), (1, "sequence"), (2, "sequence"), (3, "sequence")]
    assert groups(calls, 1) == [(0, "gap"), (0, "gap")]
    assert groups(calls, 2) == [(0, "gap"), (0, "gap")]


def _answers(sock: socket.socket, count: int) -> bytes:
    """Read until ``count`` JSON-RPC answers have arrived on a raw connection."""
    received = b""
    while received.count(b'"jsonrpc"') < count:
        received += sock.recv(65536)
    return received


def test_stdio_calls_awaited_one_by_one_are_a_sequence(tmp_path):
    db = tmp_path / "runs.sqlite"
    with RawUpstream(answers=100) as upstream:
        upstream_args = ["--upstream", upstream.url, "--group-gap-ms", GAP_MS]
        with StdioLines(upstream_args, db, "--run", "seq", "--sample", "s") as proxy:
            for rid in range(3):  # each call written once the previous answer has been read
                assert proxy.ask(tool_call("GetCurrentTime", {}, rid))["id"] == rid
    calls = wait_calls(db, "seq", 3, settled=True)
    assert [(c["call_group"], c["group_source"]) for c in calls] == [
        (0, "gap"),
        (1, "sequence"),
        (2, "sequence"),
    ]
