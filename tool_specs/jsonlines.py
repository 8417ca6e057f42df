"""Numbered JSON lines: the one reader of a JSONL text's non-blank lines, with their line numbers."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any


class JsonLineError(ValueError):
    """A line that is not valid JSON: its 1-based ``number`` and the decoder's ``error``."""

    def __init__(self, number: int, error: json.JSONDecodeError) -> None:
        super().__init__(f"line {number}: not valid JSON: {error}")
        self.number = number
        self.error = error


def json_lines(lines: Iterable[str]) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of every non-blank line, numbered from 1 (blank lines count);
    :class:`JsonLineError` at the first line that is not valid JSON."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            raise JsonLineError(number, exc) from None
