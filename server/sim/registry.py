"""Per-tool output builders, registered by tool name.

A builder takes the build context and the tool's arguments (schema defaults already applied) and
returns the JSON value the real server would print: an object or a list. It signals a bad request the
real server would refuse with :class:`ToolInputError`; an unknown code is *not* an error: builders
answer what the real server answers then (an empty list, ``{"funds": [], "total": 0}``, …).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from finmcp.server.world import World
from finmcp.tool_specs.model import ToolSpec


class ToolInputError(ValueError):
    """The arguments are well-typed but the real server would refuse them; becomes an isError result."""


@dataclass(frozen=True)
class BuildContext:
    """What a builder may use: the world, the tool's spec and the seed."""

    world: World
    spec: ToolSpec
    seed: int


Builder = Callable[[BuildContext, dict[str, Any]], Any]

QIEMAN_BUILDERS: dict[str, Builder] = {}


def qieman_builder(*names: str) -> Callable[[Builder], Builder]:
    """Register a function as the builder of the named Qieman tools."""

    def register(fn: Builder) -> Builder:
        for name in names:
            if name in QIEMAN_BUILDERS:
                raise ValueError(f"two builders for {name!r}")
            QIEMAN_BUILDERS[name] = fn
        return fn

    return register
