"""A shard's proxy shipping to PostgreSQL: where its outbox lives, and waiting until it has drained.

With ``finmcp-eval run --db postgresql://…`` the spawned proxy writes its trace to a local SQLite
outbox in the run's work folder and ships it with ``--ship-to URL`` (the proxy's shipper, see
docs/scale.md). Before the shard stops its proxy it waits until PostgreSQL holds every call of the
shard's samples that the outbox holds, with the same statuses; it learns this only from the two
stores' ``calls`` tables (the agreed schema), not from the shipper's internals.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

from finmcp.evaluator.errors import EvalInputError
from finmcp.recordings.errors import RecordingsError
from finmcp.recordings.trace_store import open_trace_store


def outbox_path(workdir: Path, run_id: str, label: str) -> Path:
    """The local outbox file of one shard (``label``: ``shard-I-of-N`` or ``all``) of ``run_id``."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in run_id)
    return workdir / f"{safe}.{label}.outbox.sqlite"


def _statuses(store: str | Path, run_id: str, samples: list[str]) -> Counter[str]:
    """Calls of ``samples`` by status in one store (read-only)."""
    with open_trace_store(store, readonly=True) as opened:
        return Counter(opened.call_statuses(run_id, samples))


def _local_statuses(outbox: Path, run_id: str, samples: list[str]) -> Counter[str]:
    try:
        return _statuses(outbox, run_id, samples)
    except RecordingsError:
        return Counter()


def wait_drained(
    outbox: Path, url: str, run_id: str, samples: list[str], timeout: float = 300.0, poll: float = 0.5
) -> int:
    """Block until PostgreSQL has the outbox's calls of ``samples`` (same count per status); returns it.

    Raises :class:`EvalInputError` naming what is still missing after ``timeout`` seconds.
    """
    from finmcp.recordings.postgres.connection import redacted_url

    if not samples:
        return 0
    deadline = time.monotonic() + timeout
    local: Counter[str] = Counter()
    remote: Counter[str] = Counter()
    while True:
        local = _local_statuses(outbox, run_id, samples)
        try:
            remote = _statuses(url, run_id, samples)
        except RecordingsError:
            remote = Counter()  # PostgreSQL unreachable for now: the outbox keeps the rows; wait
        if remote == local:
            return sum(local.values())
        if time.monotonic() >= deadline:
            raise EvalInputError(
                f"run {run_id!r}: the proxy's outbox {outbox} did not drain to {redacted_url(url)} within "
                f"{timeout:.0f} s (outbox calls by status {dict(local)}, shipped {dict(remote)}); "
                "the rows are safe in the outbox and ship once a proxy runs on it again with --ship-to"
            )
        time.sleep(poll)
