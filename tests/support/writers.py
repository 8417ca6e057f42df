"""Several writer processes taking turns on one trace database (run in ``spawn``-ed children)."""

from __future__ import annotations

from collections.abc import Sequence
from multiprocessing.sharedctypes import Synchronized
from multiprocessing.synchronize import Condition

from finmcp.recordings import SqliteTraceStore


def write_in_turn(
    db: str, run: str, me: int, schedule: Sequence[int], turn: Synchronized, changed: Condition
) -> None:
    """Open the store first, then write call ``i`` of ``schedule`` when ``schedule[i] == me`` and it is turn ``i``.

    Each call is one transaction (as a proxy commits a call row), so the processes interleave their
    commits exactly as the schedule says while each keeps its own connection (and ``seq`` cache).
    """
    store = SqliteTraceStore.open(db)
    try:
        for index, writer in enumerate(schedule):
            if writer != me:
                continue
            with changed:

                def my_turn(index: int = index) -> bool:
                    return turn.value == index

                if not changed.wait_for(my_turn, timeout=60):
                    raise TimeoutError(f"writer {me} never got turn {index}")
                with store.transaction():
                    store.begin_call(tool="T", arguments={}, run_id=run, sample_id=f"w{me}-{index}")
                turn.value += 1
                changed.notify_all()
    finally:
        store.close()
