"""The harness's run state: one JSON line per finished or failed (run, sample, trial).

The trace DB holds the calls; this file holds what the proxy cannot see: whether a sample finished,
its error, the agent's replies and timings. ``--resume`` skips the samples marked ``done``.
A line is flushed as soon as its sample ends, so a killed run loses only the samples in flight
(a torn last line is ignored).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class RunState:
    """Append-only JSONL of sample outcomes; ``finished(run)`` reads back the ``done`` keys."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: Any = None

    def records(self, run: str | None = None) -> list[dict[str, Any]]:
        """Every readable record (of ``run``), later lines winning per (sample, trial)."""
        if not self.path.is_file():
            return []
        latest: dict[tuple[str | None, str, int], dict[str, Any]] = {}
        with self.path.open(encoding="utf-8") as fh:
            for line in fh:
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line torn by a kill
                if not isinstance(record, dict) or (run is not None and record.get("run") != run):
                    continue
                latest[(record.get("run"), str(record.get("sample")), int(record.get("trial", 0)))] = record
        return list(latest.values())

    def finished(self, run: str) -> set[tuple[str, int]]:
        """(sample, trial) pairs of ``run`` that completed."""
        return {(r["sample"], int(r.get("trial", 0))) for r in self.records(run) if r.get("status") == "done"}

    def errors(self, run: str) -> dict[tuple[str, int], str]:
        """(sample, trial) -> error message, for samples whose latest record is a failure."""
        return {
            (r["sample"], int(r.get("trial", 0))): str(r.get("error"))
            for r in self.records(run)
            if r.get("status") == "error"
        }

    def append(self, record: dict[str, Any]) -> None:
        """Write one record and flush it to the OS."""
        if self._fh is None:
            self._fh = self.path.open("a", encoding="utf-8")
        self._fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._fh.flush()  # a killed process loses nothing written so far

    def close(self) -> None:
        """Close the file."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None
