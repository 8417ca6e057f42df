"""Canonical tool arguments and their lookup keys.

Two calls that mean the same thing must find the same recording, so arguments are brought to one
canonical form before hashing:

- defaults declared in the tool's ``inputSchema`` are filled in (recursively, for object properties
  and array items that have a ``"default"``), so leaving out a defaulted argument and passing its
  default give the same key;
- object keys are sorted (by UTF-16 code units, as RFC 8785 does);
- numbers are normalised: an integral float becomes an int (``1.0`` -> ``1``, ``1e21`` -> its exact
  integer), bools stay bools, NaN and Infinity are rejected (they are not JSON);
- arrays keep their order and strings are left untouched (no Unicode normalisation);
- the string value of a secret-named key (``api_key``, ``cookie``, ``token``, ... at any depth; see
  :data:`recordings.redact.SECRET_KEYS`) becomes ``[REDACTED]``: a credential says who may call, not
  what the answer is, so a recording matches whatever credential a later call carries, and no
  recording (nor its exported JSONL) ever holds one.

``canonical_json`` writes the RFC 8785 (JCS) text: sorted keys, no whitespace, UTF-8 not escaped,
ECMAScript shortest round-trip number form.

``args_key`` is the SHA-256 of that text (UTF-8), truncated to its first 32 hex characters
(128 bits): short enough for a compact unique index, and a collision needs ~2**64 distinct argument
sets of one tool.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any, NamedTuple

from finmcp.recordings.errors import InvalidValueError
from finmcp.recordings.redact import REDACTED, SECRET_KEYS

ARGS_KEY_HEX_CHARS = 32
"""Length of an ``args_key``: the first 32 hex characters (128 bits) of the SHA-256 digest."""

_encode_string = json.encoder.encode_basestring  # JSON string escaping without \\u escapes for non-ASCII
_MAX_REF_HOPS = 32


class CanonicalArgs(NamedTuple):
    """The three canonical views of one argument object."""

    arguments: dict[str, Any]
    json: str
    key: str


def canonicalize(args: Any, input_schema: Mapping[str, Any] | None = None) -> CanonicalArgs:
    """Canonical arguments, their canonical JSON text and their key, computed in one pass."""
    arguments = canonical_arguments(args, input_schema)
    # Fast path: canonical arguments hold no integral floats and their keys are already in canonical
    # order, so the C encoder writes the same text as canonical_json unless a float is printed in
    # exponent form (only tiny floats, which always put "e-" in the text; then use the exact writer).
    text = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    if "e-" in text:
        text = canonical_json(arguments)
    return CanonicalArgs(arguments, text, _digest(text))


def canonical_arguments(args: Any, input_schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A fresh, canonical copy of a tool-call argument object (see the module docstring).

    ``None`` stands for "no arguments" and gives ``{}`` (plus schema defaults). Anything that is not a
    JSON object, or holds a non-JSON value anywhere, raises :class:`InvalidValueError` naming the path.
    """
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        raise InvalidValueError(f"arguments: expected a JSON object, got {type(args).__name__}")
    root = input_schema if isinstance(input_schema, Mapping) else None
    return _normalize(args, input_schema, root, (None, "arguments"))


def canonical_json(value: Any) -> str:
    """RFC 8785-style canonical JSON text of a JSON value (no key sorting surprises, no whitespace)."""
    parts: list[str] = []
    _write(value, parts, "value")
    return "".join(parts)


def args_key(args: Any, input_schema: Mapping[str, Any] | None = None) -> str:
    """The lookup key of an argument object: 32 hex chars of SHA-256 over its canonical JSON."""
    return canonicalize(args, input_schema).key


def key_of_canonical_json(text: str) -> str:
    """The key of an already canonical JSON text (as stored in the ``arguments`` column)."""
    return _digest(text)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:ARGS_KEY_HEX_CHARS]


def _utf16_order(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


Path = tuple[Any, ...] | None
"""A lazily formatted location: ``(parent, part)`` links, turned into text only for error messages."""


def _where(path: Path) -> str:
    parts: list[str] = []
    while path is not None:
        path, part = path
        parts.append(f"[{part}]" if isinstance(part, int) else part if path is None else f".{part}")
    return "".join(reversed(parts))


def _check_string(text: str, path: Path) -> str:
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidValueError(f"{_where(path)}: string holds a lone surrogate ({exc.reason})") from None
    return text


def _resolve(schema: Any, root: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """Follow local ``$ref`` pointers (``#/$defs/X``); anything unusable resolves to None."""
    for _ in range(_MAX_REF_HOPS):
        if not isinstance(schema, Mapping):
            return None
        ref = schema.get("$ref")
        if not isinstance(ref, str) or root is None or not ref.startswith("#"):
            return schema
        target: Any = root
        for part in ref[1:].split("/")[1:]:
            part = part.replace("~1", "/").replace("~0", "~")
            target = target.get(part) if isinstance(target, Mapping) else None
        schema = target
    return None


def _sorted_keys(keys: Any) -> list[str]:
    keys = list(keys)
    if all(key.isascii() for key in keys):
        return sorted(keys)  # code-point order equals UTF-16 order for ASCII
    return sorted(keys, key=_utf16_order)


def _normalize(value: Any, schema: Any, root: Mapping[str, Any] | None, path: Path) -> Any:
    if value is None or value is True or value is False:
        return value
    kind = type(value)
    if kind is str:
        return _check_string(value, path)
    if kind is int:
        return value
    if kind is float:
        if not math.isfinite(value):
            raise InvalidValueError(
                f"{_where(path)}: {value!r} is not a JSON number (NaN/Infinity are rejected)"
            )
        return int(value) if value.is_integer() else value
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return _normalize(float(value), schema, root, path)
    if isinstance(value, str):
        return _check_string(str(value), path)
    schema = _resolve(schema, root) if schema is not None else None
    if isinstance(value, Mapping):
        props = schema.get("properties") if schema is not None else None
        props = props if isinstance(props, Mapping) else None
        out: dict[str, Any] = {}
        for key, item in value.items():
            if type(key) is not str:
                if not isinstance(key, str):
                    raise InvalidValueError(f"{_where(path)}: object key {key!r} is not a string")
                key = str(key)
            sub = props.get(key) if props is not None else None
            if type(item) is str and key.lower() in SECRET_KEYS:
                out[key] = REDACTED
                continue
            out[key] = _normalize(item, sub, root, (path, _check_string(key, path)))
        if props is not None:
            for key, sub_schema in props.items():
                if key in out:
                    continue
                resolved = _resolve(sub_schema, root)
                if resolved is not None and "default" in resolved:
                    default = resolved["default"]
                    if type(default) is str and key.lower() in SECRET_KEYS:  # as if it were passed
                        out[key] = REDACTED
                        continue
                    out[key] = _normalize(default, resolved, root, (path, f"{key} (schema default)"))
        return {key: out[key] for key in _sorted_keys(out)}
    if isinstance(value, list | tuple):
        items = schema.get("items") if schema is not None else None
        return [_normalize(item, items, root, (path, i)) for i, item in enumerate(value)]
    raise InvalidValueError(f"{_where(path)}: {type(value).__name__} is not a JSON value")


def _write(value: Any, parts: list[str], path: str) -> None:
    if value is None:
        parts.append("null")
    elif value is True:
        parts.append("true")
    elif value is False:
        parts.append("false")
    elif isinstance(value, int):
        parts.append(str(int(value)))
    elif isinstance(value, float):
        parts.append(format_number(value, path))
    elif isinstance(value, str):
        parts.append(_encode_string(value))
    elif isinstance(value, Mapping):
        for key in value:
            if not isinstance(key, str):
                raise InvalidValueError(f"{path}: object key {key!r} is not a string")
        parts.append("{")
        for i, key in enumerate(sorted(value, key=_utf16_order)):
            if i:
                parts.append(",")
            parts.append(_encode_string(key))
            parts.append(":")
            _write(value[key], parts, f"{path}.{key}")
        parts.append("}")
    elif isinstance(value, list | tuple):
        parts.append("[")
        for i, item in enumerate(value):
            if i:
                parts.append(",")
            _write(item, parts, f"{path}[{i}]")
        parts.append("]")
    else:
        raise InvalidValueError(f"{path}: {type(value).__name__} is not a JSON value")


def format_number(number: float, path: str = "value") -> str:
    """ECMAScript ``Number.prototype.toString`` of a finite float (RFC 8785 section 3.2.2.3)."""
    if not math.isfinite(number):
        raise InvalidValueError(f"{path}: {number!r} is not a JSON number (NaN/Infinity are rejected)")
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    mantissa, _, exponent = repr(abs(number)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    point = len(whole) + int(exponent or 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    k, n = len(digits), point
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        exp = f"e{'+' if e >= 0 else '-'}{abs(e)}"
        text = digits + exp if k == 1 else digits[0] + "." + digits[1:] + exp
    return sign + text
