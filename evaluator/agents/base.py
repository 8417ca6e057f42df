"""What every agent gets for one turn and what it must do: call tools through the session, return a reply.

The harness builds a :class:`TurnContext` per (sample, trial, turn). An agent calls tools only through
``ctx.session.call_group`` (one call = one assistant step; its calls run concurrently and share a
group tag), so every call reaches the server through the logging proxy.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Protocol

from finmcp.evaluator.inputs.model import Reference
from finmcp.recordings.plumbing.seeding import rng_for
from finmcp.recordings.transcripts import observation


@dataclass(slots=True)
class ToolCall:
    """One call an agent wants to make."""

    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw_arguments: str | None = None
    """The model's argument text when it was not a JSON object: sent as-is instead of ``arguments``,
    so the trace keeps what the model wrote (the server answers with an error)."""


@dataclass(slots=True)
class ToolOutcome:
    """What one call returned: the MCP result dict, or the error that replaced it."""

    call: ToolCall
    result: dict[str, Any] | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True for a result without ``isError``."""
        return self.result is not None and not self.result.get("isError")

    def text(self, style: str = "finmcp") -> str:
        """The observation an LLM sees, in the convention of the benchmark being played (``style``:
        ``finmcp`` or ``fintoolbench``; :func:`recordings.transcripts.observation`)."""
        return observation(self.result, self.error, style=style)


class ToolSession(Protocol):
    """Tool access of one (sample, trial, turn); implemented by the harness."""

    calls_made: int

    async def call_group(self, calls: list[ToolCall]) -> list[ToolOutcome]:
        """Issue the calls of one assistant step concurrently; outcomes in call order."""
        ...


@dataclass
class TurnContext:
    """Everything an agent may use for one turn."""

    sample: Reference
    turn: int
    trial: int
    tools: list[dict[str, Any]]
    """The MCP ``tools/list`` entries (``name``, ``description``, ``inputSchema``, ``_meta``)."""
    messages: list[dict[str, Any]]
    """OpenAI-style gold prefix: turns 0..turn-1 with gold calls, outputs and replies, then this user turn."""
    session: ToolSession
    run: str = ""
    """The run id (an outside agent's task names it)."""


@dataclass
class TurnResult:
    """An agent's reply for one turn (its calls are in the trace, not here)."""

    answer: str = ""
    steps: int = 0
    stopped: str = "done"
    """'done' (no more tool calls), 'max_calls' or 'max_steps'."""
    events: list[dict[str, Any]] = field(default_factory=list)
    """What the agent noticed about the model (``kind``: ``stop``, ``malformed_arguments``,
    ``wrong_argument_types``, ``unknown_tool``, ``repeated_call``, ``text_tool_call``; see
    :mod:`evaluator.agents.checks`); the harness keeps them per sample in the run state."""


class Agent(Protocol):
    """A built-in or LLM agent."""

    name: str

    async def run_turn(self, ctx: TurnContext) -> TurnResult:
        """Play one turn: make calls through ``ctx.session``, return the reply."""
        ...

    async def aclose(self) -> None:
        """Release resources (HTTP clients)."""
        ...


def seeded_rng(seed: int, *parts: object) -> random.Random:
    """A random stream that depends only on the seed and the parts (sample, trial, turn)."""
    return rng_for(seed, *parts)
