"""Simulated tool outputs: coherent answers from the seeded world when nothing is recorded."""

from finmcp.server.sim.simulator import Simulator, ToolInputError

__all__ = ["Simulator", "ToolInputError"]
