"""Table-1 figures of a reference set: samples, calls, steps, turns, parallel samples, distributions."""

from __future__ import annotations

from collections import Counter
from typing import Any

from finmcp.evaluator.inputs.model import DIFFICULTIES, SAMPLE_TYPES, Reference


def _parallel(ref: Reference) -> bool:
    return any(len(g) > 1 for t in ref.turns for g in t.calls)


def table1(refs: list[Reference], inventory: Any = None) -> dict[str, Any]:
    """Per type and overall: count, avg calls, avg steps (groups), avg turns, samples with parallel groups."""
    rows: dict[str, Any] = {}
    for stype in (*SAMPLE_TYPES, "all"):
        chosen = [r for r in refs if stype == "all" or r.type == stype]
        n = len(chosen)
        if not n:
            continue
        rows[stype] = {
            "samples": n,
            "avg_calls": round(sum(r.call_count for r in chosen) / n, 2),
            "avg_steps": round(sum(len(t.calls) for r in chosen for t in r.turns) / n, 2),
            "avg_turns": round(sum(len(r.turns) for r in chosen) / n, 2),
            "parallel": sum(1 for r in chosen if _parallel(r)),
        }
    out: dict[str, Any] = {"by_type": rows}
    if inventory is not None:
        args = [len(t.input_schema.get("properties") or {}) for t in inventory]
        out["tools"] = {"count": len(args), "avg_arguments": round(sum(args) / len(args), 2)}
        used = {c.tool for r in refs for t in r.turns for g in t.calls for c in g}
        out["tools"]["used"] = len(used)
    scen: dict[str, Counter] = {}
    for r in refs:
        scen.setdefault(r.scenario, Counter())[r.type] += 1
    out["by_scenario"] = {k: dict(sorted(v.items())) for k, v in sorted(scen.items())}
    out["sub_scenarios"] = len({(r.scenario, r.sub_scenario) for r in refs})
    diff: dict[str, Counter] = {}
    for r in refs:
        diff.setdefault(r.type, Counter())[r.difficulty] += 1
    out["by_difficulty"] = {k: {d: v.get(d, 0) for d in DIFFICULTIES} for k, v in sorted(diff.items())}
    return out


def render(stats: dict[str, Any]) -> str:
    """The figures as Markdown tables."""
    lines = [
        "| type | samples | avg calls | avg steps | avg turns | with parallel groups |",
        "|---|---|---|---|---|---|",
    ]
    for stype, row in stats["by_type"].items():
        lines.append(
            f"| {stype} | {row['samples']} | {row['avg_calls']} | {row['avg_steps']} | {row['avg_turns']} | {row['parallel']} |"
        )
    if "tools" in stats:
        t = stats["tools"]
        lines += [
            "",
            f"tools: {t['count']} in the inventory ({t['used']} used), {t['avg_arguments']} arguments on average",
        ]
    lines += ["", f"scenarios: {len(stats['by_scenario'])}, sub-scenarios: {stats['sub_scenarios']}", ""]
    types = list(SAMPLE_TYPES)
    lines += ["| scenario | " + " | ".join(types) + " | total |", "|---|" + "---|" * (len(types) + 1)]
    for scenario, counts in stats["by_scenario"].items():
        cells = [str(counts.get(t, 0)) for t in types]
        lines.append(f"| {scenario} | " + " | ".join(cells) + f" | {sum(counts.values())} |")
    lines += ["", "| type | " + " | ".join(DIFFICULTIES) + " |", "|---|" + "---|" * len(DIFFICULTIES)]
    for stype, counts in stats["by_difficulty"].items():
        lines.append(f"| {stype} | " + " | ".join(str(counts[d]) for d in DIFFICULTIES) + " |")
    return "\n".join(lines) + "\n"
