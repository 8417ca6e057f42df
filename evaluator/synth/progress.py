"""A small stderr progress bar (no dependency); silent when disabled or when stderr is not a TTY."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """``with Progress("chains", total) as bar: bar.advance()`` draws ``label [#####.....] n/total``."""

    def __init__(self, label: str, total: int, enabled: bool = True, stream: TextIO | None = None) -> None:
        self.label = label
        self.total = max(total, 0)
        self.count = 0
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self._last = 0.0
        self._start = time.monotonic()

    def __enter__(self) -> Progress:
        self._draw(force=True)
        return self

    def __exit__(self, *exc: object) -> None:
        self._draw(force=True)
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()

    def advance(self, n: int = 1) -> None:
        """Count ``n`` more items done."""
        self.count += n
        self._draw()

    def _draw(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < 0.1 and self.count < self.total:
            return
        self._last = now
        width = 30
        done = int(width * self.count / self.total) if self.total else width
        elapsed = now - self._start
        bar = "#" * done + "." * (width - done)
        self.stream.write(f"\r{self.label:<14} [{bar}] {self.count}/{self.total} {elapsed:5.1f}s")
        self.stream.flush()
