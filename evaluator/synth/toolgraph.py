"""Tool dependency graphs for synthesis.

- :func:`mine_candidates`: the paper's construction from multi-tool traces: for each pair of consecutive
  call groups, a candidate edge from every tool of the earlier group to every tool of the later one.
- :func:`validate_candidates`: keep the candidates the typed data-flow graph of ``tool_specs`` confirms
  (an entity produced by the earlier tool is consumed by the later one); optionally ask an LLM about the
  rest (``evaluator.synth.llm``).
- :func:`executable_graph`: the edges the scripted planner can really execute: a typed edge whose entity
  the later tool's binder accepts and that the earlier tool's simulated output actually carries.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from finmcp.evaluator.inputs.model import Reference
from finmcp.evaluator.synth.binders import ACCEPTS, StepInputs, bind
from finmcp.evaluator.synth.context import make_context
from finmcp.evaluator.synth.extract import extract
from finmcp.recordings.plumbing.seeding import rng_for
from finmcp.server.sim.simulator import Simulator
from finmcp.tool_specs.graph import DependencyGraph

EXECUTABLE_ENTITIES = (
    "fund_code",
    "portfolio_weights",
    "strategy_code",
    "service_account_id",
    "announcement_id",
    "asset_plan_id",
    "nav_series",
    "asset_allocation",
)


@dataclass
class ToolGraph:
    """Directed graph over tool names; ``edges[(a, b)]`` lists what justifies the edge."""

    nodes: tuple[str, ...]
    edges: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)
    support: Counter = field(default_factory=Counter)
    """How many times each candidate edge was seen in traces (mined graphs)."""

    @property
    def density(self) -> float:
        """Edges over the n(n-1) possible directed edges."""
        n = len(self.nodes)
        return len(self.edges) / (n * (n - 1)) if n > 1 else 0.0

    def counts(self) -> dict[str, Any]:
        """Node, edge and density figures."""
        return {"nodes": len(self.nodes), "edges": len(self.edges), "density": round(self.density, 4)}

    def successors(self, name: str) -> list[str]:
        """Tools with an edge from ``name``."""
        return [b for (a, b) in self.edges if a == name]

    def paths(self, source: str, target: str, max_edges: int = 3) -> list[list[str]]:
        """Simple paths source -> target with at most ``max_edges`` edges, shortest first, then by name."""
        adjacency: dict[str, list[str]] = {}
        for a, b in self.edges:
            adjacency.setdefault(a, []).append(b)
        found: list[list[str]] = []
        frontier = [[source]]
        for _ in range(max_edges):
            nxt = []
            for path in frontier:
                for node in sorted(adjacency.get(path[-1], ())):
                    if node == target:
                        found.append([*path, node])
                    elif node not in path:
                        nxt.append([*path, node])
            frontier = nxt
        return found

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready export (counts, nodes, edges with their justification and support)."""
        return {
            **self.counts(),
            "node_list": list(self.nodes),
            "edge_list": [
                {"source": a, "target": b, "why": list(w), "support": self.support.get((a, b), 0)}
                for (a, b), w in sorted(self.edges.items())
            ],
        }


def mine_candidates(references: Iterable[Reference]) -> Counter:
    """Candidate edges from consecutive groups of every multi-tool trace (self-loops left out)."""
    counts: Counter = Counter()
    for ref in references:
        if ref.type != "multi_tool":
            continue
        groups = [g for turn in ref.turns for g in turn.calls]
        for earlier, later in zip(groups, groups[1:], strict=False):
            for a in {c.tool for c in earlier}:
                for b in {c.tool for c in later}:
                    if a != b:
                        counts[(a, b)] += 1
    return counts


def validate_candidates(
    candidates: Counter,
    typed: DependencyGraph,
    llm_judge: Callable[[str, str], bool] | None = None,
) -> ToolGraph:
    """Keep candidates confirmed by the typed graph (or, for the others, by ``llm_judge(a, b)``)."""
    edges: dict[tuple[str, str], tuple[str, ...]] = {}
    for a, b in sorted(candidates):
        if a not in typed.nodes or b not in typed.nodes:
            continue
        if (a, b) in typed.edges:
            edges[(a, b)] = typed.edges[(a, b)]
        elif llm_judge is not None and llm_judge(a, b):
            edges[(a, b)] = ("llm",)
    support = Counter({key: candidates[key] for key in edges})
    return ToolGraph(typed.nodes, edges, support)


def probe_entities(simulator: Simulator, seed: int, samples: int = 6) -> dict[str, set[str]]:
    """Entity types each tool's simulated output really carries (union over a few seeded contexts)."""
    found: dict[str, set[str]] = {}
    for i in range(samples):
        ctx = make_context(simulator.world, rng_for(seed, "probe", i))
        for spec in simulator.inventory:
            rng = rng_for(seed, "probe", i, spec.name)
            try:
                bindings = bind(spec, ctx, StepInputs(), rng, simulator.world)
            except ValueError:
                continue
            entities = extract(simulator.simulate(spec.name, bindings[0].arguments))
            have = found.setdefault(spec.name, set())
            for entity in EXECUTABLE_ENTITIES:
                if entities.values(entity):
                    have.add(entity)
    return found


def executable_graph(typed: DependencyGraph, produced: dict[str, set[str]]) -> ToolGraph:
    """Typed edges the planner can execute: entity accepted by the target, carried by the source."""
    edges: dict[tuple[str, str], tuple[str, ...]] = {}
    for (a, b), entities in typed.edges.items():
        usable = tuple(
            e for e in entities if e in ACCEPTS.get(b, ()) and e in produced.get(a, ()) and e != "user_id"
        )
        if usable:
            edges[(a, b)] = usable
    return ToolGraph(typed.nodes, dict(sorted(edges.items())))
