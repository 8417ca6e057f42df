"""Build the shipped benchmark ``finmcp-sim``: quotas, synthesis, recordings, files and manifest.

``build(seed, out_dir)`` writes ``finmcp_sim.jsonl.gz`` (references, one per line, sorted by id),
``finmcp_sim.recordings.jsonl.gz`` (the responses JSONL export of the baked recordings, fixed
``created``) and ``finmcp_sim.manifest.json`` (seed, counts, sha256 of both). Gzip headers carry no
name and mtime 0, so the same seed gives the same bytes.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from finmcp.evaluator.progress import Progress
from finmcp.evaluator.synth.chains import ChainSampler
from finmcp.evaluator.synth.executor import Executor, SimExecutor
from finmcp.evaluator.synth.samples import Accepted, Synthesizer
from finmcp.evaluator.synth.toolgraph import ToolGraph, executable_graph, probe_entities
from finmcp.recordings.plumbing.seeding import rng_for
from finmcp.server.sim.simulator import Simulator
from finmcp.tool_specs.graph import DependencyGraph
from finmcp.tool_specs.inventory import Inventory, load_inventory
from finmcp.tool_specs.taxonomy import Taxonomy, load_taxonomy

REFERENCES_FILE = "finmcp_sim.jsonl.gz"
RECORDINGS_FILE = "finmcp_sim.recordings.jsonl.gz"
MANIFEST_FILE = "finmcp_sim.manifest.json"
FIXED_CREATED = "2025-09-30T00:00:00Z"
"""``created`` stamp of every baked recording (byte-identical rebuilds)."""


@dataclass(frozen=True)
class Quotas:
    """Samples per type (the FinMCP-Bench mix) and the multi-tool samples asked to be parallel."""

    single_tool: int = 145
    multi_tool: int = 249
    multi_turn: int = 219
    parallel: int = 80


def spread(total: int, keys: list[str], seed: int, label: str) -> dict[str, int]:
    """``total`` split over ``keys`` as evenly as possible; the remainder goes to a seeded subset."""
    base, extra = divmod(total, len(keys))
    lucky = set(rng_for(seed, "quota", label).sample(keys, extra))
    return {k: base + (1 if k in lucky else 0) for k in keys}


def gzip_bytes(data: bytes) -> bytes:
    """Deterministic gzip: no file name, mtime 0, level 9."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as handle:
        handle.write(data)
    return buffer.getvalue()


def references_bytes(records: list[dict[str, Any]]) -> bytes:
    """JSONL of the records sorted by id (compact separators, UTF-8)."""
    lines = [
        json.dumps(r, ensure_ascii=False, separators=(",", ":"))
        for r in sorted(records, key=lambda r: r["id"])
    ]
    return ("\n".join(lines) + "\n").encode("utf-8")


def recordings_bytes(inventory: Inventory, accepted: list[Accepted]) -> bytes:
    """The responses JSONL export of every accepted call, baked as ``simulated`` recordings."""
    from finmcp.recordings.jsonl import export_jsonl_text
    from finmcp.recordings.store import RecordingStore

    with tempfile.TemporaryDirectory() as tmp:
        with RecordingStore.open(Path(tmp) / "bake.sqlite") as store, store.transaction():
            for item in accepted:
                for tool, arguments, result in item.calls:
                    plain = {k: result.get(k) for k in ("content", "structuredContent", "isError")}
                    store.put_response(
                        inventory.name,
                        tool,
                        arguments,
                        plain,
                        "simulated",
                        input_schema=inventory.require(tool).input_schema,
                        replace=False,
                        created=FIXED_CREATED,
                    )
        with RecordingStore.open(Path(tmp) / "bake.sqlite") as store:
            return export_jsonl_text(store).encode("utf-8")


class Builder:
    """Everything a build needs: inventory, taxonomy, world, graphs, sampler and executor."""

    def __init__(self, seed: int = 0, inventory: str = "finmcp65", executor: Executor | None = None) -> None:
        self.seed = seed
        self.inventory = load_inventory(inventory)
        self.taxonomy: Taxonomy = load_taxonomy()
        self.simulator = Simulator(self.inventory, seed=seed)
        self.typed = DependencyGraph.from_inventory(self.inventory)
        self.produced = probe_entities(self.simulator, seed)
        self.graph: ToolGraph = executable_graph(self.typed, self.produced)
        self.sampler = ChainSampler(self.inventory, self.taxonomy, self.graph)
        self.executor = executor or SimExecutor(self.inventory, self.simulator)
        self.synth = Synthesizer(
            seed, self.inventory, self.taxonomy, self.simulator.world, self.sampler, self.executor
        )

    def subs(self) -> list[str]:
        """Sub-scenario ids in taxonomy order."""
        return [sub for s in self.taxonomy.scenarios.values() for sub in s.sub_scenarios]

    def plan(self, quotas: Quotas) -> list[tuple[str, str, str, bool]]:
        """Every sample to make: (type, sub-scenario, id, want_parallel), in id order."""
        subs = self.subs()
        jobs: list[tuple[str, str, str, bool]] = []
        for stype, prefix, total in (
            ("single_tool", "sim-single", quotas.single_tool),
            ("multi_tool", "sim-multi", quotas.multi_tool),
            ("multi_turn", "sim-turn", quotas.multi_turn),
        ):
            counts = spread(total, subs, self.seed, stype)
            n = 0
            for sub in subs:
                for _ in range(counts[sub]):
                    n += 1
                    jobs.append((stype, sub, f"{prefix}-{n:04d}", False))
        multi = [i for i, j in enumerate(jobs) if j[0] == "multi_tool"]
        for i in rng_for(self.seed, "parallel").sample(multi, min(quotas.parallel, len(multi))):
            stype, sub, sid, _ = jobs[i]
            jobs[i] = (stype, sub, sid, True)
        return jobs

    async def make(self, job: tuple[str, str, str, bool]) -> Accepted:
        """Synthesize one planned sample."""
        stype, sub, sid, parallel = job
        if stype == "single_tool":
            return await self.synth.single_tool(sub, sid)
        if stype == "multi_tool":
            return await self.synth.multi_tool(sub, sid, parallel)
        return await self.synth.dialogue(sub, sid)

    def run(self, jobs: list[tuple[str, str, str, bool]], progress: bool = True) -> list[Accepted]:
        """Synthesize ``jobs`` in order (with a progress bar on stderr)."""

        async def main() -> list[Accepted]:
            out = []
            async with self.executor.shared():
                with Progress("trajectories", len(jobs), enabled=progress) as bar:
                    for job in jobs:
                        out.append(await self.make(job))
                        bar.advance()
            return out

        return anyio.run(main)


def build(
    seed: int = 0,
    out_dir: str | Path | None = None,
    quotas: Quotas | None = None,
    progress: bool = True,
    only: list[str] | None = None,
) -> dict[str, Any]:
    """Build the benchmark (or only the sample ids in ``only``); write files when ``out_dir`` is set.

    Returns the manifest: seed, counts by type/scenario/difficulty, parallel count, file sizes and sha256.
    """
    builder = Builder(seed)
    jobs = builder.plan(quotas or Quotas())
    if only is not None:
        wanted = set(only)
        jobs = [j for j in jobs if j[2] in wanted]
    accepted = builder.run(jobs, progress)
    records = [a.record for a in accepted]
    refs = gzip_bytes(references_bytes(records))
    recs = gzip_bytes(recordings_bytes(builder.inventory, accepted))
    manifest = {
        "benchmark": "finmcp-sim",
        "seed": seed,
        "inventory": builder.inventory.name,
        "samples": len(records),
        "by_type": dict(sorted(Counter(r["type"] for r in records).items())),
        "parallel_multi_tool": sum(
            1
            for r in records
            if r["type"] == "multi_tool" and any(len(g) > 1 for t in r["turns"] for g in t["calls"])
        ),
        "graph": {"executable": builder.graph.counts(), "typed": builder.typed.counts()},
        "files": {
            REFERENCES_FILE: {"bytes": len(refs), "sha256": hashlib.sha256(refs).hexdigest()},
            RECORDINGS_FILE: {"bytes": len(recs), "sha256": hashlib.sha256(recs).hexdigest()},
        },
    }
    if out_dir is not None:
        folder = Path(out_dir)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / REFERENCES_FILE).write_bytes(refs)
        (folder / RECORDINGS_FILE).write_bytes(recs)
        if only is None:
            text = json.dumps(manifest, ensure_ascii=False, indent=2, sort_keys=True) + "\n"
            (folder / MANIFEST_FILE).write_text(text, "utf-8")
    manifest["_records"] = records
    manifest["_references_gz"] = refs
    manifest["_recordings_gz"] = recs
    return manifest
