"""The pipeline one stage at a time (``finmcp-eval synth chains | queries | trajectories | dialogues``).

Each stage reads and writes JSONL, so a stage can be re-run or replaced (an LLM query writer, a real
server behind the proxy). Streams are keyed by (seed, stage, item id), so every stage is deterministic.
"""

from __future__ import annotations

from typing import Any

import anyio

from finmcp.evaluator.progress import Progress
from finmcp.evaluator.synth.build import Builder
from finmcp.evaluator.synth.chains import Chain
from finmcp.evaluator.synth.context import make_context
from finmcp.evaluator.synth.samples import Accepted, chain_parts, write_query
from finmcp.evaluator.synth.texts import with_user_id
from finmcp.evaluator.synth.trajectory import execute
from finmcp.recordings.plumbing.seeding import rng_for


def sample_chains(builder: Builder, per_sub: int, parallel_share: float = 0.3) -> list[dict[str, Any]]:
    """``per_sub`` chains for every sub-scenario."""
    out = []
    for sub in builder.subs():
        for k in range(per_sub):
            cid = f"chain-{sub}-{k:03d}"
            rng = rng_for(builder.seed, "chain", cid)
            chain = builder.sampler.sample(sub, rng, rng.random() < parallel_share)
            out.append({"id": cid, "scenario": chain.scenario, "sub_scenario": sub, "chain": chain.to_json()})
    return out


def write_queries(builder: Builder, chains: list[dict[str, Any]], writer: Any = None) -> list[dict[str, Any]]:
    """A (zh, en) query per chain record, from templates (or ``writer``, e.g. an LLM query writer)."""
    out = []
    for rec in chains:
        chain = Chain.from_json(rec["scenario"], rec["sub_scenario"], rec["chain"])
        ctx = make_context(builder.simulator.world, rng_for(builder.seed, "ctx", rec["id"]))
        parts = chain_parts(chain)
        zh, en = write_query(chain, ctx, parts, rng_for(builder.seed, "query", rec["id"]), writer)
        out.append({**rec, "query": {"zh": with_user_id(zh, ctx, "zh"), "en": with_user_id(en, ctx, "en")}})
    return out


def run_trajectories(
    builder: Builder, queries: list[dict[str, Any]], progress: bool = True
) -> tuple[list[Accepted], list[dict[str, str]]]:
    """Execute every query's chain with the scripted planner; keep the valid ones as references."""

    async def main() -> tuple[list[Accepted], list[dict[str, str]]]:
        kept: list[Accepted] = []
        dropped: list[dict[str, str]] = []
        with Progress("trajectories", len(queries), enabled=progress) as bar:
            for rec in queries:
                chain = Chain.from_json(rec["scenario"], rec["sub_scenario"], rec["chain"])
                ctx = make_context(builder.simulator.world, rng_for(builder.seed, "ctx", rec["id"]))
                rng = rng_for(builder.seed, "trajectory", rec["id"])
                traj = await execute(
                    chain,
                    [chain.stages()],
                    ctx,
                    builder.executor,
                    rec["id"],
                    builder.inventory,
                    builder.simulator.world,
                    rng,
                )
                bar.advance()
                if traj.failure:
                    dropped.append({"id": rec["id"], "reason": traj.failure})
                    continue
                stype = "single_tool" if len(traj.calls()) == 1 else "multi_tool"
                user = (rec["query"]["zh"], rec["query"]["en"])
                kept.append(builder.synth.accept_single_turn(rec["id"], stype, chain, ctx, traj, user, 0))
        return kept, dropped

    return anyio.run(main)


def make_dialogues(builder: Builder, per_sub: int, progress: bool = True) -> list[Accepted]:
    """``per_sub`` role-played dialogues for every sub-scenario."""
    jobs = [(sub, f"dialogue-{sub}-{k:03d}") for sub in builder.subs() for k in range(per_sub)]

    async def main() -> list[Accepted]:
        out = []
        with Progress("dialogues", len(jobs), enabled=progress) as bar:
            for sub, did in jobs:
                out.append(await builder.synth.dialogue(sub, did))
                bar.advance()
        return out

    return anyio.run(main)
