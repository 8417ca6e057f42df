"""Progress of long work on stderr, with count/total, rate and ETA (no dependency).

On a terminal the bar is one line redrawn with a carriage return (at most ten times a second); when
the stream is not a terminal (a log file, a pipe, CI) it writes plain lines instead, one every
``interval`` seconds or every 10 % of the work, whichever comes first, and a last line when done, so
logs never fill with carriage-return frames. Used by ``finmcp-eval run``/``demo`` (samples), ``synth``
(trajectories, dialogues) and ``score`` with an LLM judge (judgments).

Why not tqdm: it would do the terminal half, but its non-terminal output is the same ``\\r`` frames
(or nothing with ``disable``); the plain periodic lines, which CI logs need, would still be ours.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

TTY_REDRAW = 0.1
"""Seconds between terminal redraws."""
PLAIN_INTERVAL = 5.0
"""Seconds between plain lines (a line is also written at every 10 % step)."""


def clock_text(seconds: float) -> str:
    """``m:ss`` (or ``h:mm:ss``) of a duration; ``?`` when unknown."""
    if seconds != seconds or seconds < 0 or seconds == float("inf"):
        return "?"
    s = int(round(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """``with Progress("samples", total) as bar: bar.advance()``; silent when ``enabled`` is false."""

    def __init__(
        self,
        label: str,
        total: int,
        enabled: bool = True,
        stream: TextIO | None = None,
        tty: bool | None = None,
        interval: float = PLAIN_INTERVAL,
        unit: str = "",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.total = max(total, 0)
        self.count = 0
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = _isatty(self.stream) if tty is None else tty
        self.interval = interval
        self.unit = unit
        self.clock = clock
        self._start = clock()
        self._last = self._start
        self._step = 0  # last 10 % step written (plain mode)

    def __enter__(self) -> Progress:
        self._start = self._last = self.clock()
        if self.enabled and self.tty:
            self._write_tty()
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.enabled:
            return
        if self.tty:
            self._write_tty(done=True)
            self.stream.write("\n")
        else:
            self.stream.write(self.line(done=True) + "\n")
        self.stream.flush()

    def advance(self, n: int = 1) -> None:
        """Count ``n`` more items done."""
        self.count += n
        if not self.enabled:
            return
        now = self.clock()
        if self.tty:
            if now - self._last >= TTY_REDRAW or self.count >= self.total:
                self._last = now
                self._write_tty()
            return
        step = 10 * self.count // self.total if self.total else 10
        if (now - self._last >= self.interval or step > self._step) and self.count < self.total:
            self._last, self._step = now, step
            self.stream.write(self.line() + "\n")
            self.stream.flush()

    def rate(self) -> float:
        """Items per second so far."""
        elapsed = self.clock() - self._start
        return self.count / elapsed if elapsed > 0 else 0.0

    def line(self, done: bool = False) -> str:
        """The progress text: ``label 40/613 (7%) 12.5 samples/s ETA 0:46`` (``done in`` at the end)."""
        elapsed = self.clock() - self._start
        rate = self.count / elapsed if elapsed > 0 else 0.0
        pct = 100 * self.count // self.total if self.total else 100
        text = f"{self.label} {self.count}/{self.total} ({pct}%) {self._rate_text(rate)}"
        if done:
            return f"{text} done in {clock_text(elapsed)}"
        eta = (self.total - self.count) / rate if rate > 0 else float("inf")
        return f"{text} ETA {clock_text(eta)}"

    def _rate_text(self, rate: float) -> str:
        """``12.5 samples/s``, or ``170 s/sample`` when items take longer than 10 s each (a real model)."""
        if 0 < rate < 0.1:
            return f"{1 / rate:.0f} s/{(self.unit or 'item').removesuffix('s')}"
        return f"{rate:.1f} {self.unit}/s" if self.unit else f"{rate:.1f}/s"

    def _write_tty(self, done: bool = False) -> None:
        width = 20
        filled = width * self.count // self.total if self.total else width
        bar = "#" * filled + "." * (width - filled)
        self.stream.write(f"\r[{bar}] {self.line(done)}\x1b[K")
        self.stream.flush()


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
