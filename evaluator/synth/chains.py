"""Tool chains per sub-scenario: paths between tool pairs that co-occur there, plus parallel fan-out.

A chain is a small DAG of steps. Each step names a tool and, per entity type, the earlier step whose
output it consumes. Steps are placed in stages (a step's stage is one more than its latest source's);
a stage with several calls is issued as one parallel group or as consecutive groups.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from importlib.resources import files
from typing import Any

from finmcp.evaluator.synth.binders import SINGLE_ENTITY_TOOLS
from finmcp.evaluator.synth.toolgraph import ToolGraph
from finmcp.tool_specs.inventory import Inventory
from finmcp.tool_specs.taxonomy import Taxonomy

AFFINITY: dict[str, tuple[str, ...]] = {
    sub: tuple(tools)
    for sub, tools in json.loads(
        files("finmcp.evaluator.synth").joinpath("affinity.json").read_text("utf-8")
    ).items()
}
"""Tools that co-occur with a sub-scenario's own tools (curated in ``affinity.json``; the paper mines this
from app logs)."""


@dataclass
class Step:
    """One chain step: a tool, the earlier steps it consumes (entity -> step index), repetitions."""

    tool: str
    sources: dict[str, int] = field(default_factory=dict)
    per_entity: int = 1
    stage: int = 0

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form stored with the sample."""
        out: dict[str, Any] = {"tool": self.tool}
        if self.sources:
            out["sources"] = dict(sorted(self.sources.items()))
        if self.per_entity > 1:
            out["per_entity"] = self.per_entity
        return out


@dataclass
class Chain:
    """A sampled chain for one sub-scenario; ``parallel`` issues multi-call stages as one group."""

    scenario: str
    sub_scenario: str
    steps: list[Step]
    parallel: bool = False

    @property
    def tools(self) -> list[str]:
        """Tool names in step order."""
        return [s.tool for s in self.steps]

    def edges(self) -> list[tuple[int, int, str]]:
        """Dependencies as (source step, target step, entity)."""
        return [(src, i, e) for i, s in enumerate(self.steps) for e, src in sorted(s.sources.items())]

    def stages(self) -> list[list[int]]:
        """Step indices per stage, in order (sets each step's ``stage``).

        A step with sources sits one stage after its latest source. A source-less step after the first
        joins stage 0 in a parallel chain (independent calls issued together), else follows its
        predecessor.
        """
        for i, step in enumerate(self.steps):
            if step.sources:
                step.stage = max(self.steps[src].stage + 1 for src in step.sources.values())
            elif i == 0 or self.parallel:
                step.stage = 0
            else:
                step.stage = self.steps[i - 1].stage + 1
        out: dict[int, list[int]] = {}
        for i, step in enumerate(self.steps):
            out.setdefault(step.stage, []).append(i)
        return [out[k] for k in sorted(out)]

    @classmethod
    def from_json(cls, scenario: str, sub_scenario: str, data: dict[str, Any]) -> Chain:
        """Inverse of :meth:`to_json`."""
        steps = [
            Step(
                s["tool"],
                {e: int(i) for e, i in (s.get("sources") or {}).items()},
                int(s.get("per_entity", 1)),
            )
            for s in data["steps"]
        ]
        return cls(scenario, sub_scenario, steps, bool(data.get("parallel", False)))

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form stored with the sample."""
        return {
            "steps": [s.to_json() for s in self.steps],
            "edges": [[a, b, e] for a, b, e in self.edges()],
            "parallel": self.parallel,
        }


class ChainSampler:
    """Samples chains over the executable graph for each sub-scenario of the taxonomy."""

    def __init__(
        self, inventory: Inventory, taxonomy: Taxonomy, graph: ToolGraph, max_edges: int = 3
    ) -> None:
        self.inventory = inventory
        self.graph = graph
        self.scenario_of: dict[str, str] = {}
        self.home: dict[str, list[str]] = {}
        for scenario in taxonomy.scenarios.values():
            for sub in scenario.sub_scenarios:
                self.scenario_of[sub] = scenario.id
                self.home[sub] = [t.name for t in inventory if t.sub_scenario == sub]
        self.pairs: dict[str, list[tuple[str, str, list[list[str]]]]] = {}
        for sub in self.home:
            cands = self.cooccurring(sub)
            pairs = [(a, b, graph.paths(a, b, max_edges)) for a in cands for b in cands if a != b]
            pairs = [p for p in pairs if p[2]]
            own = [p for p in pairs if p[0] in self.home[sub] or p[1] in self.home[sub]]
            self.pairs[sub] = own or pairs

    def cooccurring(self, sub: str) -> list[str]:
        """The sub-scenario's own tools, then the tools that co-occur with them."""
        out = list(self.home[sub])
        for tool in AFFINITY.get(sub, ()):
            if tool in self.inventory and tool not in out:
                out.append(tool)
        return out

    def sample(self, sub: str, rng: random.Random, want_parallel: bool, max_steps: int = 6) -> Chain:
        """One chain for ``sub``: a random path between a random co-occurring pair, then decorations."""
        chain = Chain(self.scenario_of[sub], sub, [], want_parallel)
        pairs = self.pairs[sub]
        if pairs:
            a, b, paths = pairs[rng.randrange(len(pairs))]
            path = paths[rng.randrange(len(paths))]
            for i, tool in enumerate(path):
                step = Step(tool)
                if i > 0:
                    entities = self.graph.edges[(path[i - 1], tool)]
                    step.sources = {entities[rng.randrange(len(entities))]: i - 1}
                chain.steps.append(step)
        else:
            tools = self.cooccurring(sub)
            first = rng.choice(self.home[sub])
            others = [t for t in tools if t != first]
            chain.steps = [Step(first)] + [
                Step(t) for t in rng.sample(others, min(len(others), rng.randint(1, 2)))
            ]
        if not any(t in self.home[sub] for t in chain.tools):  # e.g. the PDF step of a report
            chain.steps.append(Step(rng.choice(self.home[sub])))
        self._decorate(chain, sub, rng, want_parallel, max_steps)
        return chain

    def _decorate(
        self, chain: Chain, sub: str, rng: random.Random, want_parallel: bool, max_steps: int
    ) -> None:
        # siblings: other consumers of an entity some step produces, issued in the same stage
        cands = set(self.cooccurring(sub))
        for round_no in range(2):
            if round_no and rng.random() < 0.5:
                break
            if not (want_parallel or rng.random() < 0.3):
                continue
            used = set(chain.tools)
            options = [
                (i, nxt)
                for i, step in enumerate(chain.steps)
                for nxt in self.graph.successors(step.tool)
                if nxt not in used and (nxt in cands or rng.random() < 0.15)
            ]
            if options and len(chain.steps) < max_steps:
                i, tool = options[rng.randrange(len(options))]
                entities = self.graph.edges[(chain.steps[i].tool, tool)]
                chain.steps.append(Step(tool, {entities[rng.randrange(len(entities))]: i}))
        # a repeated single-entity step over several upstream entities
        for step in chain.steps:
            if (
                step.tool in SINGLE_ENTITY_TOOLS
                and step.sources
                and rng.random() < (0.6 if want_parallel else 0.35)
            ):
                step.per_entity = rng.randint(2, 5)
        # order: stages recomputed from sources; keep steps sorted by stage (stable)
        stages = chain.stages()
        order = [i for stage in stages for i in stage]
        if order != list(range(len(chain.steps))):
            remap = {old: new for new, old in enumerate(order)}
            steps = [chain.steps[i] for i in order]
            for step in steps:
                step.sources = {e: remap[s] for e, s in step.sources.items()}
            chain.steps = steps
