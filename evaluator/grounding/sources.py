"""The evidence a sample offers: every number, date, code and string of its tool outputs, indexed.

Outputs are what the agent saw: a JSON text (an MCP result's ``structuredContent`` or its text
content parsed), or plain text. Each number keeps where it was found (call id + JSON path, or call id
+ line) and its context: the codes, names and dates among the scalar fields of the objects that hold
it (or on its line of text), which is how a claim's entity and date are checked.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from finmcp.evaluator.grounding.text import (
    FUND_CODE_RE,
    NUMBER_RE,
    STRATEGY_CODE_RE,
    DateParts,
    find_dates,
    fold,
    quantity,
)

_NAME_KEY = re.compile(r"name|名称|简称|title", re.I)
_CODE_KEY = re.compile(r"code|代码", re.I)
_CODE_VALUE = re.compile(r"^(?:\d{6}|[A-Z]{2,4}\d{4,8})$")
_EMPTY: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Entry:
    """One number of the outputs: value, where it is, and its context."""

    value: float
    where: str  # "call-id $.path" or "call-id line N"
    ents: frozenset[str] = _EMPTY
    dates: tuple[DateParts, ...] = ()
    count: bool = False  # a list's length: matches counts and bare integers only


@dataclass
class Sources:
    """Everything a sample's outputs (and its question) say, ready for look-ups."""

    entries: list[Entry] = field(default_factory=list)
    strings: list[tuple[str, str]] = field(default_factory=list)  # (where, text)
    dates: list[tuple[DateParts, str]] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)  # name -> code seen together in a record
    groups: list[list[float]] = field(default_factory=list)
    _values: list[float] = field(default_factory=list)
    _order: list[int] = field(default_factory=list)
    _haystack: str = ""
    _starts: list[int] = field(default_factory=list)

    _ready: int = 0  # 1: value index built, 2: haystack built (bits; each built on first use)

    def finish(self) -> Sources:
        """Mark the sources complete: the value index and the string haystack are built on first use
        (an answer with names only never sorts the numbers)."""
        self._ready = 0
        return self

    def _index_values(self) -> None:
        order = sorted(range(len(self.entries)), key=lambda i: self.entries[i].value)
        self._order = order
        self._values = [self.entries[i].value for i in order]
        self._ready |= 1

    def _index_strings(self) -> None:
        parts, starts, pos = [], [], 0
        for _, text in self.strings:
            starts.append(pos)
            parts.append(text)
            pos += len(text) + 1
        self._haystack = "\x00".join(parts)
        self._starts = starts
        self._ready |= 2

    def near(self, target: float, tol: float) -> Iterator[Entry]:
        """Entries whose value is within ``tol`` of ``target``."""
        if not self._ready & 1:
            self._index_values()
        lo = bisect_left(self._values, target - tol)
        hi = bisect_right(self._values, target + tol)
        for k in range(lo, hi):
            yield self.entries[self._order[k]]

    def find_text(self, needle: str) -> str | None:
        """Where ``needle`` occurs in a string of the outputs (None when nowhere)."""
        if not needle:
            return None
        if not self._ready & 2:
            self._index_strings()
        at = self._haystack.find(needle)
        if at < 0:
            return None
        return self.strings[bisect_right(self._starts, at) - 1][0]

    def has_date(self, parts: DateParts) -> str | None:
        """Where a date agreeing with ``parts`` occurs (None when nowhere)."""
        from finmcp.evaluator.grounding.text import dates_agree

        for found, where in self.dates:
            if dates_agree(parts, found):
                return where
        return None


def parse_output(output: Any) -> Any:
    """An output as data: an MCP result's ``structuredContent`` or parsed text, else the text itself."""
    if isinstance(output, (bytes, bytearray)):
        output = output.decode("utf-8", "replace")
    if isinstance(output, str):
        stripped = output.strip()
        if stripped[:1] in ("{", "["):
            try:
                output = json.loads(stripped)
            except ValueError:
                return output
        else:
            return output
    if isinstance(output, dict) and isinstance(output.get("content"), list):
        if output.get("structuredContent") is not None:
            return output["structuredContent"]
        texts = [c.get("text", "") for c in output["content"] if isinstance(c, dict)]
        return parse_output("\n".join(t for t in texts if isinstance(t, str)))
    return output


def build_sources(outputs: Iterable[tuple[str, Any]], question: str | None = None) -> Sources:
    """The :class:`Sources` of ``(call id, output)`` pairs, plus the user's question when given.

    Each output's part is kept (``FRAGMENT_CACHE`` of them, by call id and text): the answers of a
    multi-turn sample, and agents that saw the same outputs, index each output once."""
    src = Sources()
    for call_id, output in outputs:
        frag = _cached_fragment(call_id, output) if isinstance(output, str) else _fragment(call_id, output)
        src.entries.extend(frag.entries)
        src.strings.extend(frag.strings)
        src.dates.extend(frag.dates)
        src.groups.extend(frag.groups)
        for name, code in frag.aliases.items():
            src.aliases.setdefault(name, code)
    if question:
        _add_text(src, "question", question, _EMPTY, ())
    return src.finish()


FRAGMENT_CACHE = 4096
"""Outputs whose indexed part is kept between answers."""


def clear_cache() -> None:
    """Forget every indexed output (a benchmark's cold pass)."""
    _cached_fragment.cache_clear()


@lru_cache(maxsize=FRAGMENT_CACHE)
def _cached_fragment(call_id: str, output: str) -> Sources:
    return _fragment(call_id, output)


def _fragment(call_id: str, output: Any) -> Sources:
    """The indexed part of one output (not finished: it is merged into a sample's sources)."""
    frag = Sources()
    data = parse_output(output)
    if isinstance(data, str):
        _add_text(frag, call_id, data, _EMPTY, ())
    else:
        _walk(frag, call_id, data, "$", _EMPTY, ())
    return frag


def _scalars(src: Sources, obj: dict[str, Any]) -> tuple[set[str], list[DateParts]]:
    """Codes, names and dates among an object's scalar fields; a name beside a code becomes an alias."""
    ents: set[str] = set()
    dates: list[DateParts] = []
    code = name = None
    for key, value in obj.items():
        if isinstance(value, str):
            v = value.strip()
            if _CODE_VALUE.match(v) and (_CODE_KEY.search(str(key)) or not v.isdigit() or len(obj) > 1):
                ents.add(v)
                code = code or v
            elif _NAME_KEY.search(str(key)) and 2 <= len(v) <= 60:
                ents.add(v)
                name = name or v
            if len(v) <= 40:
                dates.extend(p for _, _, p in find_dates(v, compact=True))
        elif isinstance(value, int) and not isinstance(value, bool) and _CODE_KEY.search(str(key)):
            ents.add(f"{value:06d}")
    if code and name:
        src.aliases.setdefault(name, code)
    return ents, dates


def _walk(src: Sources, call: str, node: Any, path: str, ents: frozenset[str], dates: tuple) -> None:
    if isinstance(node, dict):
        own_ents, own_dates = _scalars(src, node)
        ents = ents | own_ents if own_ents else ents
        dates = (*dates, *own_dates) if own_dates else dates
        numbers = [v for v in node.values() if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if len(numbers) > 1:
            src.groups.append([float(v) for v in numbers])
        for key, value in node.items():
            sub = f"{path}.{key}"
            if isinstance(value, bool) or value is None:
                continue
            if isinstance(value, (int, float)):
                src.entries.append(Entry(float(value), f"{call} {sub}", ents, dates))
            elif isinstance(value, str):
                _add_string(src, call, sub, value, ents, dates)
            else:
                _walk(src, call, value, sub, ents, dates)
    elif isinstance(node, list):
        src.entries.append(Entry(float(len(node)), f"{call} len({path})", ents, dates, count=True))
        sums: dict[str, float] = {}
        for i, item in enumerate(node):
            _walk(src, call, item, f"{path}[{i}]", ents, dates)
            if isinstance(item, dict):
                for key, value in item.items():
                    if isinstance(value, (int, float)) and not isinstance(value, bool):
                        sums[key] = sums.get(key, 0.0) + value
        if sum(isinstance(item, dict) for item in node) < 2:
            return  # a column's total over one row is the row itself (its own context applies)
        for key, total in sums.items():
            src.entries.append(Entry(round(total, 10), f"{call} sum({path}[*].{key})", ents, dates))
    elif isinstance(node, str):
        _add_string(src, call, path, node, ents, dates)
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        src.entries.append(Entry(float(node), f"{call} {path}", ents, dates))


def _add_string(src: Sources, call: str, path: str, value: str, ents: frozenset[str], dates: tuple) -> None:
    where = f"{call} {path}"
    src.strings.append((where, fold(value)))
    if _CODE_VALUE.match(value.strip()):
        return  # a code: found as text, not a number
    _numbers_of(src, where, fold(value), ents, dates)


def _add_text(src: Sources, call: str, text: str, ents: frozenset[str], dates: tuple) -> None:
    """Plain text output: each line is a context of its own (its codes and dates)."""
    for n, line in enumerate(fold(text).splitlines(), 1):
        if not line.strip():
            continue
        where = f"{call} line {n}"
        src.strings.append((where, line))
        codes = {m.group() for m in FUND_CODE_RE.finditer(line)} | {
            m.group() for m in STRATEGY_CODE_RE.finditer(line)
        }
        _numbers_of(src, where, line, ents | codes, dates)


_DIGIT = re.compile(r"\d")


def _numbers_of(src: Sources, where: str, text: str, ents: frozenset[str], dates: tuple) -> None:
    """Numbers (with units, scaled) and dates written inside a string."""
    if not _DIGIT.search(text):
        return
    found = find_dates(text, compact=True)
    for _, _, parts in found:
        src.dates.append((parts, where))
    line_dates = (*dates, *(p for _, _, p in found)) if found else dates
    for m in NUMBER_RE.finditer(text):
        if any(s <= m.start() < e for s, e, _ in found):
            continue
        q = quantity(m.group("num"), m.group("unit"), m.group("sign"))
        src.entries.append(Entry(q.value, where, ents, line_dates))
        if q.scale != 1.0:
            src.entries.append(Entry(q.value * q.scale, where, ents, line_dates))
