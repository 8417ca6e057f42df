"""``finmcp-proxy flush``: ship what a stopped proxy left in its outbox, then exit."""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass

from finmcp.proxy.shipper import Shipper
from finmcp.recordings.errors import RecordingsError
from finmcp.recordings.trace_store import SqliteTraceStore


@dataclass(frozen=True)
class FlushOptions:
    """``finmcp-proxy flush``: the outbox, where it ships, the shipper's pace, and how long to try."""

    db: str
    ship_to: str
    ship_batch: int
    ship_interval: float
    timeout: float = 60.0
    log_level: str = "warning"


def cmd_flush(args: FlushOptions) -> int:
    """Drain ``--db`` to ``--ship-to`` within ``--timeout`` seconds; 0 when nothing is left, else 1."""
    logging.basicConfig(
        level=getattr(logging, args.log_level.upper(), logging.WARNING),
        stream=sys.stderr,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    try:
        SqliteTraceStore.open(args.db).close()  # migrate the file, as a proxy would have
    except RecordingsError as exc:
        print(f"finmcp-proxy flush: {exc}", file=sys.stderr)
        return 2
    shipper = Shipper(
        args.db,
        args.ship_to,
        label=f"flush pid {os.getpid()}",
        batch_rows=args.ship_batch,
        interval=args.ship_interval,
    )
    left = shipper.drain(args.timeout)
    if left:
        why = f" (last error: {shipper.last_error})" if shipper.last_error else ""
        if shipper.state == "standby":
            why = " (another process, a running proxy, ships this outbox)"
        print(
            f"finmcp-proxy flush: {left} rows still wait in {args.db} after {args.timeout:g} s{why}",
            file=sys.stderr,
        )
        return 1
    print(f"flushed {shipper.shipped_rows} rows of {args.db} to {shipper.target}; the outbox is empty")
    return 0
