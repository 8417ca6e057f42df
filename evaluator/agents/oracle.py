"""The ``oracle`` agent: replays the reference calls group by group (a check of the whole pipeline).

With a retry policy (``retry=N``, ``finmcp-eval run --agent oracle --retry N``) it retries each call
that failed transiently (:func:`evaluator.agents.retry.failure`) up to N times, together as one group
after waiting the longest ``Retry-After`` they asked for; it never retries a permanent failure; and
when a call still fails it replies :func:`evaluator.agents.retry.give_up_text` instead of the gold reply.
Without it (the default) it neither retries nor gives up: its reply is the gold one whatever happened.
"""

from __future__ import annotations

import asyncio

from finmcp.evaluator.agents.arguments import QuestionEntities, tool_arguments
from finmcp.evaluator.agents.base import ToolCall, ToolOutcome, TurnContext, TurnResult
from finmcp.evaluator.agents.retry import failure, give_up_text, retry_after


def gold_groups(ctx: TurnContext) -> list[list[ToolCall]]:
    """The reference groups of this turn as calls.

    References without arguments (FinToolBench's ``select_tools``) get arguments the tool's input
    schema accepts, built from its ``tools/list`` entry and the question
    (:func:`evaluator.agents.arguments.tool_arguments`), so every call can succeed."""
    turn = ctx.sample.turns[ctx.turn]
    if ctx.sample.args_known:
        return [[ToolCall(c.tool, dict(c.arguments)) for c in group] for group in turn.calls]
    tools = {t.get("name"): t for t in ctx.tools if isinstance(t, dict)}
    entities = QuestionEntities.parse(turn.user)
    return [
        [ToolCall(c.tool, tool_arguments(tools.get(c.tool), entities)) for c in group] for group in turn.calls
    ]


class OracleAgent:
    """Issues exactly the gold groups of the turn, each group's calls concurrently, and the gold reply."""

    name = "oracle"

    def __init__(self, retry: int = 0) -> None:
        if retry < 0:
            raise ValueError("retry must be >= 0")
        self.retry = retry

    async def run_turn(self, ctx: TurnContext) -> TurnResult:
        """Replay ``ctx.sample.turns[ctx.turn].calls`` (with built arguments where the reference has none)."""
        turn = ctx.sample.turns[ctx.turn]
        groups = gold_groups(ctx)
        steps = 0
        failed: list[ToolOutcome] = []
        for group in groups:
            outcomes = await ctx.session.call_group(group)
            steps += 1
            if self.retry:
                still, retries = await self._retried(ctx, outcomes)
                steps += retries
                failed += still
        if failed:
            return TurnResult(answer=give_up_text(failed), steps=steps, stopped="gave_up")
        return TurnResult(answer=turn.assistant, steps=steps)

    async def _retried(self, ctx: TurnContext, outcomes: list[ToolOutcome]) -> tuple[list[ToolOutcome], int]:
        """Retry the group's transient failures (up to ``retry`` rounds); returns what still fails and
        how many retry steps were sent."""
        failing = [o for o in outcomes if failure(o) is not None]
        rounds = 0
        while rounds < self.retry:
            transient = [o for o in failing if failure(o) == "transient"]
            if not transient:
                break
            wait = max(retry_after(o) for o in transient)
            if wait > 0:
                await asyncio.sleep(wait)
            again = await ctx.session.call_group([o.call for o in transient])
            rounds += 1
            failing = [o for o in failing if failure(o) == "permanent"] + [
                o for o in again if failure(o) is not None
            ]
        return failing, rounds

    async def aclose(self) -> None:
        """Nothing to release."""
