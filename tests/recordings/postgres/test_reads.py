"""Reading a trace from PostgreSQL gives exactly what reading it from SQLite gives.

The trace is written by a real server + proxy (a noisy agent, two trials), then copied into
PostgreSQL as a shipper leaves it (``origin``, ``local_id``); the read API and the inspection commands
(through the installed console scripts) must not tell the two stores apart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from finmcp.recordings.errors import RecordingsError
from finmcp.recordings.trace_store import open_trace_store
from tests.support.pg_trace_copy import copy_trace, real_trace
from tests.support.postgres import PostgresCluster
from tests.support.scripts import run_script

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory, postgres_cluster: PostgresCluster) -> tuple[Path, str]:
    db, _refs = real_trace(tmp_path_factory.mktemp("trace"))
    url = postgres_cluster.create_database()
    counts = copy_trace(db, url)
    assert counts["calls"] > 20 and counts["messages"] > counts["calls"] and counts["sessions"] > 0
    return db, url


def _without_ids(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows minus ``id`` (SQLite's is the file's row id; PostgreSQL's is the store-wide one)."""
    return [{k: v for k, v in row.items() if k != "id"} for row in rows]


def test_every_read_gives_the_same_rows_in_the_same_order(stores: tuple[Path, str]) -> None:
    db, url = stores
    with open_trace_store(db) as lite, open_trace_store(url) as pg:
        assert pg.runs() == lite.runs() and [r["run_id"] for r in pg.runs()] == ["noisy"]
        assert pg.sessions() == lite.sessions() and pg.sessions("noisy") == lite.sessions("noisy")
        calls = lite.calls("noisy")
        assert len({c["trial"] for c in calls}) == 2
        assert len({(c["sample_id"], c["trial"], c["turn"], c["call_group"]) for c in calls}) > 10
        assert _without_ids(pg.calls("noisy")) == _without_ids(calls)
        assert [set(c) for c in pg.calls("noisy")] == [set(c) for c in calls]  # same keys, no extras
        sample = calls[-1]["sample_id"]
        assert _without_ids(pg.calls("noisy", sample)) == _without_ids(lite.calls("noisy", sample))
        raw = lite.calls("noisy", turn=1, parse_json=False)
        assert raw and _without_ids(pg.calls("noisy", turn=1, parse_json=False)) == _without_ids(raw)
        assert isinstance(raw[0]["arguments"], str)
        assert _without_ids(pg.messages(run_id="noisy")) == _without_ids(lite.messages(run_id="noisy"))
        key = lite.sessions("noisy")[0]["session_key"]
        assert _without_ids(pg.messages(key)) == _without_ids(lite.messages(key))
        assert pg.calls("absent") == [] and pg.sessions("absent") == []


@pytest.mark.parametrize(
    "argv",
    [
        ["sessions"],
        ["sessions", "--run", "noisy"],
        ["show", "--run", "noisy"],
        ["export", "--run", "noisy"],
        ["export", "--run", "noisy", "--format", "finmcp"],
        ["export", "--run", "noisy", "--format", "fintoolbench"],
    ],
)
def test_inspection_commands_print_the_same_from_either_store(
    stores: tuple[Path, str], argv: list[str]
) -> None:
    db, url = stores
    lite = run_script("finmcp-proxy", argv[0], "--db", str(db), *argv[1:])
    pg = run_script("finmcp-proxy", argv[0], "--db", url, *argv[1:])
    assert lite.returncode == 0, lite.stderr
    assert (pg.returncode, pg.stdout, pg.stderr) == (0, lite.stdout, lite.stderr)
    assert lite.stdout.strip()


def test_a_run_that_is_not_there_and_an_unreachable_server_are_clear(stores: tuple[Path, str]) -> None:
    _db, url = stores
    missing = run_script("finmcp-proxy", "show", "--db", url, "--run", "nope")
    assert missing.returncode == 1 and "no calls for run 'nope' in postgresql://" in missing.stdout
    down = "postgresql://alice:s3cret@127.0.0.1:9/traces"
    for argv in (["show", "--run", "r"], ["sessions"], ["export", "--run", "r"]):
        done = run_script("finmcp-proxy", argv[0], "--db", down, *argv[1:])
        assert done.returncode == 2, done
        assert "cannot connect to postgresql://alice:***@127.0.0.1:9/traces" in done.stderr
        assert "s3cret" not in done.stderr + done.stdout


def test_an_empty_database_is_not_a_trace_store(postgres_url: str, tmp_path: Path) -> None:
    with pytest.raises(RecordingsError, match="not a finmcp trace store yet"):
        open_trace_store(postgres_url)
    with pytest.raises(RecordingsError, match="trace store not found"):
        open_trace_store(tmp_path / "missing.sqlite")
