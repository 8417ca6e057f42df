"""Agents the harness can drive: ``oracle``, ``noisy`` and ``openai`` (see docs/harness.md)."""

from __future__ import annotations

from finmcp.evaluator.agents.base import Agent, ToolCall, ToolOutcome, TurnContext, TurnResult
from finmcp.evaluator.agents.noisy import NoiseRates, NoisyAgent
from finmcp.evaluator.agents.oracle import OracleAgent

AGENTS = ("oracle", "noisy", "openai")

__all__ = [
    "AGENTS",
    "Agent",
    "NoiseRates",
    "NoisyAgent",
    "OracleAgent",
    "ToolCall",
    "ToolOutcome",
    "TurnContext",
    "TurnResult",
]
