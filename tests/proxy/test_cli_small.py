"""Small things a new user meets first (issue 28, defect 7).

- ``finmcp-proxy sessions`` labels its columns;
- the SDK's ``server/discover`` probe (a 2026-07-28 client in ``auto`` mode, in front of a server that
  only speaks the handshake era: server-everything) leaves no open session behind;
- ``finmcp-proxy --help`` shows the tag path and the ``X-Finmcp-*`` headers;
- ``finmcp-proxy --db postgresql://…`` is a one-line error pointing to ``--ship-to``.
"""

from __future__ import annotations

import anyio
import pytest
from mcp.client import Client

from finmcp.proxy.cli import main as proxy_main
from finmcp.recordings import SqliteTraceStore
from tests.conformance.suite import Everything, provisioned
from tests.support.scripts import run_script
from tests.support.traces import wait_sessions


def test_sessions_labels_its_columns(tmp_path, capsys):
    db = tmp_path / "runs.sqlite"
    with SqliteTraceStore.open(db) as store:
        store.start_session("k1", run_id="r", transport="http", client_name="c", client_version="1")
    assert proxy_main(["sessions", "--db", str(db)]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(i for i, line in enumerate(lines) if "SESSION" in line)
    for label in ("SESSION", "RUN", "TRANSPORT", "ERA", "PROTOCOL", "CLIENT", "STARTED", "ENDED"):
        assert label in lines[header], lines[header]
    assert "k1" in lines[header + 1], lines


@pytest.mark.slow
def test_the_sdk_discover_probe_leaves_no_open_session(proxy_process, tmp_path):
    suite = provisioned()
    db = tmp_path / "runs.sqlite"
    with Everything(suite) as everything:
        proxy = proxy_process(["--upstream", everything.url, "--db", str(db)])

        async def main() -> str:
            async with Client(proxy.tagged("probe"), mode="auto") as client:  # probes server/discover first
                return (await client.list_tools()).tools[0].name

        assert anyio.run(main)

        def settled(rows: list[dict]) -> bool:
            return len(rows) == 2 and all(row["ended"] for row in rows)

        # the probe's stateless-era session ended with its refusal; the handshake session on DELETE
        rows = wait_sessions(db, "probe", settled)
    eras = sorted(row["era"] for row in rows)
    assert eras == ["handshake", "stateless"], rows


def test_help_shows_the_tag_path_and_the_tag_headers():
    done = run_script("finmcp-proxy", "--help", timeout=60)
    assert done.returncode == 0, done.stderr
    for text in (
        "/r/RUN/s/SAMPLE/t/TURN/mcp",
        "X-Finmcp-Run",
        "X-Finmcp-Sample",
        "X-Finmcp-Turn",
        "X-Finmcp-Trial",
    ):
        assert text in done.stdout, text
    assert "exit codes:" in done.stdout


@pytest.mark.parametrize("url", ["postgresql://u@127.0.0.1:5432/traces", "postgres://127.0.0.1/t"])
def test_a_postgres_db_points_to_ship_to(url, tmp_path):
    done = run_script(
        "finmcp-proxy", "--db", url, "--upstream", "http://127.0.0.1:9/mcp", cwd=tmp_path, timeout=60
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "--ship-to" in lines[0] and "SQLite" in lines[0], lines[0]
    assert list(tmp_path.iterdir()) == []  # nothing created
