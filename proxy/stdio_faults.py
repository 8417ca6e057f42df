"""The stdio side of ``--fault-schedule``: a :class:`~proxy.stdio_side.StdioPump` that may fault calls.

Used only when the proxy serves a schedule (``run_stdio`` picks the pump once). A stdin line that is
one ``tools/call`` request is placed and decided (:class:`proxy.fault_injection.ProxyFaults`): a
replacing fault is logged and answered by the proxy as if the upstream had answered (after
``timeout_ms`` for a timeout, without holding up the lines after it); the upstream never gets the
line. An altering fault forwards the line and changes the upstream's answer before it is logged and
written to stdout; the answer as received is kept in a ``finmcp/fault_original`` note row.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable
from typing import Any

from finmcp.proxy.capture import Tracer
from finmcp.proxy.fault_injection import ProxyFaults, tools_call
from finmcp.proxy.jsonrpc import Message, parse_body
from finmcp.proxy.stdio_side import StdioPump
from finmcp.proxy.tags import Tags
from finmcp.recordings.fault_schedule import Fault

log = logging.getLogger("finmcp.proxy.faults")


class FaultStdioPump(StdioPump):
    """A stdio pump whose ``tools/call`` lines the proxy's fault schedule may answer or alter."""

    def __init__(self, tracer: Tracer, tags: Tags, write_line: Any, faults: ProxyFaults) -> None:
        super().__init__(tracer, tags, write_line)
        self.faults = faults
        self.altering: dict[str, tuple[Fault, Message]] = {}  # id text -> its altering fault and call
        self._timers: set[asyncio.Task[None]] = set()

    async def from_client(self, raw: bytes) -> None:
        messages = parse_body(raw)
        call = tools_call(messages)
        fault = self.faults.decide(call, self.tags) if call is not None else None
        if fault is None or call is None:
            await super().from_client(raw)
            return
        id_text = call.id_text or "null"
        if not self.faults.replaces(fault):
            self.altering[id_text] = (fault, call)
            await super().from_client(raw)
            return
        self.tracer.client_message(self.session, self.tags, call, None, time.monotonic_ns())
        self.outstanding[id_text] = (call.id, "tools/call")
        answer = self.faults.replacing_body(fault, call, self.session.protocol_version)
        if fault.kind == "timeout" and fault.timeout_ms > 0:  # the lines after it go on meanwhile
            task = asyncio.ensure_future(self._later(fault.timeout_ms / 1000, id_text, answer))
            self._timers.add(task)
            task.add_done_callback(self._timers.discard)
            return
        await self.from_upstream(answer)

    async def _later(self, delay: float, id_text: str, answer: bytes) -> None:
        await asyncio.sleep(delay)
        if id_text in self.outstanding:  # not answered meanwhile (the proxy stopping answers every request)
            await self.from_upstream(answer)

    async def from_upstream(self, raw: bytes) -> None:
        if self.altering:
            raw = self._altered(raw)
        await super().from_upstream(raw)

    def _altered(self, raw: bytes) -> bytes:
        """``raw`` with an altered call's answer changed (its original kept in a note row)."""
        answer = ProxyFaults.single(raw)
        if answer is None or answer.kind not in ("response", "error"):
            return raw
        found = self.altering.pop(answer.id_text or "null", None)
        if found is None:
            return raw
        fault, call = found
        changed = self.faults.altered_body(fault, answer)
        if changed is None:
            log.info(
                "call %s: the upstream answered with an error; %s fault not applied",
                answer.id_text,
                fault.kind,
            )
            return raw
        pending = self.tracer.pending.get((self.session.key, answer.id_text or "null"))
        tags = pending.tags if pending is not None else self.tags
        tool = str(call.params.get("name"))
        self.tracer.log(self.session, tags, "s2c", self.faults.original_note(fault, tool, answer))
        return changed

    async def fail_all(self, reason: str) -> None:
        for task in list(self._timers):
            task.cancel()
        await super().fail_all(reason)


def fault_pump(faults: ProxyFaults) -> Callable[[Tracer, Tags, Any], FaultStdioPump]:
    """The pump builder ``run_stdio`` takes when the proxy serves ``faults``."""
    return functools.partial(FaultStdioPump, faults=faults)
