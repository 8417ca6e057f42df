"""Inventories: named, validated sets of ToolSpecs (built-in data or a user's file)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache, cached_property
from importlib import resources
from pathlib import Path
from typing import Any

from finmcp.tool_specs.errors import InventoryError
from finmcp.tool_specs.model import ToolSpec
from finmcp.tool_specs.validation import validate_records

BUILTIN = {
    "qieman79": "data/qieman79.json",
    "finmcp65": "data/finmcp65.json",
    "fintool760": "data/fintool760.json.gz",
}
"""Built-in inventory names and their data files inside the package."""


@dataclass(frozen=True)
class Inventory:
    """A named set of tools with unique names, in a fixed order."""

    name: str
    description: str
    tools: tuple[ToolSpec, ...]
    source: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @cached_property
    def by_name(self) -> dict[str, ToolSpec]:
        """Tools keyed by name."""
        return {t.name: t for t in self.tools}

    @property
    def names(self) -> frozenset[str]:
        """The set of tool names."""
        return frozenset(self.by_name)

    def get(self, name: str) -> ToolSpec | None:
        """The tool called ``name``, or None."""
        return self.by_name.get(name)

    def require(self, name: str) -> ToolSpec:
        """The tool called ``name``; KeyError naming the tool and the inventory when there is none."""
        spec = self.by_name.get(name)
        if spec is None:
            raise KeyError(f"tool {name!r} not in inventory {self.name!r}")
        return spec

    def __len__(self) -> int:
        return len(self.tools)

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(self.tools)

    def __contains__(self, name: object) -> bool:
        return name in self.by_name

    @cached_property
    def mcp_tools(self) -> tuple[dict[str, Any], ...]:
        """Every tool in its MCP wire form (computed once)."""
        return tuple(t.to_mcp_tool() for t in self.tools)


def builtin_names() -> list[str]:
    """Names of the inventories shipped with finmcp."""
    return list(BUILTIN)


def _read_package_json(relative: str) -> Any:
    data = resources.files("finmcp.tool_specs").joinpath(relative).read_bytes()
    if relative.endswith(".gz"):
        data = gzip.decompress(data)
    return json.loads(data)


def _from_document(doc: Any, origin: str, meta_check: bool = True) -> Inventory:
    if not isinstance(doc, dict) or not isinstance(doc.get("tools"), list):
        raise InventoryError(f"{origin}: expected an object with a 'tools' list")
    name = doc.get("inventory") or Path(origin).stem
    if "base" in doc:  # a selection of another inventory's tools
        return _select(doc, name, origin)
    tools = validate_records(doc["tools"], name, meta_check)
    return Inventory(
        name, doc.get("description", ""), tools, origin, {k: v for k, v in doc.items() if k != "tools"}
    )


def _select(doc: dict[str, Any], name: str, origin: str) -> Inventory:
    base = load_inventory(doc["base"])
    missing = [t for t in doc["tools"] if t not in base]
    if missing:
        raise InventoryError(f"{name}: field tools: not in base inventory {doc['base']!r}: {missing}")
    if len(set(doc["tools"])) != len(doc["tools"]):
        raise InventoryError(f"{name}: field tools: duplicate names in the selection")
    chosen = set(doc["tools"])
    tools = tuple(t for t in base.tools if t.name in chosen)  # keep the base order
    extra = {k: v for k, v in doc.items() if k != "tools"}
    return Inventory(name, doc.get("description", ""), tools, origin, extra)


@cache
def _load_builtin(name: str, meta_check: bool = False) -> Inventory:
    # The shipped inventories skip the meta-schema check at load (nearly all of a server's start-up
    # time); tests/tool_specs checks them in full with load_builtin_checked.
    return _from_document(_read_package_json(BUILTIN[name]), name, meta_check)


def load_builtin_checked(name: str) -> Inventory:
    """A built-in inventory validated in full, its schemas checked against the meta-schema too."""
    return _load_builtin(name, True)


def read_builtin_document(name: str) -> Any:
    """The parsed JSON document of a built-in inventory, unvalidated (what loading starts from)."""
    return _read_package_json(BUILTIN[name])


def clear_cache() -> None:
    """Forget the built-in inventories loaded so far (the next load reads and validates again)."""
    _load_builtin.cache_clear()


def load_inventory_file(path: str | Path) -> Inventory:
    """Load an inventory from a file: finmcp's own JSON (optionally gzipped) or a FinToolBench manifest.

    A ``.jsonl`` file whose lines carry ``financial_tags`` is read as the published FinToolBench
    manifest (``tools_all_annotated.jsonl``), keeping its original text.
    """
    path = Path(path)
    if not path.is_file():
        raise InventoryError(f"inventory file not found: {path}")
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    text = raw.decode("utf-8")
    if path.name.endswith((".jsonl", ".jsonl.gz")):
        from finmcp.tool_specs.importers.fintoolbench import load_manifest_text

        tools = load_manifest_text(text, origin=str(path), keep_text=True)
        return Inventory(
            path.name.split(".")[0], f"FinToolBench manifest {path.name}", tuple(tools), str(path)
        )
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InventoryError(f"{path}: not valid JSON: {exc}") from None
    return _from_document(doc, str(path))


def load_inventory(name_or_path: str | Path) -> Inventory:
    """Load a built-in inventory by name (cached) or an inventory file by path."""
    if isinstance(name_or_path, str) and name_or_path in BUILTIN:
        return _load_builtin(name_or_path)
    if isinstance(name_or_path, str) and not Path(name_or_path).exists():
        raise InventoryError(
            f"unknown inventory {name_or_path!r}: built-ins are {', '.join(BUILTIN)}; or pass a file path"
        )
    return load_inventory_file(name_or_path)
