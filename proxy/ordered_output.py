"""Bytes for one client, written in order, some of them only after trace rows are committed.

The proxy must not forward the bytes that complete a ``tools/call`` before that call's row is
committed, but it may not reorder anything either. :class:`OrderedOutput` queues bytes
(:meth:`~OrderedOutput.emit`) and *barriers* (:meth:`~OrderedOutput.after`: the futures of rows
being committed); :meth:`~OrderedOutput.flush` writes everything up to the first barrier still
waiting, in one write. A barrier whose rows are committed calls ``wake`` so its owner flushes again.
A row that fails to commit is logged and does not hold the bytes back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from asyncio import Future

log = logging.getLogger("finmcp.proxy.http")


class _Barrier:
    """Commits that the bytes queued behind it wait for."""

    __slots__ = ("waits",)

    def __init__(self, waits: list[Any]) -> None:
        self.waits = waits

    def passed(self) -> bool:
        return all(future.done() for future in self.waits)


class OrderedOutput:
    """The output of one exchange; ``write`` takes bytes, ``wake`` is called when a barrier passes."""

    __slots__ = ("_items", "_write", "_wake")

    def __init__(self, write: Callable[[bytes], None], wake: Callable[[], None]) -> None:
        self._items: list[bytes | _Barrier] = []
        self._write = write
        self._wake = wake

    def emit(self, data: bytes) -> None:
        """Queue bytes (written at the next :meth:`flush` unless a barrier is waiting before them)."""
        if data:
            self._items.append(data)

    def after(self, waits: list[Future[Any]]) -> None:
        """Bytes emitted from now on wait until these rows are committed."""
        pending = []
        for future in waits:
            if future.done():
                report_commit(future)
            else:
                pending.append(future)
        if pending:
            self._items.append(_Barrier(pending))
            for future in pending:
                future.add_done_callback(self._committed)

    def _committed(self, future: Any) -> None:
        report_commit(future)
        self._wake()

    def flush(self) -> bool:
        """Write everything up to the first barrier still waiting; True when nothing is left."""
        items = self._items
        if not items:
            return True
        ready: list[bytes] = []
        taken = 0
        for item in items:
            if isinstance(item, _Barrier):
                if not item.passed():
                    break
            else:
                ready.append(item)
            taken += 1
        del items[:taken]
        if ready:
            self._write(ready[0] if len(ready) == 1 else b"".join(ready))
        return not items


def report_commit(future: Any) -> None:
    """Log a call row that could not be committed (the response is forwarded all the same)."""
    if future.cancelled():
        return
    exc = future.exception()
    if exc is not None:
        log.error("call row not committed before forwarding: %s", exc)
