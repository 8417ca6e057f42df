"""Reading a trace database the proxy is still writing: rows that lag the traffic are polled for."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from finmcp.recordings import SqliteTraceStore
from tests.support.polling import DEFAULT_TIMEOUT_S, wait_for


def read_calls(db: str | Path, run: str, sample: str | None = None) -> list[dict[str, Any]]:
    """The call rows of a run (or one sample of it), as they are now."""
    with SqliteTraceStore.open(db) as store:
        return store.calls(run, sample)


def wait_calls(
    db: str | Path,
    run: str,
    count: int,
    *,
    sample: str | None = None,
    settled: bool = False,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> list[dict[str, Any]]:
    """The call rows of a run once at least ``count`` exist (and, with ``settled``, none is pending)."""

    def ready(calls: list[dict[str, Any]]) -> bool:
        return len(calls) >= count and not (settled and any(c["status"] == "pending" for c in calls))

    return wait_for(
        lambda: read_calls(db, run, sample), ready, timeout=timeout, what=f"{count} call rows of run {run!r}"
    )


def wait_messages(
    db: str | Path,
    run: str,
    predicate: Callable[[dict[str, Any]], bool] = lambda message: True,
    count: int = 1,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> list[dict[str, Any]]:
    """The message rows of a run that match ``predicate``, once at least ``count`` of them exist."""

    def probe() -> list[dict[str, Any]]:
        with SqliteTraceStore.open(db) as store:
            return [m for m in store.messages(run_id=run) if predicate(m)]

    return wait_for(
        probe, lambda rows: len(rows) >= count, timeout=timeout, what=f"{count} message rows of run {run!r}"
    )


def wait_sessions(
    db: str | Path,
    run: str,
    predicate: Callable[[list[dict[str, Any]]], bool],
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> list[dict[str, Any]]:
    """The session rows of a run, once ``predicate(rows)`` holds (session rows lag the traffic)."""

    def probe() -> list[dict[str, Any]]:
        with SqliteTraceStore.open(db) as store:
            return [dict(row) for row in store.sessions(run)]

    return wait_for(probe, predicate, timeout=timeout, what=f"the session rows of run {run!r}")


def integrity(db: str | Path) -> str:
    """``PRAGMA integrity_check`` of the file ("ok" when sound)."""
    with SqliteTraceStore.open(db) as store:
        return store.db.execute("PRAGMA integrity_check").fetchone()[0]


def checkpoint(db: str | Path) -> None:
    """Fold the WAL into the main file (so a byte search of the files sees everything once)."""
    with SqliteTraceStore.open(db) as store:
        store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def stored_bytes(db: str | Path) -> bytes:
    """Every byte of a database and its ``-wal``/``-shm`` companions."""
    path = Path(db)
    return b"".join(p.read_bytes() for p in sorted(path.parent.glob(path.name + "*")))


def export_formats(db: str | Path, run: str, folder: Path, formats: Iterable[str]) -> list[Path]:
    """``finmcp-proxy export`` of ``run`` in each format (in process), to ``folder/export.FORMAT``."""
    from finmcp.proxy.cli import main as proxy_main

    paths = []
    for fmt in formats:
        out = folder / f"export.{fmt}"
        argv = ["export", "--db", str(db), "--run", run, "--format", fmt, "--output", str(out)]
        assert proxy_main(argv) == 0, argv
        paths.append(out)
    return paths
