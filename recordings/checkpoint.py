"""WAL checkpoints on a thread of their own, so a busy writer never stalls on one.

By default SQLite checkpoints inside the ``COMMIT`` that grows the WAL past 1,000 pages: that
commit copies the WAL into the database and syncs it, which takes milliseconds instead of
microseconds. A writer that must answer quickly (the proxy commits a call's row before forwarding
its response) turns automatic checkpoints off on its connection and runs a
:class:`BackgroundCheckpointer`: a second connection that runs ``PRAGMA wal_checkpoint(PASSIVE)``
every ``interval`` seconds when something was committed. A passive checkpoint never blocks the
writer or readers; sqlite3 releases the GIL while it runs.

A passive checkpoint alone never shortens the WAL under steady writes: SQLite starts the WAL over
only when a write transaction begins with every frame copied, and a writer that commits while the
checkpoint runs always leaves a few frames behind. The proxy's 10^5-call soak grew its WAL to 1.1
GiB after 6 x 10^4 calls (and its RSS with the WAL index it maps). So once the WAL holds
``restart_frames`` frames, the thread follows the passive checkpoint with a ``RESTART`` one: it takes
the write lock for the few frames left and the database sync (waiting at most ``RESTART_WAIT_MS``
for readers, else it tries again next time), and the next commit writes the WAL from its start.
"""

from __future__ import annotations

import logging
import sqlite3
import threading

from finmcp.recordings.schema import BUSY_TIMEOUT_MS

log = logging.getLogger("finmcp.recordings.checkpoint")

RESTART_FRAMES = 4096
"""WAL length (frames; 16 MiB at 4 KiB pages) from which a checkpoint also restarts the WAL."""
RESTART_WAIT_MS = 5
"""How long a restarting checkpoint waits for the writer or readers (a writer waits at most this too)."""


class BackgroundCheckpointer:
    """Checkpoints the WAL of the database at ``path`` every ``interval`` seconds while it changes."""

    def __init__(self, path: str, interval: float = 0.25, restart_frames: int = RESTART_FRAMES) -> None:
        self.path = path
        self.interval = interval
        self.restart_frames = restart_frames
        self.checkpoints = 0
        self.restarts = 0
        self.last: tuple[int, int, int] | None = None  # (busy, WAL frames, frames checkpointed)
        self._conn = sqlite3.connect(
            path, check_same_thread=False, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000
        )
        self._stop = threading.Event()
        self._seen_version: int | None = None
        self._thread = threading.Thread(target=self._run, name="finmcp-wal-checkpoint", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.checkpoint_if_changed()

    def checkpoint_if_changed(self) -> bool:
        """Run one passive checkpoint if another connection committed since the last one."""
        try:
            version = self._conn.execute("PRAGMA data_version").fetchone()[0]
            if version == self._seen_version:
                return False
            self._seen_version = version
            self.last = tuple(self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone())
            self.checkpoints += 1
            if self.last[1] >= self.restart_frames:
                self._restart()
            return True
        except sqlite3.Error as exc:  # a checkpoint that fails now is retried at the next interval
            log.warning("WAL checkpoint of %s failed: %s", self.path, exc)
            return False

    def _restart(self) -> None:
        """Copy the last frames under the write lock so that the next commit starts the WAL over."""
        conn = self._conn
        conn.execute(f"PRAGMA busy_timeout={RESTART_WAIT_MS}")
        try:
            busy, frames, copied = conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()
        finally:
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        if not busy:
            self.restarts += 1
            self.last = (busy, frames, copied)

    def close(self) -> None:
        """Stop the thread after a last checkpoint and close the connection."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join()
        self.checkpoint_if_changed()
        self._conn.close()
