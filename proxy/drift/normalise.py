"""Normalisers for volatile fields, applied to both sides before they are compared.

- ``--ignore PATH``: drop the value at a path. Paths are the report's: ``structuredContent.quote.time``,
  ``content[0].text`` (a text block holding JSON is parsed, so ``content[*].text.datetime`` reaches into
  it); ``[*]`` is any list index, ``*`` any object key.
- ``--mask REGEX``: replace every match in every string with ``<masked>``.
- ``--volatile``: the built-in masks :data:`VOLATILE` (ISO 8601 timestamps, UUIDs).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

MASKED = "<masked>"
VOLATILE: dict[str, str] = {
    "iso-timestamp": r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?",
    "uuid": r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",
}
"""The masks ``--volatile`` adds, by name."""

_TOKEN = re.compile(r"\[(\*|\d+)\]|\.?([^.\[\]]+)")


def parse_path(path: str) -> tuple[str | int, ...]:
    """``content[*].text.datetime`` -> ``("content", "*", "text", "datetime")`` (``[*]`` is ``"*"``,
    ``[3]`` is ``3``); raises ValueError on an empty or malformed path."""
    tokens: list[str | int] = []
    pos = 0
    text = path.strip()
    if not text:
        raise ValueError("--ignore: an empty path")
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise ValueError(f"--ignore {path!r}: cannot read the path at {text[pos:]!r}")
        index, key = match.groups()
        tokens.append(key if key is not None else ("*" if index == "*" else int(index)))
        pos = match.end()
    return tuple(tokens)


def _matches(pattern: tuple[str | int, ...], here: tuple[str | int, ...]) -> bool:
    if len(pattern) != len(here):
        return False
    return all(p == "*" or p == h for p, h in zip(pattern, here, strict=True))


def parse_json_text(value: Any) -> Any:
    """A string holding a JSON object or array, decoded; anything else as it is."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]"):
            try:
                return json.loads(stripped)
            except ValueError:
                return value
    return value


def expand_text_blocks(result: dict[str, Any]) -> dict[str, Any]:
    """A comparable result whose ``content[i].text`` holding JSON is that JSON value (paths reach in)."""
    content = result.get("content")
    if not isinstance(content, list):
        return result
    blocks = [
        {k: (parse_json_text(v) if k == "text" else v) for k, v in b.items()} if isinstance(b, dict) else b
        for b in content
    ]
    return result | {"content": blocks}


@dataclass(frozen=True)
class Normaliser:
    """The user's normalisers; :meth:`apply` returns a normalised copy of a JSON value."""

    ignore: tuple[tuple[str | int, ...], ...] = ()
    masks: tuple[re.Pattern[str], ...] = ()
    shown: tuple[str, ...] = field(default=())
    """The normalisers as given, for the report."""

    @classmethod
    def build(
        cls, ignore: Sequence[str] = (), masks: Sequence[str] = (), volatile: bool = False
    ) -> Normaliser:
        """From ``--ignore``, ``--mask`` and ``--volatile``; ValueError on a bad path or regex."""
        patterns = []
        for mask in list(masks) + (list(VOLATILE.values()) if volatile else []):
            try:
                patterns.append(re.compile(mask))
            except re.error as exc:
                raise ValueError(f"--mask {mask!r}: not a regular expression ({exc})") from None
        shown = [f"ignore {p}" for p in ignore] + [f"mask {m}" for m in masks]
        shown += [f"volatile {name}" for name in VOLATILE] if volatile else []
        return cls(tuple(parse_path(p) for p in ignore), tuple(patterns), tuple(shown))

    def __bool__(self) -> bool:
        return bool(self.ignore or self.masks)

    def apply(self, value: Any, here: tuple[str | int, ...] = ()) -> Any:
        """``value`` with ignored paths dropped and masked substrings replaced."""
        if isinstance(value, dict):
            return {k: self.apply(v, (*here, k)) for k, v in value.items() if not self._ignored((*here, k))}
        if isinstance(value, list):
            return [self.apply(v, (*here, i)) for i, v in enumerate(value) if not self._ignored((*here, i))]
        if isinstance(value, str):
            for pattern in self.masks:
                value = pattern.sub(MASKED, value)
        return value

    def _ignored(self, here: tuple[str | int, ...]) -> bool:
        return any(_matches(p, here) for p in self.ignore)
