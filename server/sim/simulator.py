"""The Simulator: one tool call in, one MCP result dict out, deterministic by seed."""

from __future__ import annotations

import gc
import importlib
from typing import Any

from finmcp.recordings.canonical import canonical_arguments
from finmcp.server.sim.pretty_json import dumps_indent2
from finmcp.server.sim.registry import QIEMAN_BUILDERS, BuildContext, ToolInputError
from finmcp.server.world import World, queries
from finmcp.tool_specs.inventory import Inventory

_BUILDER_MODULES = (
    "finmcp.server.sim.qieman.fund_search",
    "finmcp.server.sim.qieman.fund_detail",
    "finmcp.server.sim.qieman.fund_history",
    "finmcp.server.sim.qieman.fund_reports",
    "finmcp.server.sim.qieman.fund_rules",
    "finmcp.server.sim.qieman.fund_diagnosis",
    "finmcp.server.sim.qieman.fund_attribution",
    "finmcp.server.sim.qieman.fund_allocation",
    "finmcp.server.sim.qieman.fund_bonds",
    "finmcp.server.sim.qieman.fund_screens",
    "finmcp.server.sim.qieman.portfolio",
    "finmcp.server.sim.qieman.strategies",
    "finmcp.server.sim.qieman.accounts",
    "finmcp.server.sim.qieman.planning",
    "finmcp.server.sim.qieman.content",
    "finmcp.server.sim.qieman.common",
)


def _load_builders() -> None:
    for module in _BUILDER_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:  # a family not written yet
            if exc.name != module:
                raise


def render_text(value: Any) -> str:
    """The text the real server prints: pretty JSON, 2-space indent, non-ASCII kept.

    Exactly ``json.dumps(value, ensure_ascii=False, indent=2)``, written by :func:`dumps_indent2`.
    """
    return dumps_indent2(value)


def tool_result(spec: Any, value: Any) -> dict[str, Any]:
    """The MCP result of a tool's simulated ``value``: its text, and its structured content where the
    tool declares an output schema (wrapped in ``{"result": ...}`` when the spec says so)."""
    structured: Any = {"result": value} if spec.meta.get("output_wrapped") else value
    if not isinstance(structured, dict) or spec.output_schema is None:
        structured = None
    return {
        "content": [{"type": "text", "text": render_text(value)}],
        "structuredContent": structured,
        "isError": False,
    }


def error_result(message: str) -> dict[str, Any]:
    """An MCP ``isError`` result carrying ``message``."""
    return {"content": [{"type": "text", "text": message}], "structuredContent": None, "isError": True}


class Simulator:
    """Answers any tool of an inventory from a seeded :class:`World`.

    Qieman tools have hand-written builders (``server/sim/qieman``); every other tool is answered by
    the schema-driven builder from its output schema and ``meta`` hints (``server/sim/schema_driven``).
    """

    def __init__(self, inventory: Inventory, seed: int = 0, world: World | None = None) -> None:
        self.inventory = inventory
        self.seed = seed
        self.world = world or World(seed=seed)
        _load_builders()

    def warm(self) -> None:
        """Build the shared indexes that searches scan (start-up work, not per-call work).

        Strategy search scans every strategy's name; fund search sorted by return reads every fund's
        recent return; fund performance ranks among a fixed peer sample; holdings, diagnoses and quotes
        read the stock and bond universes and the index histories (``World.warm_shared``); strategy
        details and compositions read each strategy's NAV figures and its funds' latest NAVs, kept
        small per strategy and fund (``warm_strategies``: +3-5 s of CPU on 2 loaded cores, +1.2 MiB,
        so that no strategy call spends 25-50 ms drawing its funds' histories); the bond screens read
        every bond fund's asset ratios and bond-type mix (``warm_bond_screens``). Entities a call
        names directly (one fund's NAV, one user) stay lazy. A server follows it with
        :func:`freeze_heap`.
        """
        from finmcp.server.sim.qieman.fund_screens import BOND_SCREENS, warm_bond_screens
        from finmcp.server.sim.schema_driven import compile_plans

        # every schema-driven tool's compiled plan (thousands of closures): built now, frozen below
        compile_plans(s for s in self.inventory if not (s.source == "qieman" and s.name in QIEMAN_BUILDERS))
        for code in self.world.strategy_codes():
            self.world.strategy(code)
        self.world.warm_shared()
        queries.warm(self.world)
        if "GetBatchFundPerformance" in self.inventory:  # ranks every fund among a fixed peer sample
            from finmcp.server.sim.qieman.fund_history import PEER_WINDOWS, peer_codes

            for fund_type in self.world.fund_types():
                for code in peer_codes(self.world, fund_type):
                    for months in PEER_WINDOWS:
                        self.world.quick_return(code, months)
        if "BatchGetFundNavHistory" in self.inventory:
            from finmcp.server.sim.qieman.common import cn_trading_dates

            cn_trading_dates()
        figures, compositions = (
            "GetStrategyDetails" in self.inventory,
            "BatchGetStrategiesComposition" in self.inventory,
        )
        if figures or compositions:  # a strategy's figures and its funds' NAVs take 10-30 ms to build
            from finmcp.server.sim.qieman.strategies import warm_strategies

            warm_strategies(self.world, figures, compositions)
        if any(tool in self.inventory for tool in BOND_SCREENS):
            warm_bond_screens(self.world)
        if "SearchFunds" in self.inventory:
            for column in ("近一年收益", "七日年化收益率"):
                self.simulate("SearchFunds", {"sortColumn": column, "size": 1})

    def value(self, tool: str, arguments: dict[str, Any]) -> Any:
        """The JSON value the tool answers with; raises KeyError (unknown tool) or ToolInputError."""
        spec = self.inventory.get(tool)
        if spec is None:
            raise KeyError(f"unknown tool {tool!r}")
        args = canonical_arguments(arguments or {}, spec.input_schema)
        context = BuildContext(self.world, spec, self.seed)
        builder = QIEMAN_BUILDERS.get(tool) if spec.source == "qieman" else None
        if builder is None:
            from finmcp.server.sim.schema_driven import build_from_schema

            return build_from_schema(context, args)
        return builder(context, args)

    def simulate(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """An MCP result dict ``{content, structuredContent, isError}`` for one call."""
        spec = self.inventory.get(tool)
        if spec is None:
            raise KeyError(f"unknown tool {tool!r}")
        try:
            value = self.value(tool, arguments)
        except ToolInputError as exc:
            return error_result(str(exc))
        return tool_result(spec, value)


def freeze_heap() -> None:
    """Free the start-up garbage, then freeze everything alive out of the cyclic collector's way.

    After warming, a process holds 60-140k long-lived objects (the imports, the world's tables, the
    indexes, the compiled answer plans); each full collection would traverse all of them, 60-110 ms on
    a 2-core machine, landing on whichever call happens to trigger it (issue 19). ``gc.freeze`` is
    process-wide, so the process that serves calls (``finmcp-server``, the bench) calls this once
    after its warm-up; a library user of :class:`Simulator` decides for its own process.
    """
    gc.collect()
    gc.freeze()
