"""The server's start-up warm-up, run beside the serving loop, and what ``/healthz`` says of it.

``finmcp-server`` listens first and warms its simulators' caches afterwards, in one background thread
(:func:`server.serve.build_services`): calls are answered from the start, those that need a cache not
built yet build what they need themselves and are slower. :class:`Warmup` tracks that thread, so
``/healthz`` reports ``"warm": false`` until it has finished, then ``true`` (with ``warm_s``, how long
it took), and the server prints ``finmcp-server warm: URL (warm-up N.N s)`` on stderr after its ready
line, the line launchers wait for (:class:`recordings.plumbing.launch.FinmcpProcess` ``wait_warm``).
A server with nothing to warm (``--miss strict``: no simulator) is warm from the start.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Self

logger = logging.getLogger("finmcp.server.warmup")


class Warmup:
    """One warm-up: not started, running in its thread, or finished (also when it failed)."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self._started = time.monotonic()
        self.seconds: float | None = None
        """How long the warm-up took, once it has finished."""
        self.error: str | None = None
        """Why the warm-up stopped early (the server still answers: calls build what they need)."""
        self.needed = True
        """False for a server with nothing to warm (:meth:`finished`)."""

    @classmethod
    def finished(cls) -> Self:
        """A warm-up with nothing to do: warm from the start."""
        warmup = cls()
        warmup.needed = False
        warmup._finish()
        return warmup

    def start(self, work: Callable[[], None], name: str = "warm-up") -> Self:
        """Run ``work`` in a daemon thread; the warm-up has finished when it returns (or raises)."""
        self._started = time.monotonic()

        def run() -> None:
            try:
                work()
            except Exception as exc:  # a cache that could not be built stays lazy: calls still answer
                logger.warning("warm-up stopped early: %r (calls build what they need)", exc, exc_info=True)
                self.error = repr(exc)
            finally:
                self._finish()

        threading.Thread(target=run, name=name, daemon=True).start()
        return self

    def _finish(self) -> None:
        self.seconds = time.monotonic() - self._started
        self._done.set()

    @property
    def warm(self) -> bool:
        """True once the warm-up has finished."""
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the warm-up has finished (at most ``timeout`` seconds); returns :attr:`warm`."""
        return self._done.wait(timeout)

    def health(self) -> dict[str, Any]:
        """The ``/healthz`` fields: ``warm``, and once warm ``warm_s`` (plus ``warm_error`` if it failed)."""
        if not self.warm:
            return {"warm": False}
        fields: dict[str, Any] = {"warm": True, "warm_s": round(self.seconds or 0.0, 3)}
        if self.error is not None:
            fields["warm_error"] = self.error
        return fields
