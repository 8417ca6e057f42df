"""The ``oracle`` agent: replays the reference calls group by group (a check of the whole pipeline)."""

from __future__ import annotations

from evaluator.agents.base import ToolCall, TurnContext, TurnResult


class OracleAgent:
    """Issues exactly the gold groups of the turn, each group's calls concurrently, and the gold reply."""

    name = "oracle"

    async def run_turn(self, ctx: TurnContext) -> TurnResult:
        """Replay ``ctx.sample.turns[ctx.turn].calls``."""
        turn = ctx.sample.turns[ctx.turn]
        for group in turn.calls:
            await ctx.session.call_group([ToolCall(c.tool, dict(c.arguments)) for c in group])
        return TurnResult(answer=turn.assistant, steps=len(turn.calls))

    async def aclose(self) -> None:
        """Nothing to release."""
