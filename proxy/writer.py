"""``TraceWriter``: every SQLite write of the proxy runs on one dedicated thread, in batches.

The event loop never touches SQLite. It submits operations (plain callables taking the store).
Writes that need not be durable at once (message rows, a call's pending row) are collected on the
loop and handed to the thread together with the next write that must be durable before a response
is forwarded (a call's finished row, whose future the caller awaits), or after ``linger`` seconds.
Durable writes are handed over at the end of the current loop iteration, so the calls finished in
one iteration share one hand-off. The thread drains whatever is queued into one transaction (one
commit for many rows: group commit under load), commits right after the last awaited write (rows
queued behind it go into the next transaction) and resolves all futures of the batch with a single
hop back into the loop. So a call costs at most one hand-off for its pending row, one for its
finished row and one commit, and the loop never waits on SQLite otherwise (a WAL checkpoint stall
delays only the responses waiting for their rows). A failing operation is reported and skipped; it
never stops the writer or the forwarding.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from recordings.store import RecordingStore

log = logging.getLogger("finmcp.proxy.writer")

Operation = Callable[[RecordingStore], Any]
MAX_BATCH = 512
_STOP = object()


class TraceWriter:
    """Owns the store and the writer thread; ``submit`` from the loop, ``close`` at the end."""

    def __init__(
        self, store: RecordingStore, loop: asyncio.AbstractEventLoop | None = None, linger: float = 0.02
    ) -> None:
        self.store = store
        self._loop = loop
        self.linger = linger
        self._local: list[tuple[Operation, asyncio.Future[Any] | None]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._soon: asyncio.Handle | None = None
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="finmcp-proxy-writer", daemon=True)
        self.failures = 0
        self.written = 0
        self._thread.start()

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Use ``loop`` to resolve futures (the loop that awaits them)."""
        self._loop = loop

    def submit(self, op: Operation, *, wait: bool = False, now: bool = False) -> asyncio.Future[Any] | None:
        """Queue ``op`` (from the loop); with ``wait`` return a future resolved once it is committed.

        ``now`` hands the collected operations to the thread at the end of this loop iteration (so
        they run while the proxy waits for the upstream) without waiting for a commit. Waited-for
        operations are handed over the same way, so every call finished in one loop iteration shares
        one hand-off and one commit.
        """
        if wait:
            loop = self._loop or asyncio.get_running_loop()
            self._loop = loop
            future = loop.create_future()
            future.add_done_callback(_retrieve)
            self._local.append((op, future))
            self._hand_over_soon(loop)
            return future
        self._local.append((op, None))
        if self._soon is not None:
            return None
        try:
            loop = self._loop or asyncio.get_running_loop()
        except RuntimeError:  # no loop (shutdown, plain threads): hand over at once
            self.hand_over()
            return None
        self._loop = loop
        if now:
            self._hand_over_soon(loop)
        elif self._timer is None:
            self._timer = loop.call_later(self.linger, self.hand_over)
        return None

    def _hand_over_soon(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._soon is None:
            if loop.is_closed():
                self.hand_over()
                return
            self._soon = loop.call_soon(self.hand_over)

    def hand_over(self) -> None:
        """Pass everything collected on the loop to the writer thread (one queue item)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._soon is not None:
            self._soon.cancel()
            self._soon = None
        if self._local:
            batch, self._local = self._local, []
            self._queue.put(batch)

    def call_sync(self, op: Operation, timeout: float = 30.0) -> Any:
        """Run ``op`` on the writer thread and wait for it (for threads that are not the loop)."""
        done = threading.Event()
        box: dict[str, Any] = {}

        def wrapper(store: RecordingStore) -> None:
            try:
                box["value"] = op(store)
            except BaseException as exc:  # handed back to the caller
                box["error"] = exc
            finally:
                done.set()

        self._queue.put([(wrapper, None)])
        if not done.wait(timeout):
            raise TimeoutError("trace writer did not answer")
        if "error" in box:
            raise box["error"]
        return box.get("value")

    def flush(self, timeout: float = 30.0) -> None:
        """Block until everything queued so far is committed."""
        self.call_sync(lambda store: None, timeout)

    def close(self, timeout: float = 30.0) -> None:
        """Commit what is queued, stop the thread (the store stays open; its owner closes it)."""
        self.hand_over()
        if self._thread.is_alive():
            self._queue.put([(_STOP, None)])
            self._thread.join(timeout)

    # ---------------------------------------------------------------- the thread

    def _run(self) -> None:
        """Execute batches inside one open transaction; commit when a caller waits, or when idle."""
        txn: Any = None
        ops_in_txn = 0
        results: list[tuple[asyncio.Future[Any], Any, BaseException | None]] = []
        stopping = False
        while not stopping:
            try:
                batch = list(self._queue.get(timeout=self.linger) if txn is not None else self._queue.get())
            except queue.Empty:
                txn, ops_in_txn, results = self._commit(txn, ops_in_txn, results)
                continue
            while len(batch) < MAX_BATCH:
                try:
                    batch.extend(self._queue.get_nowait())
                except queue.Empty:
                    break
            # commit right after the last waited-for operation; what follows it (e.g. the response's
            # message row) goes into the next transaction, off the response's critical path
            last_urgent = max((i for i, (_, fut) in enumerate(batch) if fut is not None), default=-1)
            for index, (op, fut) in enumerate(batch):
                if op is _STOP:
                    stopping = True
                    continue
                if txn is None:
                    txn = self.store.transaction()
                    txn.__enter__()
                try:
                    value, error = op(self.store), None
                    self.written += 1
                except Exception as exc:  # one bad row must not lose the others
                    self.failures += 1
                    log.warning("trace write failed: %s", exc)
                    value, error = None, exc
                ops_in_txn += 1
                if fut is not None:
                    results.append((fut, value, error))
                if index == last_urgent or ops_in_txn >= MAX_BATCH:
                    txn, ops_in_txn, results = self._commit(txn, ops_in_txn, results)
            if stopping:
                txn, ops_in_txn, results = self._commit(txn, ops_in_txn, results)

    def _commit(
        self, txn: Any, ops_in_txn: int, results: list[tuple[asyncio.Future[Any], Any, BaseException | None]]
    ) -> tuple[None, int, list[Any]]:
        """Commit the open transaction and resolve the futures waiting for it."""
        if txn is not None:
            try:
                txn.__exit__(None, None, None)
            except Exception as exc:  # the commit itself failed (disk full, locked too long)
                self.failures += ops_in_txn
                log.error("trace batch of %d writes failed: %s", ops_in_txn, exc)
                results = [(fut, None, exc) for fut, _, _ in results]
        if results and self._loop is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):  # loop closed meanwhile
                self._loop.call_soon_threadsafe(_resolve, results)
        return None, 0, []


def _retrieve(future: asyncio.Future[Any]) -> None:
    """Mark a failed future's exception as seen (callers that do not await it must not warn)."""
    if not future.cancelled():
        future.exception()


def _resolve(results: list[tuple[asyncio.Future[Any], Any, BaseException | None]]) -> None:
    for fut, value, error in results:
        if fut.done():
            continue
        if error is None:
            fut.set_result(value)
        else:
            fut.set_exception(error)
