"""Schema-aware canonical forms of tool arguments, so that equal requests compare equal.

Rules (each documented in docs/evaluator.md):

* ``None`` values are dropped (same as an absent key).
* Numbers: ``int`` and ``float`` compare equal (``1 == 1.0``); numeric strings for ``number``/``integer``
  parameters are parsed; a percentage string ``"6%"`` becomes ``0.06``; floats are rounded to 9 decimals.
* Strings: Unicode NFKC (full-width to half-width), trimmed, inner whitespace collapsed, case-folded.
  A number given for a ``string`` parameter becomes its string (``10`` -> ``"10"``).
* Fund codes (key contains ``code``): integers and digit strings are zero-padded to 6 and an exchange suffix
  (``.OF``/``.SZ``/``.SH``/``.BJ``) is removed, e.g. ``1`` -> ``"000001"``, ``"161128.OF"`` -> ``"161128"``.
* Dates: ``2024-1-5``, ``2024/01/05``, ``2024.01.05``, ``2024年1月5日`` and (for date-like keys)
  ``20240105`` become ``2024-01-05``; a time part becomes ``THH:MM:SS``.
* Booleans: ``"true"/"false"`` strings become booleans for ``boolean`` parameters.
* Arrays are compared as multisets (order-free); objects key by key, recursively.
* Without a schema, a string holding a plain decimal number (no leading zero) is treated as a number.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from typing import Any

Canon = tuple
"""A hashable canonical value: ('s', str) | ('n', float) | ('b', bool) | ('a', tuple) | ('o', tuple)."""

_DATE_RE = re.compile(
    r"^(\d{4})\s*[-/.年]\s*(\d{1,2})\s*[-/.月]\s*(\d{1,2})\s*日?"
    r"(?:[ T]+(\d{1,2}):(\d{2})(?::(\d{2}))?(?:\.\d+)?)?\s*(?:z|[+-]\d{2}:?\d{2})?$"
)
_COMPACT_DATE_RE = re.compile(r"^(\d{4})(\d{2})(\d{2})$")
_CODE_RE = re.compile(r"^(\d{1,6})(?:\.(?:of|sz|sh|bj|oc))?$")
_NUMBER_RE = re.compile(r"^[+-]?(?:0|[1-9]\d*)(?:\.\d+)?(?:e[+-]?\d+)?$")
_PERCENT_RE = re.compile(r"^([+-]?\d+(?:\.\d+)?)\s*%$")
_SPACE_RE = re.compile(r"\s+")
_TRUE = {"true", "yes", "1", "是"}
_FALSE = {"false", "no", "0", "否"}


def _num(x: float) -> Canon:
    value = round(float(x), 9)
    return ("n", 0.0 if value == 0 else value)


def _text(value: str) -> str:
    return _SPACE_RE.sub(" ", unicodedata.normalize("NFKC", value)).strip().casefold()


def _is_code_key(key: str) -> bool:
    return "code" in key.lower()


def _is_date_key(key: str) -> bool:
    low = key.lower()
    return "date" in low or "time" in low or low in ("start", "end", "day")


def canon_string(key: str, value: str, typed: bool) -> Canon:
    """Canonical form of a string value of parameter ``key`` (``typed``: the schema says string)."""
    text = _text(value)
    if _is_code_key(key):
        match = _CODE_RE.match(text)
        if match:
            return ("s", match.group(1).zfill(6))
    match = _DATE_RE.match(text)
    if match is None and _is_date_key(key):
        match = _COMPACT_DATE_RE.match(text)
    if match is not None:
        y, m, d = int(match.group(1)), int(match.group(2)), int(match.group(3))
        if 1 <= m <= 12 and 1 <= d <= 31:
            date = f"{y:04d}-{m:02d}-{d:02d}"
            groups = match.groups()
            if len(groups) > 3 and groups[3] is not None:
                date += f"T{int(groups[3]):02d}:{int(groups[4]):02d}:{int(groups[5] or 0):02d}"
            return ("s", date)
    match = _PERCENT_RE.match(text)
    if match is not None:
        return _num(float(match.group(1)) / 100)
    if not typed and _NUMBER_RE.match(text):
        return _num(float(text))
    return ("s", text)


def canon_value(key: str, value: Any, schema: Mapping[str, Any] | None) -> Canon | None:
    """Canonical form of one argument value; None for a None value (treated as absent)."""
    if value is None:
        return None
    kind = schema.get("type") if schema else None
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, (int, float)):
        if (
            kind in (None, "string")
            and _is_code_key(key)
            and isinstance(value, int)
            and 0 <= value < 1_000_000
        ):
            return ("s", str(value).zfill(6))
        if kind == "string":
            text = str(int(value)) if float(value).is_integer() else repr(float(value))
            return canon_string(key, text, True)
        return _num(value)
    if isinstance(value, str):
        if kind in ("number", "integer"):
            text = _text(value)
            match = _PERCENT_RE.match(text)
            if match is not None:
                return _num(float(match.group(1)) / 100)
            try:
                return _num(float(text))
            except ValueError:
                return ("s", text)
        if kind == "boolean":
            text = _text(value)
            if text in _TRUE:
                return ("b", True)
            if text in _FALSE:
                return ("b", False)
        return canon_string(key, value, kind == "string")
    if isinstance(value, (list, tuple)):
        items_schema = schema.get("items") if schema else None
        items = [
            canon_value(key, v, items_schema if isinstance(items_schema, Mapping) else None) for v in value
        ]
        return ("a", tuple(sorted((i for i in items if i is not None), key=repr)))
    if isinstance(value, Mapping):
        props = schema.get("properties") if schema else None
        return ("o", canon_object(value, props if isinstance(props, Mapping) else None))
    return ("s", _text(str(value)))


def canon_object(args: Mapping[str, Any], props: Mapping[str, Any] | None) -> tuple:
    """Sorted ((key, canonical value), ...) of an object, None values dropped."""
    out = []
    for key, value in args.items():
        sub = props.get(key) if props else None
        canon = canon_value(str(key), value, sub if isinstance(sub, Mapping) else None)
        if canon is not None:
            out.append((str(key), canon))
    out.sort()
    return tuple(out)


SchemaLookup = Callable[[str], Mapping[str, Any] | None]
"""tool name -> the ``properties`` of its input schema (or None when unknown)."""


class Canonicalizer:
    """Canonical key/value pairs of a call's arguments, with a cache for scalar values."""

    def __init__(self, schema_lookup: SchemaLookup | None = None) -> None:
        self._lookup = schema_lookup
        self._props: dict[str, Mapping[str, Any] | None] = {}
        self._scalar: dict[tuple[str, str, Any, Any], Canon | None] = {}
        """(tool, key, value, type) -> canonical value, for hashable values and lists of them."""

    def _properties(self, tool: str) -> Mapping[str, Any] | None:
        try:
            return self._props[tool]
        except KeyError:
            props = self._lookup(tool) if self._lookup else None
            self._props[tool] = props
            return props

    def pairs(self, tool: str, args: Mapping[str, Any]) -> frozenset[tuple[str, Canon]]:
        """The set of (key, canonical value) pairs of one call."""
        if not args:
            return _EMPTY
        cache = self._scalar
        out = []
        for key, value in args.items():
            if value is None:
                continue
            cls = value.__class__
            try:
                if cls is list:  # element types too: True == 1 must not share a cache entry
                    ck = (tool, key, tuple(value), tuple(e.__class__ for e in value))
                else:
                    ck = (tool, key, value, cls)
                canon = cache[ck]
            except KeyError:
                canon = self._canon(tool, key, value)
                if len(cache) < 500_000:
                    cache[ck] = canon
            except TypeError:  # unhashable (objects, lists of objects): not cached
                canon = self._canon(tool, key, value)
            if canon is not None:
                out.append((key, canon))
        return frozenset(out)

    def _canon(self, tool: str, key: str, value: Any) -> Canon | None:
        props = self._properties(tool)
        sub = props.get(key) if props else None
        return canon_value(key, value, sub if isinstance(sub, Mapping) else None)


_EMPTY: frozenset = frozenset()


def inventory_schema_lookup(inventory: Any) -> SchemaLookup:
    """A schema lookup over a ``tool_specs`` Inventory (anything with ``get(name).input_schema``)."""

    def lookup(tool: str) -> Mapping[str, Any] | None:
        spec = inventory.get(tool) if inventory is not None else None
        schema = getattr(spec, "input_schema", None) if spec is not None else None
        props = schema.get("properties") if isinstance(schema, Mapping) else None
        return props if isinstance(props, Mapping) else None

    return lookup
