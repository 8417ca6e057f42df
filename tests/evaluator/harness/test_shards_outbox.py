"""A PostgreSQL shard waits for its proxy's outbox to drain: it compares the calls of its samples in the
local outbox with those in PostgreSQL (count per status), whatever the shipper does inside.

The shipper itself (``finmcp-proxy --ship-to``) is another branch's; here PostgreSQL's rows are
written by hand, as a shipper would."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.harness.outbox import outbox_path, wait_drained
from finmcp.recordings.postgres.connection import connect
from finmcp.recordings.schema import TRACES_DDL


def _outbox(path: Path, rows: list[tuple[str, str, str]]) -> None:
    con = sqlite3.connect(path)
    for ddl in TRACES_DDL:
        con.execute(ddl)
    con.executemany("INSERT INTO calls (run_id, sample_id, status) VALUES (?, ?, ?)", rows)
    con.commit()
    con.close()


def _ship(url: str, rows: list[tuple[str, str, str]], first_id: int = 1) -> None:
    conn = connect(url)
    try:
        for i, (run, sample, status) in enumerate(rows, first_id):
            conn.execute(
                "INSERT INTO calls (origin, local_id, run_id, sample_id, status) VALUES ('p1', %s, %s, %s, %s)",
                (i, run, sample, status),
            )
    finally:
        conn.close()


def test_outbox_file_names(tmp_path: Path) -> None:
    assert outbox_path(tmp_path, "gpt/4 run", "shard-1-of-4").name == "gpt_4_run.shard-1-of-4.outbox.sqlite"


def test_wait_drained_until_postgres_has_the_shards_calls(postgres_url: str, tmp_path: Path) -> None:
    mine = [("R", "s1", "ok"), ("R", "s1", "ok"), ("R", "s2", "error")]
    outbox = tmp_path / "R.shard-0-of-2.outbox.sqlite"
    _outbox(outbox, [*mine, ("R", "s9", "ok"), ("other", "s1", "ok")])  # not this shard's / run's
    _ship(postgres_url, [("R", "s7", "ok")], first_id=100)  # another shard's row is already there
    with pytest.raises(
        EvalInputError, match=r"did not drain .* within 1 s .*'ok': 2.*rows are safe in the outbox"
    ):
        wait_drained(outbox, postgres_url, "R", ["s1", "s2"], timeout=1, poll=0.1)
    _ship(postgres_url, mine[:2])
    with pytest.raises(EvalInputError, match="did not drain"):  # one call still in flight
        wait_drained(outbox, postgres_url, "R", ["s1", "s2"], timeout=0.5, poll=0.1)
    later = threading.Timer(0.5, _ship, (postgres_url, mine[2:], 3))
    later.start()
    start = time.monotonic()
    assert wait_drained(outbox, postgres_url, "R", ["s1", "s2"], timeout=30, poll=0.1) == 3
    assert 0.4 < time.monotonic() - start < 10
    later.join()


def test_an_unreachable_postgres_is_waited_for_then_reported(tmp_path: Path) -> None:
    outbox = tmp_path / "o.sqlite"
    _outbox(outbox, [("R", "s1", "ok")])
    url = "postgresql://nobody:secret@127.0.0.1:9/none?connect_timeout=1"
    with pytest.raises(EvalInputError) as info:
        wait_drained(outbox, url, "R", ["s1"], timeout=0.5, poll=0.1)
    assert "secret" not in str(info.value) and "nobody:***@127.0.0.1:9" in str(info.value)
