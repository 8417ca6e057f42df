"""A printable summary of the built-in inventories (tags, taxonomy coverage, dependency graph)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from finmcp.tool_specs.graph import DependencyGraph
from finmcp.tool_specs.inventory import Inventory, builtin_names, load_inventory
from finmcp.tool_specs.taxonomy import load_taxonomy


def summarize(inventory: Inventory) -> dict[str, Any]:
    """Counts for one inventory: tools, tags, scenarios, output schemas, graph size."""
    graph = DependencyGraph.from_inventory(inventory)
    return {
        "inventory": inventory.name,
        "tools": len(inventory),
        "with_output_schema": sum(t.output_schema is not None for t in inventory),
        "timeliness": dict(Counter(t.tags.timeliness for t in inventory).most_common()),
        "intent_type": dict(Counter(t.tags.intent_type for t in inventory).most_common()),
        "regulatory_domains": dict(
            Counter(d for t in inventory for d in t.tags.regulatory_domains).most_common()
        ),
        "sources": dict(Counter(t.source for t in inventory).most_common()),
        "scenarios": len({t.scenario for t in inventory if t.scenario}),
        "sub_scenarios": len({(t.scenario, t.sub_scenario) for t in inventory if t.sub_scenario}),
        "graph": graph.counts(),
    }


def format_summary(rows: list[dict[str, Any]]) -> str:
    """A fixed-width table of :func:`summarize` rows followed by the tag distributions."""
    taxonomy = load_taxonomy()
    header = f"{'inventory':<12}{'tools':>6}{'outSchema':>10}{'scen.':>7}{'sub':>5}{'nodes':>7}{'edges':>7}{'density':>9}"
    lines = [header, "-" * len(header)]
    for r in rows:
        g = r["graph"]
        lines.append(
            f"{r['inventory']:<12}{r['tools']:>6}{r['with_output_schema']:>10}{r['scenarios']:>7}"
            f"{r['sub_scenarios']:>5}{g['nodes']:>7}{g['edges']:>7}{g['density']:>9.3f}"
        )
    lines.append("")
    for r in rows:
        lines.append(f"{r['inventory']}: timeliness {r['timeliness']}")
        lines.append(
            f"{'':>{len(r['inventory'])}}  intent {r['intent_type']}; domains {r['regulatory_domains']}"
        )
    lines.append("")
    lines.append(
        f"taxonomy: {len(taxonomy.scenarios)} scenarios, {taxonomy.sub_scenario_count} sub-scenarios"
    )
    return "\n".join(lines)


def main() -> int:
    """Print the summary of every built-in inventory."""
    print(format_summary([summarize(load_inventory(name)) for name in builtin_names()]))
    return 0
