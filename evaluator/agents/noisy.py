"""The ``noisy`` agent: the reference calls with seeded perturbations at given rates.

Every decision draws from a stream seeded by (seed, sample, trial, turn), and every draw is made
whether or not it is used, so a higher rate perturbs a superset of what a lower rate perturbs
(common random numbers): metrics move monotonically with the rates, sample by sample.

Perturbations (rates are probabilities per call, group or adjacent pair):

| key | what | moves |
|---|---|---|
| ``drop`` | a gold call is not made | TR, EMR |
| ``wrong`` | a gold call goes to another tool (same arguments) | TR, TP, EMR |
| ``over`` | a gold call is repeated as an extra step right after its group | TP, EMR, redundancy |
| ``split`` | a parallel gold group is issued as one step per call | EMR (not TR/TP) |
| ``merge`` | two consecutive gold groups are issued as one parallel step | EMR, dependency F1 |
| ``reorder`` | two consecutive steps swap places | EMR, consist, dependency F1 |
"""

from __future__ import annotations

import random
from dataclasses import dataclass, fields

from finmcp.evaluator.agents.base import ToolCall, TurnContext, TurnResult, seeded_rng
from finmcp.evaluator.agents.oracle import gold_groups
from finmcp.evaluator.errors import EvalInputError

NOISE_KEYS = ("drop", "wrong", "over", "split", "merge", "reorder")


@dataclass(frozen=True)
class NoiseRates:
    """Perturbation rates in [0, 1]."""

    drop: float = 0.0
    wrong: float = 0.0
    over: float = 0.0
    split: float = 0.0
    merge: float = 0.0
    reorder: float = 0.0

    @classmethod
    def parse(cls, text: str) -> NoiseRates:
        """``"0.1"`` (every rate) or ``"drop=0.1,over=0.2"`` (others 0); errors name the bad part."""
        text = text.strip()
        try:
            if "=" not in text:
                rate = float(text)
                return cls._checked({k: rate for k in NOISE_KEYS}, text)
            values: dict[str, float] = {}
            for part in text.split(","):
                if not part.strip():
                    continue
                key, sep, value = part.partition("=")
                key = key.strip()
                if not sep or key not in NOISE_KEYS:
                    raise EvalInputError(
                        f"--noise {text!r}: bad part {part.strip()!r}; use KEY=RATE with KEY in {', '.join(NOISE_KEYS)}"
                    )
                values[key] = float(value)
        except ValueError:
            raise EvalInputError(f"--noise {text!r}: rates must be numbers") from None
        return cls._checked(values, text)

    @classmethod
    def _checked(cls, values: dict[str, float], text: str) -> NoiseRates:
        for key, value in values.items():
            if not 0.0 <= value <= 1.0:
                raise EvalInputError(f"--noise {text!r}: {key}={value} is not in [0, 1]")
        return cls(**values)

    def describe(self) -> str:
        """``drop=0.1,wrong=0.1,...`` (non-zero rates only)."""
        parts = [f"{f.name}={getattr(self, f.name):g}" for f in fields(self) if getattr(self, f.name)]
        return ",".join(parts) or "none"


@dataclass
class _Block:
    """A step being built: its calls and the gold groups it came from."""

    calls: list[ToolCall]
    origin: frozenset[int]


def perturb(
    groups: list[list[ToolCall]], rates: NoiseRates, rng_source: random.Random, tool_names: list[str]
) -> list[list[ToolCall]]:
    """The perturbed steps for one turn's gold groups (``rng_source`` is a ``random.Random``)."""
    rng = rng_source
    n = len(groups)
    call_draws = [[(rng.random(), rng.random(), rng.random(), rng.random()) for _ in g] for g in groups]
    split_draws = [rng.random() for _ in groups]
    merge_draws = [rng.random() for _ in range(max(n - 1, 0))]
    reorder_draws = [rng.random() for _ in range(max(n - 1, 0))]

    order = list(range(n))
    for p in range(n - 1):  # reorder: adjacent gold groups swap places
        if reorder_draws[p] < rates.reorder:
            order[p], order[p + 1] = order[p + 1], order[p]
    merged: list[_Block] = []
    for p, i in enumerate(order):
        group = groups[i]
        if len(group) > 1 and split_draws[i] < rates.split:  # split: one step per call
            pieces = [_Block([c], frozenset({i})) for c in group]
        else:
            pieces = [_Block(list(group), frozenset({i}))]
        if merged and p > 0 and merge_draws[p - 1] < rates.merge:  # merge with the previous gold group
            first = pieces.pop(0)
            merged[-1] = _Block(merged[-1].calls + first.calls, merged[-1].origin | first.origin)
        merged.extend(pieces)

    draws_of = {id(c): call_draws[i][k] for i, g in enumerate(groups) for k, c in enumerate(g)}
    steps: list[list[ToolCall]] = []
    for block in merged:
        calls: list[ToolCall] = []
        extra: list[ToolCall] = []
        for call in block.calls:
            u_drop, u_wrong, u_pick, u_over = draws_of[id(call)]
            if u_over < rates.over:
                extra.append(ToolCall(call.tool, dict(call.arguments)))
            if u_drop < rates.drop:
                continue
            if u_wrong < rates.wrong:
                others = [t for t in tool_names if t != call.tool]
                if others:
                    calls.append(ToolCall(others[int(u_pick * len(others))], dict(call.arguments)))
                    continue
            calls.append(ToolCall(call.tool, dict(call.arguments)))
        if calls:
            steps.append(calls)
        if extra:
            steps.append(extra)
    return steps


class NoisyAgent:
    """The oracle with seeded perturbations (:func:`perturb`)."""

    def __init__(self, rates: NoiseRates, seed: int = 0, name: str = "noisy") -> None:
        self.rates = rates
        self.seed = seed
        self.name = name

    async def run_turn(self, ctx: TurnContext) -> TurnResult:
        """Issue the perturbed steps of this turn, each step's calls concurrently."""
        turn = ctx.sample.turns[ctx.turn]
        gold = gold_groups(ctx)
        rng = seeded_rng(self.seed, ctx.sample.id, ctx.trial, ctx.turn)
        names = sorted(t["name"] for t in ctx.tools if isinstance(t, dict) and t.get("name"))
        steps = perturb(gold, self.rates, rng, names)
        for step in steps:
            await ctx.session.call_group(step)
        return TurnResult(answer=turn.assistant, steps=len(steps))

    async def aclose(self) -> None:
        """Nothing to release."""
