"""The ``oracle`` agent: replays the reference calls group by group (a check of the whole pipeline)."""

from __future__ import annotations

from finmcp.evaluator.agents.arguments import QuestionEntities, tool_arguments
from finmcp.evaluator.agents.base import ToolCall, TurnContext, TurnResult


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

    async def run_turn(self, ctx: TurnContext) -> TurnResult:
        """Replay ``ctx.sample.turns[ctx.turn].calls`` (with built arguments where the reference has none)."""
        turn = ctx.sample.turns[ctx.turn]
        groups = gold_groups(ctx)
        for group in groups:
            await ctx.session.call_group(group)
        return TurnResult(answer=turn.assistant, steps=len(groups))

    async def aclose(self) -> None:
        """Nothing to release."""
