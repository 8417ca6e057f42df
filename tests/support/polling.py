"""Polling with a deadline: the one way a test waits for data that is written behind the traffic."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 10.0


def wait_for(
    probe: Callable[[], T],
    until: Callable[[T], object] = bool,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    interval: float = 0.02,
    what: str = "the condition",
) -> T:
    """Call ``probe()`` until ``until(value)`` holds and return that value.

    After ``timeout`` seconds it fails with an ``AssertionError`` naming ``what`` and the last value,
    so a slow machine costs time, never a wrong verdict. Inside an event loop, run it in a worker
    thread (``await anyio.to_thread.run_sync(lambda: wait_for(...))``) so the loop keeps running.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if until(value):
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(_missed(what, timeout, value))
        time.sleep(interval)


def _missed(what: str, timeout: float, value: object) -> str:
    shown = repr(value)
    if len(shown) > 800:
        shown = shown[:800] + "..."
    return f"{what} not reached within {timeout} s; last value: {shown}"
