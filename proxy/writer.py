"""``TraceWriter``: every SQLite write of the proxy, batched on the event loop.

The transports submit operations (plain callables taking the store). Nothing is written at once:
operations are queued in memory and executed in one transaction, in the order submitted, when

- an operation that must be durable before a response is forwarded (a call's finished row, whose
  future the caller awaits) was submitted: at the end of the current loop iteration, so every call
  finished in one iteration shares one transaction and one commit (group commit under load);
- ``linger`` seconds passed since the oldest queued operation (message rows, a call's pending row);
- ``MAX_BATCH`` operations are queued.

A flush commits right after the last awaited operation and resolves the futures; what was queued
behind it waits for the next flush, off the response's critical path. Operations submitted with
``defer`` (message rows) are left to the ``linger`` flush altogether: a call's commit then holds
only call rows (half the B-tree pages), and message rows are written many at a time. No
transaction stays open between loop iterations, so other processes writing the same file wait at
most one flush.

When another process holds the write lock, ``BEGIN`` gives up after the store's (short) busy
timeout and the batch goes back to the head of the queue, retried with backoff (``RETRY_FIRST`` up
to ``RETRY_MAX`` seconds): the loop keeps forwarding everything else, and responses that wait for
their call rows wait until the rows are committed. Nothing is dropped.

The writer runs on the loop thread on purpose: handing rows to a thread and back cost more than the
writes themselves (GIL and wake-ups; see ``docs/proxy.md``). A failing operation is reported and
skipped; it never stops the writer or the forwarding.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import time
from collections.abc import Callable
from typing import Any

from finmcp.recordings.trace_store import SqliteTraceStore

log = logging.getLogger("finmcp.proxy.writer")

Operation = Callable[[SqliteTraceStore], Any]
Queued = tuple[Operation, "asyncio.Future[Any] | None"]
MAX_BATCH = 512
RETRY_FIRST = 0.02
RETRY_MAX = 1.0


class TraceWriter:
    """Owns the queue of trace writes of one proxy process; ``submit`` from the loop, ``close`` at the end."""

    def __init__(
        self, store: SqliteTraceStore, loop: asyncio.AbstractEventLoop | None = None, linger: float = 0.02
    ) -> None:
        self.store = store
        self._loop = loop
        self.linger = linger
        self._queue: list[Queued] = []
        self._deferred: list[Operation] = []  # written only by full flushes (linger, size, close)
        self._urgent = 0  # awaited operations in the queue
        self._soon: asyncio.Handle | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._retry: asyncio.TimerHandle | None = None  # set while the database is locked by another writer
        self._delay = RETRY_FIRST
        self._locked_since = 0.0
        self.failures = 0
        self.written = 0
        self.commits = 0
        self.lock_waits = 0

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Schedule flushes and resolve futures on ``loop`` (the loop that submits and awaits)."""
        self._loop = loop

    def submit(
        self, op: Operation, *, wait: bool = False, defer: bool = False, now: bool = False
    ) -> asyncio.Future[Any] | None:
        """Queue ``op``; with ``wait`` return a future resolved once it is committed.

        ``defer`` (not with ``wait``) leaves ``op`` out of the commits that callers wait for: it is
        written within ``linger`` seconds. ``now`` (with ``wait``) commits before returning instead
        of at the end of the loop iteration, for a caller that knows no other awaited write can join
        the commit (the future is then already resolved, and awaiting it costs no loop iteration).
        Without a running loop (shutdown, plain code) everything queued is flushed at once.
        """
        loop = self._running_loop()
        if loop is None:
            self._queue.append((op, None))
            self.flush()
            return None
        if defer and not wait:
            self._deferred.append(op)
            if self._retry is None:
                if self._timer is None:
                    self._timer = loop.call_later(self.linger, self.flush)
                if len(self._deferred) >= MAX_BATCH and self._soon is None:
                    self._soon = loop.call_soon(self.flush)
            return None
        future: asyncio.Future[Any] | None = None
        if wait:
            future = loop.create_future()
            future.add_done_callback(_retrieve)
            self._urgent += 1
        self._queue.append((op, future))
        if self._retry is not None:  # the database is locked: the retry timer writes everything
            return future
        if wait:
            if now:
                self._write_urgent()
            elif self._soon is None:
                self._soon = loop.call_soon(self._flush_urgent)
        elif self._timer is None:
            self._timer = loop.call_later(self.linger, self.flush)
        if len(self._queue) >= MAX_BATCH and self._soon is None:
            self._soon = loop.call_soon(self.flush)
        return future

    def _running_loop(self) -> asyncio.AbstractEventLoop | None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not in an event loop thread
            return None
        self._loop = loop
        return loop

    def flush(self) -> None:
        """Execute and commit everything queued (at most ``MAX_BATCH`` per transaction)."""
        self._cancel_handles()
        if self._deferred:
            self._queue += [(op, None) for op in self._deferred]
            self._deferred = []
        while self._queue:
            batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
            self._urgent -= sum(1 for _, fut in batch if fut is not None)
            if not self._write(batch):
                return

    def _flush_urgent(self) -> None:
        self._soon = None
        self._write_urgent()

    def _write_urgent(self) -> None:
        """Write up to the last awaited operation; leave what follows it for the next flush."""
        if not self._urgent:
            return
        queue = self._queue
        last = len(queue) - 1
        while queue[last][1] is None:
            last -= 1
        batch, self._queue = queue[: last + 1], queue[last + 1 :]
        self._urgent = 0
        if not self._write(batch):
            return
        waiting = self._queue or self._deferred
        if waiting and self._timer is None and self._loop is not None and not self._loop.is_closed():
            self._timer = self._loop.call_later(self.linger, self.flush)

    def _cancel_handles(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._soon is not None:
            self._soon.cancel()
            self._soon = None

    def _write(self, batch: list[Queued]) -> bool:
        """One transaction for ``batch``; every future in it is resolved after the commit.

        False when another writer holds the lock: nothing was written and the batch is queued again.
        """
        results: list[tuple[asyncio.Future[Any], Any, BaseException | None]] = []
        error: BaseException | None
        store = self.store
        begun = False
        try:
            with store.transaction():
                begun = True
                for op, future in batch:
                    try:
                        value, error = op(store), None
                        self.written += 1
                    except Exception as exc:  # one bad row must not lose the others
                        self.failures += 1
                        log.warning("trace write failed: %s", exc)
                        value, error = None, exc
                    if future is not None:
                        results.append((future, value, error))
            self.commits += 1
        except Exception as exc:  # BEGIN or COMMIT failed (disk full, locked for too long)
            if not begun and _is_busy(exc) and self._wait_for_lock(batch):
                return False
            self.failures += len(batch)
            log.error("trace batch of %d writes failed: %s", len(batch), exc)
            results = [(future, None, exc) for _, future in batch if future is not None]
        for future, value, error in results:
            if future.done():
                continue
            with contextlib.suppress(RuntimeError):  # its loop is closed (a flush at shutdown)
                if error is None:
                    future.set_result(value)
                else:
                    future.set_exception(error)
        if self._locked_since:
            log.warning("trace database writable again after %.1f s", time.monotonic() - self._locked_since)
            self._locked_since = 0.0
            self._delay = RETRY_FIRST
        return True

    def _wait_for_lock(self, batch: list[Queued]) -> bool:
        """Queue ``batch`` again and retry later; False without a running loop to retry on."""
        loop = self._running_loop()
        if loop is None:
            return False
        self._queue[:0] = batch
        self._urgent += sum(1 for _, fut in batch if fut is not None)
        self._cancel_handles()
        self.lock_waits += 1
        if not self._locked_since:
            self._locked_since = time.monotonic()
            log.warning("trace database locked by another writer; %d rows wait (retrying)", len(self._queue))
        self._retry = loop.call_later(self._delay, self._retry_flush)
        self._delay = min(self._delay * 2, RETRY_MAX)
        return True

    def _retry_flush(self) -> None:
        self._retry = None
        self.flush()

    def close(self) -> None:
        """Commit what is queued (the store stays open; its owner closes it)."""
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None
        self.flush()


def _is_busy(exc: BaseException) -> bool:
    """True for SQLite's "database is locked" (another connection holds the write lock)."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    return getattr(exc, "sqlite_errorcode", None) == 5 or "locked" in str(exc)  # 5 = SQLITE_BUSY


def _retrieve(future: asyncio.Future[Any]) -> None:
    """Mark a failed future's exception as seen (callers that do not await it must not warn)."""
    if not future.cancelled():
        future.exception()
