"""Which inventory a run serves when ``--inventory`` is absent.

A references file names its tools (every reference call), and often its inventory. :func:`choose_inventory`
takes ``--inventory`` when given, else the one inventory the references name, else the smallest built-in
inventory holding every tool the references call (:func:`covering_inventory`; ``qieman79`` holds
``finmcp65``, so the official FinMCP-Bench files get ``qieman79`` when they call a tool ``finmcp65`` lacks).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.inputs.model import Reference

SHOWN_TOOLS = 10
"""How many missing tool names the error names."""


@dataclass(frozen=True)
class InventoryChoice:
    """The inventory a run serves and how it was chosen."""

    name: str
    how: str
    """``flag`` (``--inventory``), ``references`` (the one inventory they name) or ``inferred`` (from their tools)."""
    tools: int = 0
    """How many distinct tools the references call (for the line saying what was inferred)."""


def reference_tools(refs: Iterable[Reference]) -> set[str]:
    """Every tool name the references call, in any turn."""
    return {call.tool for ref in refs for turn in ref.turns for group in turn.calls for call in group}


def builtin_tool_sets() -> dict[str, frozenset[str]]:
    """The tool names of every built-in inventory, by inventory name."""
    from finmcp.tool_specs.inventory import builtin_names, load_inventory

    return {name: load_inventory(name).names for name in builtin_names()}


def covering_inventory(tools: Iterable[str], inventories: Mapping[str, frozenset[str]] | None = None) -> str:
    """The smallest inventory of ``inventories`` (default: the built-ins) holding every one of ``tools``;
    ties go to the first name in sorted order, so the choice is deterministic.

    When none holds them all: an :class:`EvalInputError` naming ``--inventory`` and the tools the
    closest inventory (the one missing fewest) lacks."""
    wanted = set(tools)
    sets = builtin_tool_sets() if inventories is None else inventories
    if not sets:
        raise EvalInputError("no inventory to choose from: give --inventory NAME_OR_FILE")
    covering = [name for name, names in sets.items() if wanted <= names]
    if covering:
        return min(covering, key=lambda name: (len(sets[name]), name))
    closest = min(sets, key=lambda name: (len(wanted - sets[name]), len(sets[name]), name))
    missing = sorted(wanted - sets[closest])
    shown = ", ".join(missing[:SHOWN_TOOLS]) + (
        f", ... ({len(missing) - SHOWN_TOOLS} more)" if len(missing) > SHOWN_TOOLS else ""
    )
    raise EvalInputError(
        f"no built-in inventory ({', '.join(sorted(sets))}) holds every tool the references call: "
        f"the closest, {closest}, lacks {len(missing)}: {shown}. Give --inventory FILE (an inventory "
        "holding them)"
    )


def choose_inventory(refs: list[Reference], given: str | None) -> InventoryChoice:
    """``--inventory`` when given; else the one inventory the references name; else :func:`covering_inventory`."""
    if given:
        return InventoryChoice(given, "flag")
    named = {ref.inventory for ref in refs if ref.inventory}
    if len(named) == 1:
        return InventoryChoice(named.pop(), "references")
    tools = reference_tools(refs)
    return InventoryChoice(covering_inventory(tools), "inferred", len(tools))


def inferred_line(choice: InventoryChoice, bench: str) -> str:
    """The one stderr line saying which inventory was inferred for ``bench`` and how to choose another."""
    return (
        f"finmcp-eval: inventory {choice.name} (inferred: the smallest built-in holding the {choice.tools} "
        f"tools {bench} calls; --inventory to choose another)"
    )
