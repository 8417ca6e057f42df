"""The FinMCP-style scenario taxonomy (10 scenarios, 33 sub-scenarios) shipped as data."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources


@dataclass(frozen=True)
class SubScenario:
    """A sub-scenario: id (English CamelCase), Chinese and English names, level-3 topics."""

    id: str
    zh: str
    en: str
    topics: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scenario:
    """A level-1 scenario and its sub-scenarios, keyed by id."""

    id: str
    zh: str
    en: str
    sub_scenarios: dict[str, SubScenario] = field(default_factory=dict)


@dataclass(frozen=True)
class Taxonomy:
    """All scenarios keyed by id, with look-ups from Chinese or English names."""

    scenarios: dict[str, Scenario]

    @property
    def sub_scenario_count(self) -> int:
        """Number of sub-scenarios over all scenarios."""
        return sum(len(s.sub_scenarios) for s in self.scenarios.values())

    def resolve(self, label: str) -> tuple[str | None, str | None]:
        """Map a FinMCP ``scenery`` string (Chinese or English, '-'-separated) to (scenario, sub) ids."""
        parts = [p.strip() for p in label.split("-") if p.strip()]
        if not parts:
            return None, None
        for scenario in self.scenarios.values():
            if parts[0] in (scenario.id, scenario.zh, scenario.en):
                if len(parts) > 1:
                    for sub in scenario.sub_scenarios.values():
                        if parts[1] in (sub.id, sub.zh, sub.en):
                            return scenario.id, sub.id
                return scenario.id, None
        return None, None


@lru_cache(maxsize=1)
def load_taxonomy() -> Taxonomy:
    """Load the shipped taxonomy (cached)."""
    raw = json.loads(resources.files("finmcp.tool_specs").joinpath("data/taxonomy.json").read_text("utf-8"))
    scenarios = {}
    for s in raw["scenarios"]:
        subs = {
            x["id"]: SubScenario(x["id"], x["zh"], x["en"], tuple(x.get("topics", ())))
            for x in s["sub_scenarios"]
        }
        scenarios[s["id"]] = Scenario(s["id"], s["zh"], s["en"], subs)
    return Taxonomy(scenarios)
