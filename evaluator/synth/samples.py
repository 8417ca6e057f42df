"""Sample synthesis: single-tool, multi-tool (chain-based) and multi-turn (role-play) references.

Each sample is drawn from its own seeded stream ``(seed, type, sub-scenario, index, attempt)``; an
attempt whose trajectory fails (a call errors, or a dependency carried no data) is discarded and the
next attempt is drawn, so the result depends only on the seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from finmcp.evaluator.inputs.model import difficulty_from_count
from finmcp.evaluator.synth.chains import Chain, ChainSampler, Step
from finmcp.evaluator.synth.context import CITIES, Persona, SampleContext, make_context
from finmcp.evaluator.synth.executor import Executor
from finmcp.evaluator.synth.summary import summarize
from finmcp.evaluator.synth.texts import compose, with_user_id
from finmcp.evaluator.synth.trajectory import Trajectory, execute
from finmcp.recordings.plumbing.seeding import rng_for
from finmcp.server.world import World
from finmcp.tool_specs.inventory import Inventory
from finmcp.tool_specs.taxonomy import Taxonomy

STOP = "###STOP###"
MAX_ATTEMPTS = 30
RISK_LEVELS = (
    ("保守型", "conservative"),
    ("稳健型", "moderate"),
    ("平衡型", "balanced"),
    ("积极型", "aggressive"),
)
ACCOUNT_TOOLS = {
    "GetUserAssetView",
    "GetUserAssetBrief",
    "GetProfitCalendar",
    "GetUserAssetHoldingDistribution",
    "GetFundLatestProfit",
    "RenderHtmlToPdf",
}


@dataclass
class Accepted:
    """A finished sample: its reference record and the calls to bake as recordings."""

    record: dict[str, Any]
    calls: list[tuple[str, dict[str, Any], dict[str, Any]]] = field(default_factory=list)


@dataclass
class Synthesizer:
    """Builds samples of every type against one executor."""

    seed: int
    inventory: Inventory
    taxonomy: Taxonomy
    world: World
    sampler: ChainSampler
    executor: Executor
    query_writer: Any = None

    # ------------------------------------------------------------------ single / multi tool
    async def single_tool(self, sub: str, sample_id: str) -> Accepted:
        """One query answered by one call of a tool of ``sub``."""
        for attempt in range(MAX_ATTEMPTS):
            rng = rng_for(self.seed, "single", sample_id, attempt)
            ctx = make_context(self.world, rng)
            tool = rng.choice(self.sampler.home[sub])
            chain = Chain(self.sampler.scenario_of[sub], sub, [Step(tool)])
            traj = await self._run(chain, [chain.stages()], ctx, sample_id, rng)
            if traj.failure or len(traj.calls()) != 1:
                continue
            user = self._query(chain, ctx, [(tool, False)], rng)
            return self.accept_single_turn(sample_id, "single_tool", chain, ctx, traj, user, attempt)
        raise RuntimeError(f"{sample_id}: no valid single-tool sample for {sub} in {MAX_ATTEMPTS} attempts")

    async def multi_tool(self, sub: str, sample_id: str, want_parallel: bool) -> Accepted:
        """One query answered by a chain of calls (parallel groups when ``want_parallel``)."""
        fallback: Accepted | None = None
        for attempt in range(MAX_ATTEMPTS):
            rng = rng_for(self.seed, "multi", sample_id, attempt)
            ctx = make_context(self.world, rng)
            chain = self.sampler.sample(sub, rng, want_parallel)
            traj = await self._run(chain, [chain.stages()], ctx, sample_id, rng)
            calls = traj.calls()
            if traj.failure or len(calls) < 2:
                continue
            parallel = any(len(g) > 1 for g in traj.turns[0])
            user = self._query(chain, ctx, chain_parts(chain), rng)
            accepted = self.accept_single_turn(sample_id, "multi_tool", chain, ctx, traj, user, attempt)
            if parallel == want_parallel:
                return accepted
            fallback = fallback or accepted
        if fallback is not None:
            return fallback
        raise RuntimeError(f"{sample_id}: no valid multi-tool sample for {sub} in {MAX_ATTEMPTS} attempts")

    def _query(
        self, chain: Chain, ctx: SampleContext, parts: list[tuple[str, bool]], rng: random.Random
    ) -> tuple[str, str]:
        """The (Chinese, English) user message for ``parts``, ending with the user id."""
        zh, en = write_query(chain, ctx, parts, rng, self.query_writer)
        return with_user_id(zh, ctx, "zh"), with_user_id(en, ctx, "en")

    def accept_single_turn(
        self,
        sample_id: str,
        stype: str,
        chain: Chain,
        ctx: SampleContext,
        traj: Trajectory,
        user: tuple[str, str],
        attempt: int,
    ) -> Accepted:
        """The accepted sample of a one-turn trajectory asked by ``user`` (Chinese, English)."""
        turn = tool_turn(user[0], user[1], traj.turns[0])
        return Accepted(self.record(sample_id, stype, chain, [turn], ctx, attempt), bake_list(traj))

    # ------------------------------------------------------------------ multi-turn
    async def dialogue(self, sub: str, sample_id: str) -> Accepted:
        """A role-played multi-turn dialogue: persona, goal, 2-8 user turns, ending with ###STOP###."""
        for attempt in range(MAX_ATTEMPTS):
            rng = rng_for(self.seed, "dialogue", sample_id, attempt)
            ctx = make_context(self.world, rng)
            ctx.persona = make_persona(rng, sub, self.taxonomy, self.sampler.scenario_of[sub])
            chain = self.sampler.sample(sub, rng, want_parallel=rng.random() < 0.15, max_steps=5)
            stages = chain.stages()
            plan = _dialogue_plan(stages, rng)
            if plan is None:
                continue
            traj = await self._run(chain, [p["stages"] for p in plan], ctx, sample_id, rng)
            if traj.failure:
                continue
            turns = self._dialogue_turns(plan, chain, ctx, traj, rng)
            record = self.record(sample_id, "multi_turn", chain, turns, ctx, attempt)
            persona = ctx.persona
            record["persona"] = persona.to_json()
            record["task_info"] = {
                "user_id": ctx.user_id,
                "instruction": f"你是住在{persona.city}的{persona.name}。你想要{persona.goal}。",
                "outputs": [],
            }
            return Accepted(record, bake_list(traj))
        raise RuntimeError(f"{sample_id}: no valid dialogue for {sub} in {MAX_ATTEMPTS} attempts")

    def _dialogue_turns(
        self,
        plan: list[dict[str, Any]],
        chain: Chain,
        ctx: SampleContext,
        traj: Trajectory,
        rng: random.Random,
    ) -> list[dict[str, Any]]:
        persona = ctx.persona
        assert persona is not None
        turns: list[dict[str, Any]] = []
        said_user_id = False
        for index, (item, groups) in enumerate(zip(plan, traj.turns, strict=True)):
            kind = item["kind"]
            if kind == "opener":
                zh = f"你好！我是{persona.name}，今年{persona.age}岁，住在{persona.city}。我想{persona.goal}，能帮我看看吗？"
                en = f"Hi! I'm {persona.name}, {persona.age}, living in {persona.city}. I'd like help: {persona.goal_en}."
                turns.append(_turn(zh, en, [], _CLARIFY[rng.randrange(len(_CLARIFY))]))
                continue
            if kind == "chat":
                q = rng.randrange(len(_CHAT))
                turns.append(_turn(_CHAT[q][0], _CHAT[q][1], [], _CHAT_REPLY[q]))
                continue
            if kind == "stop":
                turns.append(_turn(STOP, STOP, [], ""))
                continue
            steps = sorted({i for stage in item["stages"] for i in stage})
            parts = [(chain.steps[i].tool, bool(chain.steps[i].sources) and index > 0) for i in steps]
            parts = _dedupe(parts)
            connectors = [rng.randrange(4) for _ in parts[1:]]
            zh = compose(parts, ctx, "zh", connectors)
            en = compose(parts, ctx, "en", connectors)
            needs_id = any(chain.steps[i].tool in ACCOUNT_TOOLS for i in steps)
            if needs_id and not said_user_id:
                zh += f"我的用户id是{ctx.user_id}。"
                en += f" My user id is {ctx.user_id}."
                said_user_id = True
            turns.append(tool_turn(zh, en, groups))
        return turns

    # ------------------------------------------------------------------ shared
    async def _run(
        self,
        chain: Chain,
        turn_stages: list[list[list[int]]],
        ctx: SampleContext,
        sample_id: str,
        rng: random.Random,
    ) -> Trajectory:
        return await execute(
            chain, turn_stages, ctx, self.executor, sample_id, self.inventory, self.world, rng
        )

    def record(
        self,
        sample_id: str,
        stype: str,
        chain: Chain,
        turns: list[dict[str, Any]],
        ctx: SampleContext,
        attempt: int,
    ) -> dict[str, Any]:
        """A sample's reference record in the shipped format (with chain, user id and attempt)."""
        total = sum(len(g) for t in turns for g in t["calls"])
        return {
            "id": sample_id,
            "type": stype,
            "scenario": chain.scenario,
            "sub_scenario": chain.sub_scenario,
            "inventory": self.inventory.name,
            "difficulty": difficulty_from_count(total),
            "turns": turns,
            "chain": chain.to_json(),
            "user_id": ctx.user_id,
            "attempt": attempt,
        }


_CLARIFY = (
    "很高兴为您服务！为了给出更准确的建议，能否说说您具体想了解哪方面、关注哪些产品？",
    "没问题。请问您目前的投资期限和风险偏好大概是怎样的？具体想先看哪部分信息？",
    "好的。您可以告诉我具体的产品名称或代码，以及您最关心的问题，我来帮您查询。",
)
_CHAT = (
    (
        "这些数据具体说明了什么？我不太懂，能通俗解释一下吗？",
        "What do these numbers mean? Could you explain simply?",
    ),
    ("明白了，那以我的情况来看需要注意哪些风险？", "I see. Given my situation, which risks should I watch?"),
    ("谢谢！那我大概多久回顾一次比较合适？", "Thanks! How often should I review this?"),
)
_CHAT_REPLY = (
    "简单来说，这些指标反映了产品过去的收益和波动：收益越高不代表风险越低，需要结合回撤和持有期一起看。",
    "主要关注三点：市场波动带来的短期回撤、资金使用期限与产品期限是否匹配、以及集中持有单一资产的风险。",
    "一般建议每季度回顾一次，遇到大的市场变化或个人情况变化时再额外检查。",
)


def _turn(user: str, user_en: str, calls: list[list[dict[str, Any]]], assistant: str) -> dict[str, Any]:
    return {"user": user, "user_en": user_en, "calls": calls, "assistant": assistant}


def tool_turn(user: str, user_en: str, groups: list[list[Any]]) -> dict[str, Any]:
    """A turn whose executed call groups answer ``user``; the reply is a template summary of the outputs."""
    reply = summarize([(c.tool, c.result) for g in groups for c in g])
    return _turn(user, user_en, groups_json(groups), reply)


def groups_json(groups: list[list[Any]]) -> list[list[dict[str, Any]]]:
    """Executed call groups as reference calls (tool, arguments, chain step)."""
    return [[{"tool": c.tool, "arguments": c.arguments, "step": c.step} for c in g] for g in groups]


def bake_list(traj: Trajectory) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(tool, arguments, result) of every call of a trajectory, to bake as recordings."""
    return [(c.tool, c.arguments, c.result) for c in traj.calls()]


def chain_parts(chain: Chain) -> list[tuple[str, bool]]:
    """The query parts of a chain: each tool once, and whether it follows an earlier step."""
    return _dedupe([(s.tool, bool(s.sources)) for s in chain.steps])


def write_query(
    chain: Chain, ctx: SampleContext, parts: list[tuple[str, bool]], rng: random.Random, writer: Any = None
) -> tuple[str, str]:
    """A (Chinese, English) query for ``parts``: from the templates, or from ``writer`` (e.g. an LLM)."""
    connectors = [rng.randrange(4) for _ in parts[1:]]
    if writer is not None:
        return writer.write(chain, ctx, parts)
    return compose(parts, ctx, "zh", connectors), compose(parts, ctx, "en", connectors)


def _dedupe(parts: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
    seen: set[str] = set()
    out = []
    for tool, follow in parts:
        if tool not in seen:
            seen.add(tool)
            out.append((tool, follow))
    return out


def _dialogue_plan(stages: list[list[int]], rng: random.Random) -> list[dict[str, Any]] | None:
    """Turn kinds in order (opener, tool turns holding 1-2 stages, chat turns, stop), 2-8 user turns."""
    plan: list[dict[str, Any]] = []
    if rng.random() < 0.5:
        plan.append({"kind": "opener", "stages": []})
    rest = list(stages)
    while rest:
        take = 1 if len(rest) == 1 or rng.random() < 0.6 else 2
        plan.append({"kind": "tools", "stages": rest[:take]})
        rest = rest[take:]
        if rng.random() < 0.25:
            plan.append({"kind": "chat", "stages": []})
    plan.append({"kind": "stop", "stages": []})
    if not 2 <= len(plan) <= 8:
        return None
    return plan


def make_persona(rng: random.Random, sub: str, taxonomy: Taxonomy, scenario: str) -> Persona:
    """A persona (name from the world's name tables, age, income, risk tolerance) with a goal for ``sub``."""
    from finmcp.server.world.names import name_for_seed

    name_seed = rng.randrange(1 << 30)
    info = taxonomy.scenarios[scenario].sub_scenarios[sub]
    risk_zh, risk_en = RISK_LEVELS[rng.randrange(len(RISK_LEVELS))]
    persona = Persona(
        name=name_for_seed(name_seed, "en_US"),
        city=rng.choice(CITIES),
        age=rng.randint(24, 62),
        annual_income=10000 * rng.randint(8, 80),
        risk_tolerance=risk_zh,
        goal=f"咨询{info.zh}（{rng.choice(info.topics) if info.topics else info.zh}）相关的问题，风险偏好{risk_zh}",
        family_size=rng.randint(1, 4),
        goal_en=f"questions about {info.en.lower()}, risk tolerance {risk_en}",
    )
    return persona
