"""Background WAL checkpoints: commits never checkpoint, a thread keeps the WAL short."""

from __future__ import annotations

import sqlite3
import threading

from finmcp.recordings import SqliteTraceStore
from finmcp.recordings.checkpoint import BackgroundCheckpointer
from tests.support.polling import wait_for


def _fully_checkpointed(path) -> bool:
    conn = sqlite3.connect(path)
    try:
        busy, log_frames, done = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    finally:
        conn.close()
    return busy == 0 and done == log_frames


def test_commits_stop_checkpointing_and_the_thread_catches_up(tmp_path):
    path = tmp_path / "runs.sqlite"
    wal = tmp_path / "runs.sqlite-wal"
    store = SqliteTraceStore.open(path)
    store.checkpoint_in_background(interval=3600)  # the test drives the checkpoints itself
    assert store.db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    checkpointer = store._checkpointer
    assert isinstance(checkpointer, BackgroundCheckpointer)
    body = '{"jsonrpc":"2.0","id":1,"result":{"content":[]},"pad":"' + "x" * 3000 + '"}'
    for i in range(1500):  # one page or more per commit: past the 1,000 at which a commit checkpoints
        store.log_message(direction="s2c", kind="response", body=body, session_key="s", jsonrpc_id=i)
    page = store.db.execute("PRAGMA page_size").fetchone()[0]
    assert wal.stat().st_size > 1500 * page  # no commit checkpointed (and so restarted) the WAL
    assert checkpointer.checkpoint_if_changed() is True
    busy, frames, copied = checkpointer.last
    assert busy == 0 and frames == copied > 1500  # every commit's frames, copied by the thread
    assert checkpointer.checkpoint_if_changed() is False  # nothing committed since
    store.close()
    assert not checkpointer._thread.is_alive()
    with SqliteTraceStore.open(path) as reopened:
        assert len(reopened.messages()) == 1500


def test_the_thread_checkpoints_while_the_writer_keeps_committing(tmp_path):
    path = tmp_path / "runs.sqlite"
    store = SqliteTraceStore.open(path)
    store.checkpoint_in_background(interval=0.01)
    stop = threading.Event()
    written = []

    def write() -> None:
        while not stop.is_set():
            written.append(store.log_message(direction="c2s", kind="request", body="{}", session_key="w"))

    writer = threading.Thread(target=write)
    writer.start()
    try:
        wait_for(lambda: store._checkpointer.checkpoints >= 3, what="three checkpoints while writing")
    finally:
        stop.set()
        writer.join()
    store.close()
    assert _fully_checkpointed(path)  # the last checkpoint at close copied everything
    with SqliteTraceStore.open(path) as reopened:
        assert len(reopened.messages()) == len(written)


def test_in_memory_stores_ignore_it():
    with SqliteTraceStore.open(":memory:") as store:
        store.checkpoint_in_background()
        assert store._checkpointer is None


def test_a_long_wal_is_restarted_so_that_it_stops_growing(tmp_path):
    """Past ``restart_frames`` the thread restarts the WAL: the next commit writes it from its start."""
    store = SqliteTraceStore.open(tmp_path / "runs.sqlite")
    store.checkpoint_in_background(interval=3600)  # the test drives the checkpoints itself
    checkpointer = store._checkpointer
    assert isinstance(checkpointer, BackgroundCheckpointer)
    checkpointer.restart_frames = 64
    for i in range(100):  # a frame or more per commit
        store.log_message(direction="c2s", kind="request", body="{}", session_key="s", jsonrpc_id=i)
    assert checkpointer.checkpoint_if_changed() is True
    assert checkpointer.restarts == 1
    store.log_message(direction="c2s", kind="request", body="{}", session_key="s", jsonrpc_id=100)
    assert checkpointer.checkpoint_if_changed() is True
    busy, frames, copied = checkpointer.last
    assert busy == 0 and frames == copied < 10  # the WAL holds the last commit only
    assert checkpointer.restarts == 1
    store.close()
    with SqliteTraceStore.open(tmp_path / "runs.sqlite") as reopened:
        assert len(reopened.messages()) == 101
