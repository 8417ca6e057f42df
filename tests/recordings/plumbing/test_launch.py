"""The ready line and the launcher, with the real installed finmcp-server and finmcp-proxy."""

from __future__ import annotations

import io
import signal
import sys
from pathlib import Path

import pytest

from finmcp.recordings.plumbing.launch import (
    FinmcpProcess,
    LaunchError,
    announce_ready,
    announce_warm,
    command_for,
    parse_ready,
    parse_warm,
    ready_line,
)


def test_ready_line_and_its_parser():
    assert ready_line("finmcp-server", "http://127.0.0.1:8080", "http") == (
        "finmcp-server ready: http://127.0.0.1:8080 (http)"
    )
    stream = io.StringIO()
    announce_ready(
        "finmcp-proxy", "http://[::1]:9/mcp", "upstream http://h/mcp (x), db d, loop uvloop", stream
    )
    text = "finmcp-proxy: warming up\n" + stream.getvalue()
    ready = parse_ready(text)
    assert ready is not None and ready.program == "finmcp-proxy"
    assert (ready.where, ready.base, ready.port) == ("http://[::1]:9/mcp", "http://[::1]:9", 9)
    assert ready.detail == "upstream http://h/mcp (x), db d, loop uvloop"
    assert parse_ready(text, "finmcp-server") is None
    stdio = parse_ready("finmcp-proxy ready: stdio (upstream u, db d, loop asyncio)\n")
    assert stdio is not None and (stdio.where, stdio.base, stdio.port) == ("stdio", "", 0)
    assert parse_ready("finmcp-server ready: http://127.0.0.1:80") is None  # a line still being written


def test_the_installed_console_script_is_preferred(monkeypatch, tmp_path):
    bin_dir = Path(sys.executable).parent
    assert command_for("finmcp-server") == [str(bin_dir / "finmcp-server")]
    assert command_for("finmcp-proxy", module="bench.relay") == [sys.executable, "-m", "bench.relay"]
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))  # a folder without the scripts
    assert command_for("finmcp-proxy") == [str(tmp_path / "python"), "-m", "finmcp.proxy"]


def test_server_and_proxy_start_stop_and_report_their_exit(tmp_path):
    server = FinmcpProcess(
        "finmcp-server", ["--latency", "none", "--port", "0"], health_check=True, stop_timeout=5
    )
    assert server.command()[0].endswith("/finmcp-server")
    with server:
        assert server.returncode is None and server.port > 0 and server.url == server.base + "/mcp"
        assert server.health()["status"] == "ok"
        proxy_args = [
            "--upstream",
            server.url,
            "--db",
            str(tmp_path / "r.sqlite"),
            "--host",
            "127.0.0.1",
            "--port",
            "0",
        ]
        with FinmcpProcess("finmcp-proxy", proxy_args) as proxy:
            assert proxy.ready is not None and proxy.ready.detail.startswith(f"upstream {server.url}")
            assert proxy.tagged("r1", "s1", 0) == f"{proxy.base}/r/r1/s/s1/t/0/mcp"
            assert proxy.health()["write_failures"] == 0
        assert proxy.returncode == 0  # SIGTERM: the proxy flushes its writer and exits cleanly
        assert "finmcp-proxy ready:" in proxy.stderr_text()  # still readable after the stop
    assert server.returncode in (0, -signal.SIGTERM)  # uvicorn re-raises the SIGTERM it handled
    assert "finmcp-server ready:" in server.stderr_text()
    assert not server.log_path.exists()  # the log file is gone, its text kept


def test_a_failed_start_raises_with_stderr_and_keeps_the_exit_status():
    class Failed(LaunchError):
        pass

    process = FinmcpProcess("finmcp-server", ["--inventory", "nope", "--port", "0"], error=Failed)
    with pytest.raises(Failed, match="finmcp-server exited with 2") as caught:
        process.start()
    assert "--inventory nope" in str(caught.value)
    assert process.returncode == 2 and "--inventory nope" in process.stderr_text()


def test_the_warm_line_and_its_parser():
    stream = io.StringIO()
    announce_ready("finmcp-server", "http://127.0.0.1:9", "http", stream)
    assert parse_warm(stream.getvalue()) is None  # a ready line is not a warm line
    announce_warm("finmcp-server", "http://127.0.0.1:9", "warm-up 5.2 s", stream)
    warm = parse_warm(stream.getvalue(), "finmcp-server")
    assert warm is not None and (warm.base, warm.detail) == ("http://127.0.0.1:9", "warm-up 5.2 s")
    ready = parse_ready(stream.getvalue())
    assert ready is not None and ready.detail == "http"  # and a warm line is not a ready line
    assert parse_warm("finmcp-server warm: http://127.0.0.1:9 (warm-up") is None  # still being written


def test_waiting_for_a_warm_line_that_never_comes_is_bounded(tmp_path):
    """The proxy has no warm-up and prints no warm line: ``wait_warm`` gives up after ``warm_timeout``."""
    args = ["--upstream", "http://127.0.0.1:9/mcp", "--db", str(tmp_path / "r.sqlite"), "--port", "0"]
    proxy = FinmcpProcess("finmcp-proxy", args, wait_warm=True, warm_timeout=0.5)
    with pytest.raises(LaunchError, match=r"finmcp-proxy not warm 0\.5 s after it was ready"):
        proxy.start()
    assert proxy.returncode is not None  # stopped on the way out
