"""Execute a chain with the scripted planner and check it: every call succeeds, dependencies carry data.

The planner walks the chain stage by stage. For each step it binds arguments from the entities the
step's source steps returned (``binders``), runs the stage's calls (one parallel group, or one group
per call), then extracts the entities of every output for the steps that follow.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from finmcp.evaluator.synth.binders import BindError, Binding, StepInputs, bind
from finmcp.evaluator.synth.chains import Chain
from finmcp.evaluator.synth.context import SampleContext
from finmcp.evaluator.synth.executor import Executor
from finmcp.evaluator.synth.extract import Entities, extract
from finmcp.server.world import World
from finmcp.tool_specs.inventory import Inventory


@dataclass
class ExecutedCall:
    """One executed call: tool, arguments, MCP result, its chain step and global group number."""

    tool: str
    arguments: dict[str, Any]
    result: dict[str, Any]
    step: int
    group: int
    consumed: list[tuple[int, str, Any]] = field(default_factory=list)


@dataclass
class Trajectory:
    """Executed groups per turn (``turns[t][g]`` is a list of calls), plus the failure reason if any."""

    turns: list[list[list[ExecutedCall]]]
    failure: str | None = None

    def calls(self) -> list[ExecutedCall]:
        """Every call, in order."""
        return [c for turn in self.turns for group in turn for c in group]


def _merge(entities: list[Entities]) -> Entities:
    out = Entities()
    for e in entities:
        for name in ("fund_code", "strategy_code", "service_account_id", "announcement_id", "asset_plan_id"):
            target = getattr(out, name)
            for value in getattr(e, name):
                if value not in target:
                    target.append(value)
        out.fund_names.update({k: v for k, v in e.fund_names.items() if k not in out.fund_names})
        out.fund_weights.update({k: v for k, v in e.fund_weights.items() if k not in out.fund_weights})
        out.strategy_names.update({k: v for k, v in e.strategy_names.items() if k not in out.strategy_names})
        out.nav_series.extend(e.nav_series)
        out.asset_allocation.extend(e.asset_allocation)
    return out


async def execute(
    chain: Chain,
    turn_stages: list[list[list[int]]],
    ctx: SampleContext,
    executor: Executor,
    sample_id: str,
    inventory: Inventory,
    world: World,
    rng: random.Random,
) -> Trajectory:
    """Run the chain's stages, split over turns as ``turn_stages[turn] = [stage, ...]``."""
    outputs: dict[int, list[dict[str, Any]]] = {}
    entities: dict[int, Entities] = {}
    turns: list[list[list[ExecutedCall]]] = []
    group_no = 0
    for turn_index, stages in enumerate(turn_stages):
        groups: list[list[ExecutedCall]] = []
        turns.append(groups)
        if not stages:
            continue
        async with executor.session(sample_id, turn_index) as session:
            for stage in stages:
                planned: list[tuple[int, Binding]] = []
                for step_index in stage:
                    step = chain.steps[step_index]
                    inputs = StepInputs({e: (s, entities[s]) for e, s in step.sources.items()})
                    try:
                        bindings = bind(
                            inventory.require(step.tool), ctx, inputs, rng, world, step.per_entity
                        )
                    except BindError as exc:
                        return Trajectory(turns, f"bind: {exc}")
                    planned += [(step_index, b) for b in bindings]
                batches = [planned] if chain.parallel else [[p] for p in planned]
                for batch in batches:
                    calls = [(chain.steps[i].tool, b.arguments) for i, b in batch]
                    results = await session.call_group(calls, group_no)
                    group = []
                    for (i, b), result in zip(batch, results, strict=True):
                        group.append(
                            ExecutedCall(chain.steps[i].tool, b.arguments, result, i, group_no, b.consumed)
                        )
                        outputs.setdefault(i, []).append(result)
                    groups.append(group)
                    group_no += 1
                for step_index in stage:
                    entities[step_index] = _merge([extract(r) for r in outputs.get(step_index, [])])
    trajectory = Trajectory(turns)
    trajectory.failure = verify(chain, trajectory)
    return trajectory


def verify(chain: Chain, trajectory: Trajectory) -> str | None:
    """None when every call succeeded and every chain edge carried data in order, else the reason."""
    calls = trajectory.calls()
    by_step: dict[int, list[ExecutedCall]] = {}
    for call in calls:
        if call.result.get("isError"):
            text = "".join(b.get("text", "") for b in call.result.get("content", []))
            return f"call failed: {call.tool}: {text[:200]}"
        by_step.setdefault(call.step, []).append(call)
    for src, dst, entity in chain.edges():
        if src not in by_step or dst not in by_step:
            return f"edge {src}->{dst}: a step was not executed"
        if max(c.group for c in by_step[src]) >= min(c.group for c in by_step[dst]):
            return f"edge {src}->{dst}: {chain.steps[dst].tool} does not come after {chain.steps[src].tool}"
        produced = set(_merge([extract(c.result) for c in by_step[src]]).values(entity))
        for call in by_step[dst]:
            used = [v for s, e, v in call.consumed if s == src and e == entity]
            text = json.dumps(call.arguments, ensure_ascii=False)
            named = entity != "asset_allocation"  # class names become weight keys (MonteCarloSimulate)
            if not used or not all(v in produced and (not named or str(v) in text) for v in used):
                return f"edge {src}->{dst}: {call.tool} did not consume {entity} from {chain.steps[src].tool}"
    return None
