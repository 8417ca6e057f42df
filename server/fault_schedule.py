"""``finmcp-server --fault-schedule FILE``: scheduled faults served by the tool service.

The schedule (:mod:`recordings.fault_schedule`) is checked against the served inventories' tools at
start-up. A call's place comes from its ``params._meta`` (``io.finmcp/sample``, ``io.finmcp/turn``,
``io.finmcp/trial``, ``io.finmcp/run`` and ``io.finmcp/position``, which ``finmcp-eval run`` sends when
its run has a schedule); what the request does not say is counted in arrival order (docs/server.md).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping
from pathlib import Path
from typing import Any

from mcp.shared.exceptions import MCPError

from finmcp.recordings.fault_answers import NEEDS_ANSWER, altered_result, replacing_result, rpc_error
from finmcp.recordings.fault_schedule import Fault, ScheduleError, ScheduleInjector, load_schedule


def load_injector(path: str | Path, tools: Collection[str]) -> ScheduleInjector:
    """The injector of the schedule file ``path`` (tool globs checked against ``tools``)."""
    return ScheduleInjector(load_schedule(path, tools))


def scheduled_fault(
    injector: ScheduleInjector, meta: Mapping[str, Any] | None, tool: str, args_key: str
) -> Fault | None:
    """This call's scheduled fault, or None."""
    return injector.decide(injector.place(meta), tool, args_key)


async def replacing_answer(
    fault: Fault, tool: str, wait: Callable[[float], Awaitable[None]]
) -> dict[str, Any] | None:
    """The answer of a fault that replaces the normal one (raises :class:`MCPError` for ``rpc_error``;
    waits ``timeout_ms`` for ``timeout``); None for kinds that alter the normal answer instead."""
    if fault.kind in NEEDS_ANSWER:
        return None
    if fault.kind == "rpc_error":
        error = rpc_error(fault, tool)
        raise MCPError(error["code"], error["message"], error["data"])
    if fault.kind == "timeout" and fault.timeout_ms > 0:
        await wait(fault.timeout_ms)
    return replacing_result(fault, tool)


def altered_answer(fault: Fault, normal: dict[str, Any], seed: int) -> dict[str, Any]:
    """The normal answer changed as ``fault`` says (truncated, empty, wrong values)."""
    return altered_result(fault, normal, seed)


__all__ = ["ScheduleError", "altered_answer", "load_injector", "replacing_answer", "scheduled_fault"]
