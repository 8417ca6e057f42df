"""What the stdio side does with lines that are not JSON-RPC, and with an upstream command that fails.

Real processes: ``finmcp-proxy --transport stdio`` fed raw bytes on its stdin, a real stdio upstream
behind it (``finmcp-server --transport stdio``, or a small Python child that fails on purpose).

- A line that is not JSON (truncated, not JSON at all, invalid UTF-8) gets a ``-32700`` parse error;
  a JSON value that is not a JSON-RPC message gets ``-32600``. Neither is forwarded; the trace has the
  line (an ``invalid`` message row, its bytes escaped) and the proxy's answer (an ``error`` row), and no
  call row (the upstream ran nothing).
- An ``--upstream-cmd`` that cannot be started is a one-line error and exit code 2 before any ready
  line; an upstream that dies later is named in every answer (exit status, its last stderr line) and
  the proxy exits 1.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from finmcp.recordings import SqliteTraceStore
from tests.support.net import free_port
from tests.support.processes import stderr_problems
from tests.support.rpc import tool_call
from tests.support.scripts import proxy_stdio_command, server_stdio_command
from tests.support.stdio_lines import StdioLines
from tests.support.traces import wait_calls, wait_messages

PARSE_ERROR, INVALID_REQUEST = -32700, -32600


def _upstream() -> list[str]:
    return ["--upstream-cmd", server_stdio_command()]


def _messages(db, run: str) -> list[dict]:
    with SqliteTraceStore.open(db) as store:
        return store.messages(run_id=run)


@pytest.mark.slow
def test_malformed_lines_are_answered_not_forwarded_and_logged(tmp_path):
    db = tmp_path / "runs.sqlite"
    cases = [
        (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"GetCur', PARSE_ERROR, None),
        (b"not json at all", PARSE_ERROR, None),
        (b"42", INVALID_REQUEST, None),
        (b'"tools/call"', INVALID_REQUEST, None),
        (b'{"jsonrpc":"2.0","id":7}', INVALID_REQUEST, 7),
        (b"[]", INVALID_REQUEST, None),
    ]
    with StdioLines(_upstream(), db, "--run", "bad-lines", hang_guard=30) as proxy:
        for line, code, rid in cases:
            proxy.send_raw(line)
            answer = proxy.read()
            assert answer["id"] == rid and answer["error"]["code"] == code, (line, answer)
            assert "finmcp-proxy" in answer["error"]["message"], answer
        proxy.send_raw(b"[1,2,3]")  # a batch of three invalid requests: three answers, in one array
        batch = proxy.read()
        assert [(a["id"], a["error"]["code"]) for a in batch] == [(None, INVALID_REQUEST)] * 3
        ok = proxy.ask(tool_call("GetCurrentTime", {}, 9))  # the next line is this call's answer
        assert ok["id"] == 9 and "result" in ok, ok
    assert [c["status"] for c in wait_calls(db, "bad-lines", 1, settled=True)] == ["ok"]
    rows = _messages(db, "bad-lines")
    client_invalid = [m for m in rows if m["direction"] == "c2s" and m["kind"] == "invalid"]
    assert [m["body"] for m in client_invalid] == [c[0].decode() for c in cases] + ["[1,2,3]"]
    refusals = [m for m in rows if m["direction"] == "s2c" and m["kind"] == "error"]
    assert len(refusals) == len(cases) + 3, refusals  # one row for each answer of the batch's array


@pytest.mark.slow
def test_a_tools_call_in_invalid_utf8_is_refused_with_its_id_and_the_trace_tells_the_same(tmp_path):
    db = tmp_path / "runs.sqlite"
    good = json.dumps(tool_call("GetCurrentTime", {"note": "AAAA"}, 5)).encode()
    line = good.replace(b"AAAA", b"A\xff\xfeA")
    with StdioLines(_upstream(), db, "--run", "utf8", hang_guard=30) as proxy:
        proxy.send_raw(line)
        answer = proxy.read()
        assert answer["id"] == 5 and answer["error"]["code"] == PARSE_ERROR, answer
        assert "UTF-8" in answer["error"]["message"], answer
        ok = proxy.ask(tool_call("GetCurrentTime", {}, 6))
        assert ok["id"] == 6 and "result" in ok, ok
    calls = wait_calls(db, "utf8", 1, settled=True)
    assert [(c["jsonrpc_id"], c["status"]) for c in calls] == [(6, "ok")]  # the upstream ran only id 6
    sent = wait_messages(db, "utf8", lambda m: m["direction"] == "c2s" and m["kind"] == "invalid")
    assert sent[0]["body"] == line.decode("utf-8", errors="backslashreplace")  # the bytes, escaped
    refused = wait_messages(db, "utf8", lambda m: m["direction"] == "s2c" and m["jsonrpc_id"] == 5)
    assert refused[0]["kind"] == "error" and str(PARSE_ERROR) in refused[0]["body"]


def test_an_upstream_command_that_does_not_exist_is_a_one_line_error_before_ready(tmp_path):
    db = tmp_path / "runs.sqlite"
    missing = str(tmp_path / "no-such-mcp-server")
    command = proxy_stdio_command(["--upstream-cmd", f"{missing} --flag"], db)
    done = subprocess.run(
        command, input=json.dumps(tool_call("X", {}, 1)).encode() + b"\n", capture_output=True, timeout=60
    )
    err = done.stderr.decode()
    assert done.returncode == 2, (done.returncode, err)
    assert done.stdout == b"", done.stdout
    assert "ready" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert missing in lines[0] and "No such file" in lines[0] and "--upstream-cmd" in lines[0], err


def test_an_sse_upstream_that_cannot_be_reached_is_a_one_line_error_before_ready(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/sse"  # nothing listens there
    command = proxy_stdio_command(["--upstream-sse", url, "--timeout", "5"], tmp_path / "runs.sqlite")
    done = subprocess.run(command, input=b"", capture_output=True, timeout=60)
    err = done.stderr.decode()
    assert done.returncode == 2 and done.stdout == b"", (done.returncode, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and url in lines[0] and "could not be started" in lines[0], err


DYING = (
    "import sys; sys.stderr.write('boom: the config file is gone\\n'); sys.stderr.flush(); "
    "sys.stdin.readline(); sys.exit(3)"
)


def test_an_upstream_that_dies_is_named_in_every_answer_and_the_exit_code(tmp_path):
    db = tmp_path / "runs.sqlite"
    upstream = f'{sys.executable} -c "{DYING}"'
    command = proxy_stdio_command(["--upstream-cmd", upstream], db, "--run", "dies")
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdin is not None and process.stdout is not None
    answers = []
    for rid in (1, 2):
        process.stdin.write(json.dumps(tool_call("GetCurrentTime", {}, rid)).encode() + b"\n")
        process.stdin.flush()
        answers.append(json.loads(process.stdout.readline()))
    process.stdin.close()
    code = process.wait(timeout=30)
    err = process.stderr.read().decode() if process.stderr is not None else ""
    for rid, answer in zip((1, 2), answers, strict=True):
        message = answer["error"]["message"]
        assert answer["id"] == rid and "code 3" in message and "boom: the config file is gone" in message, (
            answer
        )
    assert code == 1, (code, err)
    assert "boom: the config file is gone" in err  # the upstream's stderr still reaches the proxy's
    assert stderr_problems(err, allow=[r".*upstream"]) == [], err
    calls = wait_calls(db, "dies", 2, settled=True)
    assert [c["status"] for c in calls] == ["transport_error", "transport_error"]
