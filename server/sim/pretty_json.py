"""``json.dumps(value, ensure_ascii=False, indent=2)``, the same text in a fraction of the time.

With an ``indent`` the standard library leaves its C encoder and walks the value in pure Python, one
generator step per token; a simulated answer of a few hundred rows spent more time there than in
building the rows. :func:`dumps_indent2` hands every container whose members are all scalars (and
every list of such dicts: the rows of a table) to the C encoder, whose item separator can carry the
newline and indent of their line, and walks only the rest in Python. A raw newline never occurs inside
an encoded string (JSON escapes it), so the line breaks the separators write are found again exactly.

The walk follows ``json.encoder._make_iterencode`` rule for rule: the same type checks in the same
order, ``repr`` of ints and floats (``NaN``, ``Infinity``, ``-Infinity`` for the special floats),
tuples as lists, keys that are numbers, booleans or ``None`` converted to strings, and a ``TypeError``
for anything else. Only circular references are not detected (the simulator's answers are trees).
"""

from __future__ import annotations

import json.encoder
from itertools import chain
from typing import Any

_encode_str = json.encoder.encode_basestring  # the C encoder when the _json accelerator is present
_make_c_encoder: Any = getattr(json.encoder, "c_make_encoder", None)  # None: no accelerator, Python walks all
_INFINITY = float("inf")
# exact types only: a subclass (an IntEnum, a str subclass) takes the Python walk, as json's does
_SCALARS = frozenset({str, int, float, bool, type(None)})
_DICT_ONLY = frozenset({dict})
_C_ENCODERS: dict[str, Any] = {}


def _unserializable(value: object) -> object:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def _c_encoder(separator: str) -> Any:
    """The C encoder writing ``separator`` between items and ``": "`` between a key and its value."""
    encoder = _C_ENCODERS.get(separator)
    if encoder is None:
        encoder = _C_ENCODERS[separator] = _make_c_encoder(
            None, _unserializable, _encode_str, None, ": ", separator, False, False, True
        )
    return encoder


def _flat(values: Any) -> bool:
    return _SCALARS.issuperset(map(type, values))  # every item's exact type a scalar's, in C loops


def _flat_rows(rows: Any) -> bool:
    """Every item a non-empty dict (exactly) of scalars: a table's rows."""
    return (
        _DICT_ONLY.issuperset(map(type, rows))
        and all(rows)
        and _SCALARS.issuperset(map(type, chain.from_iterable(map(dict.values, rows))))
    )


def _c_text(value: Any, separator: str) -> str:
    return "".join(_c_encoder(separator)(value, 0))


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value == _INFINITY:
        return "Infinity"
    if value == -_INFINITY:
        return "-Infinity"
    return float.__repr__(value)


def _key(key: object) -> str:
    """A dict key as json writes it: a string as itself, a float, bool, None or int as the quoted text
    its value would be (none of those texts needs escaping), anything else a ``TypeError``."""
    if isinstance(key, str):
        return _encode_str(key)
    if key is None or isinstance(key, (float, int)):  # bool is an int
        return '"' + _encode(key, "") + '"'
    raise TypeError(f"keys must be str, int, float, bool or None, not {key.__class__.__name__}")


def _encode(value: Any, newline: str) -> str:
    """``value`` as indented JSON; ``newline`` is the line break plus the indent of its own line."""
    if isinstance(value, str):
        return _encode_str(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        inner = newline + "  "
        if _make_c_encoder is not None:
            if _flat(value):
                return "[" + inner + _c_text(value, "," + inner)[1:-1] + newline + "]"
            if _flat_rows(value):
                return _rows(value, newline, inner)
        return "[" + inner + ("," + inner).join([_encode(item, inner) for item in value]) + newline + "]"
    if isinstance(value, dict):
        if not value:
            return "{}"
        inner = newline + "  "
        if _make_c_encoder is not None and _flat(value.values()):
            return "{" + inner + _c_text(value, "," + inner)[1:-1] + newline + "}"
        return (
            "{"
            + inner
            + ("," + inner).join([_key(k) + ": " + _encode(v, inner) for k, v in value.items()])
            + newline
            + "}"
        )
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def _rows(rows: Any, newline: str, inner: str) -> str:
    """A non-empty list of non-empty dicts of scalars: one C call, then the rows' own line breaks."""
    row_inner = inner + "  "
    text = _c_text(rows, "," + row_inner)  # [{k: v,<row_inner>k: v},<row_inner>{...}]
    text = text[2:-2].replace("}," + row_inner + "{", inner + "}," + inner + "{" + row_inner)
    return "[" + inner + "{" + row_inner + text + inner + "}" + newline + "]"


def dumps_indent2(value: Any) -> str:
    """Exactly ``json.dumps(value, ensure_ascii=False, indent=2)``."""
    return _encode(value, "\n")
