"""Refuse to score a run whose rows are still being shipped to the PostgreSQL store.

Each proxy shipping to PostgreSQL keeps a row in ``origins`` with its unshipped row count and the runs
those rows belong to (``pending_runs``). Scoring a run while one of them still holds its rows would
score a partial run, so :func:`wait_until_shipped` polls until none does, up to a deadline, and then
refuses with a message naming each proxy. A SQLite trace file has nothing in flight.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.inputs.trace_rows import TraceRows

POLL_S = 0.5


def wait_until_shipped(
    rows: TraceRows,
    wait_s: float,
    *,
    poll_s: float = POLL_S,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Return once no proxy holds unshipped rows of ``rows.run_id``; wait at most ``wait_s`` seconds
    (0 = do not wait), then raise :class:`EvalInputError` naming each proxy, its pending rows and the
    age of its last heartbeat."""
    if rows.store.engine != "postgresql":  # a SQLite file has nothing in flight
        return
    if wait_s < 0:
        raise EvalInputError("--wait-flush must be >= 0 seconds")
    deadline = clock() + wait_s
    while True:
        pending = rows.store.in_flight(rows.run_id)
        if not pending:
            return
        left = deadline - clock()
        if left <= 0:
            break
        sleep(min(poll_s, left))
    proxies = "; ".join(
        f"proxy {p.label or p.origin} (origin {p.origin}): {p.pending_rows} pending rows, "
        f"last heartbeat {p.heartbeat_age_s:.1f} s ago"
        for p in pending
    )
    waited = f" after waiting {wait_s:g} s" if wait_s > 0 else ""
    raise EvalInputError(
        f"rows of run {rows.run_id!r} are still in flight{waited} from {proxies}; run `finmcp-proxy flush` "
        "on that proxy (or let its shipper catch up) and score again, or wait longer with "
        "--wait-flush SECONDS"
    )
