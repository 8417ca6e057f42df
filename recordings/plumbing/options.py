"""Typed options from parsed flags: a command line turns its ``argparse.Namespace`` into a frozen
dataclass once, and the engine it calls takes that, never the namespace."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, TypeVar

T = TypeVar("T")


def options_from(cls: type[T], args: Any, **given: Any) -> T:
    """``cls`` (a dataclass) with each field taken from the flag of the same name in ``args``, except
    those in ``given`` (renamed or derived ones). A field with no such flag is an error, not a default."""
    names = [f.name for f in fields(cls) if f.init and f.name not in given]  # type: ignore[arg-type]
    return cls(**{name: getattr(args, name) for name in names}, **given)
