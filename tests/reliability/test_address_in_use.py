"""Every program, on a port already taken: one line naming the address and ``--port``, exit status 2.

The three programs bind in one place (``recordings/plumbing/listener.py`` ``bind_listener``), over
HTTP, SSE and TLS alike; each is started here as users start it (the installed console script) on a
port another socket listens on.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from finmcp.evaluator.viewer.serve import DEFAULT_PORT as VIEW_PORT
from finmcp.proxy.defaults import DEFAULT_PORT as PROXY_PORT
from finmcp.recordings.trace_store import SqliteTraceStore
from finmcp.server.options import DEFAULT_PORT as SERVER_PORT
from tests.support.scripts import run_script
from tests.support.tls import Certs, mint

IN_USE = "{program}: 127.0.0.1:{port} is in use; pick another with --port N (or --port 0 for any free port)\n"
README_TOUR_PORTS = (8767, 8768)


@pytest.fixture
def taken() -> Iterator[int]:
    """A loopback port something else listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> Certs:
    return mint(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def trace_db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("db") / "runs.sqlite"
    SqliteTraceStore.open(str(path)).close()
    return path


SERVER = ["--miss", "strict", "--latency", "none"]
CASES = {
    "server http": ("finmcp-server", [*SERVER]),
    "server sse": ("finmcp-server", [*SERVER, "--transport", "sse"]),
    "server https": ("finmcp-server", [*SERVER, "TLS"]),
    "proxy http": ("finmcp-proxy", ["--upstream", "http://127.0.0.1:9/mcp", "--db", "NEW_DB"]),
    "proxy https": ("finmcp-proxy", ["--upstream", "http://127.0.0.1:9/mcp", "--db", "NEW_DB", "TLS"]),
    "viewer": ("finmcp-eval", ["view", "--db", "TRACE_DB"]),
}


@pytest.mark.parametrize("case", CASES)
def test_a_port_in_use_is_one_line_naming_the_flag_and_exit_status_2(
    case: str, taken: int, certs: Certs, trace_db: Path, tmp_path: Path
) -> None:
    program, template = CASES[case]
    new_db = tmp_path / "new.sqlite"
    args: list[str] = []
    for arg in template:
        args += {"TLS": certs.cert_args(), "NEW_DB": [str(new_db)], "TRACE_DB": [str(trace_db)]}.get(
            arg, [arg]
        )
    done = run_script(program, *args, "--host", "127.0.0.1", "--port", str(taken), timeout=120)
    shown = "finmcp-eval view" if program == "finmcp-eval" else program
    assert done.stderr == IN_USE.format(program=shown, port=taken), done.stderr
    assert done.returncode == 2
    assert not new_db.exists()  # the proxy binds before it creates its trace store


def test_each_program_has_its_own_default_port() -> None:
    """The viewer once shared the server's 8765: the README's ``finmcp-eval view`` failed beside the
    tour's server."""
    defaults = {"finmcp-server": SERVER_PORT, "finmcp-proxy": PROXY_PORT, "finmcp-eval view": VIEW_PORT}
    assert defaults == {"finmcp-server": 8765, "finmcp-proxy": 8766, "finmcp-eval view": 8770}
    assert not set(defaults.values()) & set(README_TOUR_PORTS)
    shown = run_script("finmcp-eval", "view", "--help").stdout
    assert f"port (default {VIEW_PORT}; 0 = any free)" in " ".join(shown.split())
