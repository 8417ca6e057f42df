"""The typed data-flow dependency graph of an inventory.

Edge A -> B when A produces an entity type that B consumes (user-supplied "source" entities such as
keywords and dates excluded). Edges carry the entity types that justify them.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

from finmcp.tool_specs.entities import SOURCE_ENTITIES
from finmcp.tool_specs.inventory import Inventory


@dataclass(frozen=True)
class DependencyGraph:
    """Nodes are tool names; ``edges[(a, b)]`` is the tuple of entity types flowing from a to b."""

    inventory: str
    nodes: tuple[str, ...]
    edges: dict[tuple[str, str], tuple[str, ...]]

    @classmethod
    def from_inventory(cls, inventory: Inventory) -> DependencyGraph:
        """Build the graph from every tool's ``produces`` and ``consumes``."""
        consumers: dict[str, list[str]] = {}
        for tool in inventory:
            for entity in tool.consumes:
                consumers.setdefault(entity, []).append(tool.name)
        edges: dict[tuple[str, str], set[str]] = {}
        for tool in inventory:
            for entity in tool.produces:
                if entity in SOURCE_ENTITIES:
                    continue
                for target in consumers.get(entity, ()):
                    if target != tool.name:
                        edges.setdefault((tool.name, target), set()).add(entity)
        ordered = {key: tuple(sorted(edges[key])) for key in sorted(edges)}
        return cls(inventory.name, tuple(t.name for t in inventory), ordered)

    @property
    def density(self) -> float:
        """Edges over the n(n-1) possible directed edges."""
        n = len(self.nodes)
        return len(self.edges) / (n * (n - 1)) if n > 1 else 0.0

    def successors(self, name: str) -> list[str]:
        """Tools that consume something ``name`` produces."""
        self._require(name)
        return [b for (a, b) in self.edges if a == name]

    def predecessors(self, name: str) -> list[str]:
        """Tools that produce something ``name`` consumes."""
        self._require(name)
        return [a for (a, b) in self.edges if b == name]

    def paths(self, source: str, target: str, max_length: int = 4, limit: int = 1000) -> list[list[str]]:
        """Simple paths from ``source`` to ``target`` with at most ``max_length`` edges, shortest first."""
        self._require(source)
        self._require(target)
        adjacency = self._adjacency()
        found: list[list[str]] = []
        queue: deque[list[str]] = deque([[source]])
        while queue and len(found) < limit:
            path = queue.popleft()
            if len(path) > max_length:
                continue
            for nxt in adjacency.get(path[-1], ()):
                if nxt == target:
                    found.append([*path, nxt])
                elif nxt not in path:
                    queue.append([*path, nxt])
        return found

    def _adjacency(self) -> dict[str, list[str]]:
        adjacency: dict[str, list[str]] = {}
        for a, b in self.edges:
            adjacency.setdefault(a, []).append(b)
        return adjacency

    def _require(self, name: str) -> None:
        if name not in self.nodes:
            raise KeyError(f"tool {name!r} is not in inventory {self.inventory!r}")

    def counts(self) -> dict[str, Any]:
        """Node, edge and density figures."""
        return {"nodes": len(self.nodes), "edges": len(self.edges), "density": round(self.density, 4)}

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready export: counts, nodes and edges with their entity types."""
        return {
            "inventory": self.inventory,
            **self.counts(),
            "node_list": list(self.nodes),
            "edge_list": [
                {"source": a, "target": b, "entities": list(e)} for (a, b), e in self.edges.items()
            ],
        }
