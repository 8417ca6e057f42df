"""The checks the process fixtures make at teardown catch what they promise to catch."""

from __future__ import annotations

import signal

from finmcp.server.testing import ServerProcess
from tests.support.processes import PROXY_SIGTERM_EXIT, SERVER_SIGTERM_EXIT, Child, Children, stderr_problems

LOG = """finmcp-proxy ready: http://127.0.0.1:1/mcp (upstream http://127.0.0.1:2/mcp, db x, loop uvloop)
2026-01-01 12:00:00,001 finmcp.proxy.writer WARNING trace database locked by another writer; 3 rows wait
2026-01-01 12:00:00,002 finmcp.proxy.http_proxy ERROR proxy failed on b'POST' b'/mcp'
Traceback (most recent call last):
  File "proxy/http_proxy.py", line 199, in handle
RuntimeError: boom
2026-01-01 12:00:01,000 mcp.server CRITICAL gave up
ERROR:    Exception in ASGI application
Traceback (most recent call last):
ValueError: bad
2026-01-01 12:00:02,000 finmcp.server INFO a line that mentions ERROR and Traceback (most recent call last) in passing
"""


def test_error_records_and_tracebacks_are_problems_and_warnings_are_not():
    problems = stderr_problems(LOG)
    assert [p.splitlines()[0] for p in problems] == [
        "2026-01-01 12:00:00,002 finmcp.proxy.http_proxy ERROR proxy failed on b'POST' b'/mcp'",
        "2026-01-01 12:00:01,000 mcp.server CRITICAL gave up",
        "ERROR:    Exception in ASGI application",
        "2026-01-01 12:00:02,000 finmcp.server INFO a line that mentions ERROR and Traceback (most recent call "
        "last) in passing",
    ]
    assert problems[0].endswith("RuntimeError: boom")  # the traceback belongs to its record
    assert stderr_problems(LOG, allow=["proxy failed", "gave up", "ASGI", "in passing"]) == []


def test_a_bare_traceback_is_a_problem():
    text = "finmcp-server ready: http://127.0.0.1:1 (http)\nTraceback (most recent call last):\nKeyError: 1\n"
    (problem,) = stderr_problems(text)
    assert problem.endswith("KeyError: 1")


def test_the_exit_codes_on_sigterm_are_todays():
    assert SERVER_SIGTERM_EXIT == -signal.SIGTERM  # uvicorn re-raises the signal after its graceful stop
    assert PROXY_SIGTERM_EXIT == 0


def test_a_child_that_died_during_the_test_is_reported():
    children = Children()
    server = children.server(["--latency", "none"])
    server.process.kill()
    server.process.wait(5)
    problems = children.close()
    assert problems and f"had already exited with {-signal.SIGKILL}" in problems[0]


def test_a_killed_child_may_die_but_its_stderr_is_still_read():
    children = Children()
    server = children.server(["--latency", "none"], killed=True)
    server.process.kill()
    server.process.wait(5)
    assert children.close() == []


def test_an_unexpected_exit_code_is_reported():
    server = ServerProcess(["--latency", "none"]).start()
    child = Child(server, "finmcp-server", sigterm_exit=0)  # pretend the server should exit with 0
    problems = child.close()
    assert problems and f"exited with {SERVER_SIGTERM_EXIT} after SIGTERM (expected 0)" in problems[0]


def test_stop_returns_the_whole_stderr_and_close_reports_nothing_for_a_clean_child(tmp_path):
    children = Children()
    server = children.server(["--latency", "none"])
    proxy = children.proxy(["--upstream", server.url, "--db", str(tmp_path / "runs.sqlite")])
    assert children.stop(proxy).startswith("finmcp-proxy ready: ")
    assert proxy.process.returncode == PROXY_SIGTERM_EXIT
    assert children.close() == []
    assert server.process.returncode == SERVER_SIGTERM_EXIT
