"""Upstream faults: a scripted misbehaving upstream behind finmcp-proxy (HTTP and stdio client sides).

The upstream is a raw asyncio HTTP/1.1 server on 127.0.0.1 that passes everything to a real
``finmcp-server`` except ``tools/call`` requests whose tool name is a fault name below; those it
answers badly on purpose. For each fault the test checks that the client gets a timely answer that
names the failure (a JSON-RPC error with the request's id, or the upstream's own error passed through),
that the call row records the failure, and that a healthy session running at the same time is
unaffected.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import tempfile
import threading
import time
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPError

from tests.support.net import free_port
from tests.support.polling import wait_for
from tests.support.processes import stderr_problems
from tests.support.rpc import messages_of, modern_call, sse_messages, tool_call
from tests.support.scripts import proxy_stdio_command
from tests.support.traces import wait_calls

TIMEOUT_S = 1.0  # the proxy's --timeout in these tests
STALL_S = 30  # how long the "slow" and "stall_sse" faults keep quiet: far past the proxy's --timeout
# Not a speed limit (bench/bench_reliability.py measures answer times): a client that gets no answer
# within this failed, and it stays well below STALL_S so a proxy that missed its --timeout fails too.
HANG_GUARD_S = 10.0
FAULTS = ("slow", "cut_json", "invalid_json", "http500", "rpc_error", "cut_sse", "stall_sse", "sse_no_answer")
PROGRESS = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}'


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _event(data: bytes) -> bytes:
    return b"event: message\r\ndata: " + data + b"\r\n\r\n"


class BadUpstream:
    """A raw HTTP/1.1 upstream that misbehaves per tool name and forwards the rest to ``real_url``."""

    def __init__(self, real_url: str) -> None:
        self.real_url = real_url
        self.port = 0
        self.loop: asyncio.AbstractEventLoop | None = None
        self.server: asyncio.Server | None = None
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> BadUpstream:
        self.thread.start()
        assert self.ready.wait(10), "misbehaving upstream did not start"
        return self

    def stop(self) -> None:
        """Close the listener, cancel the connections still open, end the loop's thread."""
        if self.loop is not None:
            asyncio.run_coroutine_threadsafe(self._shutdown(), self.loop).result(10)
            self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)

    async def _shutdown(self) -> None:
        assert self.server is not None
        self.server.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.http.aclose()

    def _run(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.server = self.loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = self.server.sockets[0].getsockname()[1]
        self.http = httpx2.AsyncClient(timeout=30)
        self.ready.set()
        self.loop.run_forever()
        self.loop.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 60)
                lines = head.decode("latin-1").split("\r\n")
                method = lines[0].split(" ", 1)[0]
                headers = {}
                for line in lines[1:]:
                    name, sep, value = line.partition(":")
                    if sep:
                        headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0"))
                body = await reader.readexactly(length) if length else b""
                if not await self._answer(method, headers, body, writer):
                    return
        except (asyncio.IncompleteReadError, ConnectionError, TimeoutError, asyncio.CancelledError):
            pass  # a closed connection, or the shutdown of the test upstream
        finally:
            writer.close()

    async def _answer(self, method: str, headers: dict, body: bytes, writer: asyncio.StreamWriter) -> bool:
        """Write one response; False when the connection must be dropped."""
        message = json.loads(body) if method == "POST" and body else None
        name = (message.get("params") or {}).get("name") if isinstance(message, dict) else None
        if not (isinstance(message, dict) and message.get("method") == "tools/call" and name in FAULTS):
            await self._forward(method, headers, body, writer)
            return True
        rid = message.get("id")
        ok = json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"content": [], "isError": False}}).encode()
        sse_head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"

        def json_head(status: bytes, ctype: bytes, size: int) -> bytes:
            return b"HTTP/1.1 %s\r\ncontent-type: %s\r\ncontent-length: %d\r\n\r\n" % (status, ctype, size)

        if name == "slow":
            await asyncio.sleep(STALL_S)
            return False
        if name == "cut_json":  # declares the whole body, sends 20 bytes, closes
            writer.write(json_head(b"200 OK", b"application/json", len(ok)) + ok[:20])
            await writer.drain()
            return False
        if name == "invalid_json":
            bad = b"{this is not json"
            writer.write(json_head(b"200 OK", b"application/json", len(bad)) + bad)
        elif name == "http500":
            bad = b"Internal Server Error"
            writer.write(json_head(b"500 Internal Server Error", b"text/plain", len(bad)) + bad)
        elif name == "rpc_error":
            error = {"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": "upstream exploded"}}
            data = json.dumps(error).encode()
            writer.write(json_head(b"200 OK", b"application/json", len(data)) + data)
        else:  # the SSE faults: a progress event first, then the fault
            writer.write(sse_head + _chunk(_event(PROGRESS)))
            await writer.drain()
            if name == "cut_sse":  # half an event, then the connection drops
                writer.write(_chunk(b"event: message\r\ndata: " + ok[:15]))
                await writer.drain()
                return False
            if name == "stall_sse":
                await asyncio.sleep(STALL_S)
                return False
            # sse_no_answer: an unparseable event, then a clean end of stream without the response
            writer.write(_chunk(_event(b"{broken")) + b"0\r\n\r\n")
        await writer.drain()
        return True

    async def _forward(self, method: str, headers: dict, body: bytes, writer: asyncio.StreamWriter) -> None:
        if method == "GET":  # no server-to-client stream here
            writer.write(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n")
            await writer.drain()
            return
        passed = {k: v for k, v in headers.items() if k not in ("host", "content-length", "connection")}
        response = await self.http.request(method, self.real_url, content=body, headers=passed)
        out = [f"HTTP/1.1 {response.status_code} {response.reason_phrase}".encode()]
        for key in ("content-type", "mcp-session-id"):
            if key in response.headers:
                out.append(f"{key}: {response.headers[key]}".encode())
        out.append(b"content-length: %d" % len(response.content))
        writer.write(b"\r\n".join(out) + b"\r\n\r\n" + response.content)
        await writer.drain()


@pytest.fixture(scope="module")
def real_server(module_children):
    return module_children.server(["--json-response", "--latency", "fixed:20"])


@pytest.fixture(scope="module")
def bad_upstream(real_server):
    upstream = BadUpstream(real_server.url).start()
    yield upstream
    upstream.stop()


@pytest.fixture(scope="module")
def proxy(bad_upstream, module_children, tmp_path_factory):
    db = tmp_path_factory.mktemp("faults") / "runs.sqlite"
    args = ["--upstream", bad_upstream.url, "--db", str(db), "--timeout", str(TIMEOUT_S)]
    proc = module_children.proxy(args)
    proc.db = db
    return proc


def post_call(url: str, name: str, rid: int) -> tuple[int, str, bytes]:
    """One raw 2026-era tools/call: (status, content type, body)."""
    body, headers = modern_call(name, {}, rid)
    with httpx2.Client(timeout=HANG_GUARD_S) as http:
        response = http.post(url, content=body, headers=headers)
    return response.status_code, response.headers.get("content-type", ""), response.content


# What a client that made the call receives, per fault, over the HTTP side. "error" = a JSON-RPC error
# for its id made by the proxy; "passthrough" = the upstream's own (error) answer, unchanged.
HTTP_EXPECT = {
    "slow": (504, "proxy_error", "did not answer within"),
    "cut_json": (502, "proxy_error", "closed the connection mid-body"),
    "rpc_error": (200, "upstream_error", "upstream exploded"),
    "stall_sse": (200, "proxy_error", "did not answer within"),
    "invalid_json": (200, "passthrough", "{this is not json"),
    "http500": (500, "passthrough", "Internal Server Error"),
}


@pytest.mark.parametrize("fault", sorted(HTTP_EXPECT))
def test_http_side_fault_gets_a_timely_clear_answer_and_a_logged_row(proxy, fault):
    run = f"http-{fault}"
    status, ctype, raw = post_call(proxy.tagged(run, "s", 0), fault, 41)
    want_status, kind, text = HTTP_EXPECT[fault]
    assert status == want_status
    if kind == "passthrough":  # transparent: the upstream's bytes reach the client unchanged
        assert raw == text.encode()
    else:
        messages = messages_of(ctype, raw)
        answer = [m for m in messages if m.get("id") == 41]
        assert len(answer) == 1, messages
        assert text in answer[0]["error"]["message"]
        if kind == "proxy_error":
            assert answer[0]["error"]["code"] == -32000 and "finmcp-proxy" in answer[0]["error"]["message"]
    (call,) = wait_calls(proxy.db, run, 1)
    assert call["tool"] == fault and call["jsonrpc_id"] == 41
    if fault == "rpc_error":
        assert call["status"] == "rpc_error" and call["rpc_error"]["message"] == "upstream exploded"
    else:  # no usable answer: logged as a transport failure with its reason
        assert call["status"] == "transport_error" and call["rpc_error"]["message"]


def test_http_side_sse_cut_mid_event_gives_a_parseable_error(proxy):
    status, ctype, raw = post_call(proxy.tagged("http-cut_sse", "s", 0), "cut_sse", 42)
    assert status == 200 and ctype.startswith("text/event-stream")
    answer = [m for m in sse_messages(raw) if m.get("id") == 42]
    assert len(answer) == 1 and "finmcp-proxy" in answer[0]["error"]["message"]


def test_http_side_sse_ending_without_answer_gives_an_error(proxy):
    status, ctype, raw = post_call(proxy.tagged("http-noanswer", "s", 0), "sse_no_answer", 43)
    assert status == 200 and ctype.startswith("text/event-stream")
    answer = [m for m in sse_messages(raw) if m.get("id") == 43]
    assert len(answer) == 1 and "finmcp-proxy" in answer[0]["error"]["message"]


def test_sse_faults_are_logged_as_transport_errors(proxy):
    for name, rid in (("cut_sse", 44), ("sse_no_answer", 45)):
        post_call(proxy.tagged(f"logged-{name}", "s", 0), name, rid)
        (call,) = wait_calls(proxy.db, f"logged-{name}", 1)
        assert call["status"] == "transport_error" and call["rpc_error"]["message"]


def test_faults_do_not_disturb_a_healthy_session(proxy):
    """One SDK client calls a real tool 30 times while every fault hits the proxy at the same time."""
    run = "healthy"

    async def healthy(results):
        async with Client(proxy.tagged(run, "good", 0), mode="auto") as client:
            for _ in range(30):
                result = await client.call_tool("GetCurrentTime", {})
                results.append(result.is_error)

    async def faulty(name, rid):
        await anyio.to_thread.run_sync(post_call, proxy.tagged("chaos", name, 0), name, rid)

    async def main():
        results: list[bool] = []
        with anyio.fail_after(4 * HANG_GUARD_S):
            async with anyio.create_task_group() as tg:
                tg.start_soon(healthy, results)
                for index, name in enumerate(FAULTS):
                    tg.start_soon(faulty, name, 100 + index)
        return results

    results = anyio.run(main)
    assert results == [False] * 30
    calls = wait_calls(proxy.db, run, 30)
    assert [c["status"] for c in calls] == ["ok"] * 30
    chaos = wait_calls(proxy.db, "chaos", len(FAULTS), settled=True)
    assert sorted(c["tool"] for c in chaos) == sorted(FAULTS)
    assert all(c["status"] in ("transport_error", "rpc_error") for c in chaos)
    assert "internal proxy error" not in proxy.stderr_text()


def test_sdk_client_gets_mcp_errors_in_time(proxy):
    """The SDK client (2026 era) sees each proxy-made failure as an MCPError, never a hang."""

    async def one(name):
        async with Client(proxy.tagged("sdk", name, 0), mode="auto") as client:
            with anyio.fail_after(HANG_GUARD_S):
                await client.call_tool(name, {})

    for name in ("slow", "cut_json", "rpc_error", "stall_sse"):
        with pytest.raises(BaseException) as caught:
            anyio.run(one, name)
        error = caught.value
        while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
            error = error.exceptions[0]
        assert isinstance(error, MCPError), (name, repr(error))  # not the hang guard's TimeoutError
        expected = "upstream exploded" if name == "rpc_error" else "finmcp-proxy"
        assert expected in str(error)


def test_refused_connections_answer_at_once(proxy_process, tmp_path):
    db = tmp_path / "runs.sqlite"
    args = ["--upstream", f"http://127.0.0.1:{free_port()}/mcp", "--db", str(db), "--timeout", str(TIMEOUT_S)]
    proxy = proxy_process(args)
    for rid in range(5):
        status, _, raw = post_call(proxy.tagged("refused", "s", 0), "GetCurrentTime", rid)
        assert status == 502
        error = json.loads(raw)
        # "at once": refused, not left to the --timeout (bench/bench_reliability.py measures how soon)
        assert error["id"] == rid and "unreachable" in error["error"]["message"]
        assert "did not answer within" not in error["error"]["message"]
    calls = wait_calls(db, "refused", 5, settled=True)
    assert [c["status"] for c in calls] == ["transport_error"] * 5
    wait_for(  # the failure is logged
        proxy.stderr_text,
        lambda text: "unreachable" in text or "refused" in text.lower(),
        what="the log line",
    )


# ---------------------------------------------------------------- the stdio client side


def run_stdio(upstream_url: str, db, names: list[str]) -> tuple[dict[int, dict], list[bytes], str]:
    """Send one raw 2026-era tools/call line per name to ``finmcp-proxy --transport stdio``.

    The lines are written once the proxy says it is ready (its start-up, imports included, can take
    seconds on a loaded 2-core machine and is not what the guard measures). Returns the answers by id
    (each with ``"_arrived_s"``: seconds after the lines were written), the stdout lines that are not
    JSON, and the proxy's stderr (for failure messages). The process must end cleanly when its stdin
    closes: exit code 0 and no error or traceback on its stderr.
    """
    command = proxy_stdio_command(
        ["--upstream", upstream_url, "--timeout", str(TIMEOUT_S)], db, "--run", "stdio"
    )
    answers: dict[int, dict] = {}
    garbage: list[bytes] = []
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log)
        try:
            _wait_for_ready(process, log)
            for index, name in enumerate(names):
                process.stdin.write(json.dumps(tool_call(name, {}, index)).encode() + b"\n")
            process.stdin.flush()
            reader = threading.Thread(
                target=_read_lines,
                args=(process, answers, garbage, len(names), time.monotonic()),
                daemon=True,
            )
            reader.start()
            reader.join(HANG_GUARD_S)
        finally:
            process.stdin.close()
            try:
                code = process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                code = process.wait()
        log.seek(0)
        stderr = log.read().decode(errors="replace")
    assert code == 0 and stderr_problems(stderr) == [], stderr
    return answers, garbage, stderr


def _wait_for_ready(process: subprocess.Popen, log: Any, limit_s: float = 60.0) -> None:
    """Wait until ``finmcp-proxy ready`` is on the proxy's stderr (``log``, a file it writes)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        log.seek(0)
        if b"finmcp-proxy ready" in log.read():
            return
        if process.poll() is not None:
            return  # it exited: the caller's checks report how
        time.sleep(0.02)
    raise AssertionError(f"finmcp-proxy did not say it was ready within {limit_s} s")


def _read_lines(process: subprocess.Popen, answers: dict, garbage: list, count: int, started: float) -> None:
    for line in process.stdout:
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            garbage.append(line)
            continue
        if isinstance(message, dict) and "id" in message and ("result" in message or "error" in message):
            answers[message["id"]] = {**message, "_arrived_s": round(time.monotonic() - started, 3)}
            if len(answers) == count:
                return


STDIO_FAULTS = ["slow", "cut_json", "http500", "rpc_error", "cut_sse", "stall_sse"]


def test_stdio_side_answers_every_fault_with_a_jsonrpc_error(bad_upstream, tmp_path):
    """Raw JSON lines through ``finmcp-proxy --transport stdio``: one error per failed request."""
    db = tmp_path / "runs.sqlite"
    names = [*STDIO_FAULTS, "GetCurrentTime"]
    answers, garbage, stderr = run_stdio(bad_upstream.url, db, names)
    seen = f"answers: {json.dumps(answers, ensure_ascii=False)[:3000]}\nproxy stderr:\n{stderr[-3000:]}"
    assert sorted(answers) == list(range(len(names))), f"unanswered: {set(range(len(names))) - set(answers)}"
    assert garbage == []
    late = {i: a["_arrived_s"] for i, a in answers.items() if a["_arrived_s"] >= HANG_GUARD_S}
    assert not late, f"answered only when stdin closed after {HANG_GUARD_S} s: {late}\n{seen}"
    assert answers[len(names) - 1]["result"]["isError"] is False, seen
    for index, name in enumerate(STDIO_FAULTS):
        error = answers[index].get("error")
        assert error and error["message"], (name, seen)
        assert ("upstream exploded" if name == "rpc_error" else "finmcp-proxy") in error["message"], seen
    calls = wait_calls(db, "stdio", len(names))
    status = {c["tool"]: c["status"] for c in calls}
    assert status["GetCurrentTime"] == "ok"
    assert all(status[name] in ("transport_error", "rpc_error") for name in STDIO_FAULTS)


def test_stdio_side_never_writes_non_json_and_answers_invalid_upstream_bodies(bad_upstream, tmp_path):
    answers, garbage, _ = run_stdio(
        bad_upstream.url, tmp_path / "runs.sqlite", ["invalid_json", "sse_no_answer"]
    )
    assert garbage == []
    assert sorted(answers) == [0, 1] and all("error" in a for a in answers.values())
