"""Importers: official FinMCP-Bench files and FinToolBench questions become reference sets.

- Official FinMCP-Bench JSON (``benchmark_final.json`` and friends, ``demo_infer.json``): parsed by
  ``evaluator.inputs.references`` and written in the project's own format (scenario ids resolved through the
  taxonomy, the original ``scenery`` kept); the tool outputs in their messages become
  ``imported:<file>`` recordings (``recordings.import_finmcp``).
- FinToolBench questions JSONL: validated and written back in its native form with explicit ids (the
  evaluator reads that form directly and keeps its "names only" semantics).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from finmcp.evaluator.inputs.model import Reference
from finmcp.evaluator.inputs.records import read_records
from finmcp.evaluator.inputs.references import load_references
from finmcp.tool_specs.inventory import load_inventory
from finmcp.tool_specs.taxonomy import load_taxonomy


def reference_record(ref: Reference, inventory: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """A :class:`Reference` as a record of the project's own format."""
    return {
        "id": ref.id,
        "type": ref.type,
        "scenario": ref.scenario,
        "sub_scenario": ref.sub_scenario,
        "inventory": inventory,
        "difficulty": ref.difficulty,
        "turns": [
            {
                "user": t.user,
                "calls": [[{"tool": c.tool, "arguments": c.arguments} for c in g] for g in t.calls],
                "assistant": t.assistant,
            }
            for t in ref.turns
        ],
        **(extra or {}),
    }


def official_records(path: str | Path, inventory: str = "qieman79") -> tuple[list[dict[str, Any]], list[str]]:
    """Own-format records from an official FinMCP-Bench file, and the loader's warnings."""
    inv = load_inventory(inventory)
    refs = load_references(path, inv.names, inv.name)
    raw, _ = read_records(path)
    scenery = {
        str(r.get("id", f"#{i}")): r.get("scenery", "") for i, r in enumerate(raw) if isinstance(r, dict)
    }
    taxonomy = load_taxonomy()
    out = []
    for ref in refs.samples:
        label = scenery.get(ref.id, "")
        scenario, sub = taxonomy.resolve(label)
        record = reference_record(ref, inv.name, {"scenery": label, "source_file": Path(path).name})
        if scenario:
            record["scenario"] = scenario
            record["sub_scenario"] = sub or ref.sub_scenario
        out.append(record)
    return out, refs.warnings


def import_official(
    paths: list[str | Path],
    out_refs: str | Path,
    out_recordings: str | Path | None = None,
    inventory: str = "qieman79",
) -> dict[str, Any]:
    """Write the references of every file to ``out_refs`` (JSONL) and their outputs to a recordings DB."""
    records: list[dict[str, Any]] = []
    warnings: list[str] = []
    for path in paths:
        recs, warns = official_records(path, inventory)
        records += recs
        warnings += warns
    _write_jsonl(out_refs, records)
    summary: dict[str, Any] = {"references": len(records), "warnings": warnings, "recordings": []}
    if out_recordings is not None:
        from finmcp.recordings.import_finmcp import import_finmcp
        from finmcp.recordings.store import RecordingStore

        inv = load_inventory(inventory)
        schemas = {t.name: t.input_schema for t in inv}
        with RecordingStore.open(out_recordings) as store:
            for path in paths:
                report = import_finmcp(store, path, inv.name, set(inv.names), schemas)
                summary["recordings"].append(report.summary())
    return summary


def import_fintoolbench(path: str | Path, out_refs: str | Path) -> dict[str, Any]:
    """Validate a FinToolBench questions JSONL and write it with explicit ids (native form)."""
    refs = load_references(path)
    raw, _ = read_records(path)
    by_id = {r.id: r for r in refs.samples}
    records = []
    for index, rec in enumerate(raw):
        name = rec.get("dataset_name")
        sample_id = str(rec["id"]) if "id" in rec else (f"{name}_{index}" if name else f"#{index}")
        if sample_id in by_id:
            records.append({"id": sample_id, **{k: v for k, v in rec.items() if k != "id"}})
    _write_jsonl(out_refs, records)
    return {"references": len(records), "warnings": refs.warnings}


def _write_jsonl(path: str | Path, records: list[dict[str, Any]]) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
