"""Argument and output validation with compiled JSON Schema validators (built once per tool).

Invalid arguments become one message per offending field that names the field path and, for enums,
the allowed values, e.g. ``Invalid arguments for SearchFunds: sortOrder: 'up' is not one of ['',
'升序', '降序']``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from jsonschema.validators import validator_for

MAX_REPORTED_ERRORS = 20
MAX_ARGUMENT_DEPTH = 64
"""Deepest nesting of arrays/objects accepted in tool arguments (validators and keys recurse)."""


def compile_schema(schema: Mapping[str, Any]) -> Draft202012Validator:
    """A validator for ``schema`` (its ``$schema`` dialect, default 2020-12); formats are not checked."""
    cls = validator_for(schema, default=Draft202012Validator)
    return cls(schema)


def _join(path: Iterable[Any], leaf: str | None = None) -> str:
    text = ""
    for part in [*path, *([leaf] if leaf is not None else [])]:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def _messages(error: ValidationError) -> list[str]:
    path = list(error.absolute_path)
    instance = error.instance
    if error.validator == "required" and isinstance(instance, Mapping):
        missing = [name for name in error.validator_value if name not in instance]
        return [f"{_join(path, name)}: required argument is missing" for name in missing]
    if error.validator == "additionalProperties" and isinstance(instance, Mapping):
        known = set((error.schema.get("properties") or {}).keys())
        extras = sorted(name for name in instance if name not in known)
        allowed = ", ".join(sorted(known)) or "none"
        return [f"{_join(path, name)}: unknown argument (allowed: {allowed})" for name in extras]
    where = _join(path) or "arguments"
    return [f"{where}: {error.message}"]


def describe_errors(validator: Draft202012Validator, arguments: Any) -> list[str]:
    """Messages for every problem of ``arguments`` (empty when valid), ordered by field path."""
    errors = sorted(validator.iter_errors(arguments), key=lambda e: [str(p) for p in e.absolute_path])
    messages: list[str] = []
    for error in errors:
        for message in _messages(error):
            if message not in messages:
                messages.append(message)
    if len(messages) > MAX_REPORTED_ERRORS:
        extra = len(messages) - MAX_REPORTED_ERRORS
        messages = [*messages[:MAX_REPORTED_ERRORS], f"... and {extra} more"]
    return messages


def too_deep(value: Any, limit: int = MAX_ARGUMENT_DEPTH) -> bool:
    """True when arrays/objects in ``value`` nest deeper than ``limit`` levels (checked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Iterable[Any] = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
