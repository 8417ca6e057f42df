"""``finmcp-proxy --fault-schedule FILE``: scheduled faults injected by the proxy, in front of any server.

The schedule, its draw and the faulted answers are :mod:`recordings.fault_schedule` and
:mod:`recordings.fault_answers` (the same as ``finmcp-server --fault-schedule``). This module is the
proxy's transport-free part: which ``tools/call`` a schedule faults (its place from the request's
``params._meta``, else the proxy's URL/header tags, positions counted per (run, sample, trial, turn)),
the JSON-RPC body a *replacing* fault answers with (``rpc_error``, ``is_error``, ``timeout``,
``rate_limit``: the upstream never sees the call), the upstream answer an *altering* fault changes
(``truncated``, ``empty``, ``wrong_values``: the call is forwarded), the trace's note row keeping the
upstream's original answer, and the check of the schedule's tool globs against the upstream's first
``tools/list``. The HTTP side (:mod:`proxy.http_faults`) and the stdio side (:mod:`proxy.stdio_faults`)
use it; without a schedule neither is in the proxy's path.
"""

from __future__ import annotations

import fnmatch
import json
import logging
from collections import Counter
from pathlib import Path
from typing import Any

from finmcp.proxy.jsonrpc import PROTOCOL_VERSION_META, Message, parse_body
from finmcp.proxy.tags import Tags
from finmcp.recordings.fault_answers import NEEDS_ANSWER, altered_result, replacing_result, rpc_error
from finmcp.recordings.fault_schedule import (
    Fault,
    FaultSchedule,
    ScheduleError,
    ScheduleInjector,
    load_schedule,
)
from finmcp.recordings.plumbing.protocol import is_stateless
from finmcp.recordings.results import utf8

log = logging.getLogger("finmcp.proxy.faults")

ORIGINAL_METHOD = "finmcp/fault_original"
"""The ``method`` of the note row that keeps the upstream's answer an altering fault changed."""
TOOLS_METHOD = "finmcp/fault_schedule_tools"
"""The ``method`` of the note row naming schedule tool globs the upstream's ``tools/list`` lacks."""
_ALTERED = frozenset({"content", "structuredContent", "isError", "_meta"})
"""Result members an altering fault rewrites (the others are kept as the upstream sent them)."""


def tools_call(messages: list[Message]) -> Message | None:
    """The one ``tools/call`` request of a body, or None (anything else, batches included, passes)."""
    if len(messages) != 1:
        return None
    msg = messages[0]
    return msg if msg.kind == "request" and msg.method == "tools/call" and msg.id is not None else None


def _compact(obj: Any) -> bytes:
    return utf8(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))


class ProxyFaults:
    """One proxy's fault schedule: decides each call's fault, builds faulted answers, counts them."""

    def __init__(self, schedule: FaultSchedule, injector: ScheduleInjector | None = None) -> None:
        self.schedule = schedule
        self.injector = injector or ScheduleInjector(schedule)
        self.injected: Counter[str] = Counter()
        self.unknown: list[str] | None = None
        """The rules' tool globs that named no tool of the upstream's first complete ``tools/list``
        (None until that listing is seen)."""
        self._listed: set[str] = set()

    @classmethod
    def load(cls, path: str | Path) -> ProxyFaults:
        """The schedule file ``path`` (raises :class:`ScheduleError` naming the field)."""
        return cls(load_schedule(path))

    # ---------------------------------------------------------------- deciding

    def decide(self, call: Message, tags: Tags) -> Fault | None:
        """The scheduled fault of this ``tools/call`` (its place from ``_meta``, else ``tags``), or None.

        Every call is placed (counted) once; "the same call" of a retry is the same tool and the same
        arguments as canonical JSON (sorted keys).
        """
        params = call.params
        tool = params.get("name")
        if not isinstance(tool, str):
            return None
        arguments = params.get("arguments")
        args_key = json.dumps(
            {} if arguments is None else arguments, sort_keys=True, ensure_ascii=False, separators=(",", ":")
        )
        where = {"run": tags.run, "sample": tags.sample, "trial": tags.trial, "turn": tags.turn}
        place = self.injector.place(call.meta, {k: v for k, v in where.items() if v is not None})
        fault = self.injector.decide(place, tool, args_key)
        if fault is not None:
            self.injected[fault.kind] += 1
        return fault

    @staticmethod
    def replaces(fault: Fault) -> bool:
        """True for kinds the proxy answers itself (the call is not forwarded)."""
        return fault.kind not in NEEDS_ANSWER

    # ---------------------------------------------------------------- answers

    def replacing_body(self, fault: Fault, call: Message, version: str | None = None) -> bytes:
        """The JSON-RPC answer (one line) of a replacing fault to ``call``; ``version``: the session's
        protocol version (a stateless-era result carries ``resultType``, as the server's do)."""
        tool = str(call.params.get("name"))
        if fault.kind == "rpc_error":
            return _compact({"jsonrpc": "2.0", "id": call.id, "error": rpc_error(fault, tool)})
        result = replacing_result(fault, tool)
        if is_stateless(call.meta.get(PROTOCOL_VERSION_META, version)):
            result["resultType"] = "complete"
        return _compact({"jsonrpc": "2.0", "id": call.id, "result": result})

    def altered_body(self, fault: Fault, answer: Message) -> bytes | None:
        """The upstream's answer ``answer`` changed as the altering ``fault`` says, or None when it is
        not a result (a JSON-RPC error passes unchanged, as the server's own errors do)."""
        if answer.kind != "response" or not isinstance(answer.obj, dict):
            return None
        result = answer.obj.get("result")
        if not isinstance(result, dict):
            return None
        changed = altered_result(fault, result, self.schedule.seed)
        for key, value in result.items():  # resultType and any other member the fault does not change
            if key not in _ALTERED:
                changed[key] = value
        return _compact({**answer.obj, "result": changed})

    def original_note(self, fault: Fault, tool: str, answer: Message) -> Message:
        """The trace's note row keeping the upstream's answer before ``fault`` changed it.

        Body: ``{"finmcp_fault_original": {kind, rule, schedule, tool, id}, "response": ANSWER}``.
        """
        try:
            original: Any = json.loads(answer.raw)
        except (ValueError, UnicodeDecodeError):
            original = answer.raw.decode("utf-8", errors="backslashreplace")
        about = {
            "kind": fault.kind,
            "rule": fault.rule,
            "schedule": fault.schedule,
            "tool": tool,
            "id": answer.id,
        }
        body = _compact({"finmcp_fault_original": about, "response": original})
        return Message(body, None, "note", method=ORIGINAL_METHOD)  # the id is in the body: no answer row

    @staticmethod
    def single(raw: bytes) -> Message | None:
        """The one message of an upstream body (None for a batch)."""
        messages = parse_body(raw)
        return messages[0] if len(messages) == 1 else None

    # ---------------------------------------------------------------- the upstream's tools

    def check_tools(self, result: dict[str, Any]) -> Message | None:
        """Check the rules' tool globs against the upstream's first complete ``tools/list`` (pages
        followed by ``nextCursor`` are gathered); the note row naming the globs it lacks (and a
        warning), once per process, or None."""
        if self.unknown is not None:
            return None
        for tool in result.get("tools") or []:
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                self._listed.add(tool["name"])
        if result.get("nextCursor"):
            return None
        listed = self._listed
        self.unknown = [
            f"rules[{rule.index}].tools {rule.tools!r}"
            for rule in self.schedule.rules
            if not any(fnmatch.fnmatchcase(name, rule.tools) for name in listed)
        ]
        if not self.unknown:
            return None
        log.warning(
            "--fault-schedule: %s named no tool of the upstream's tools/list (%d tools): those rules never fire",
            "; ".join(self.unknown),
            len(listed),
        )
        body = _compact({"finmcp_fault_schedule": {"unknown_tools": self.unknown, "listed": len(listed)}})
        return Message(body, None, "note", method=TOOLS_METHOD)

    def health(self) -> dict[str, Any]:
        """``/healthz`` ``fault_schedule``: the schedule's digest, faults injected by kind, unknown globs."""
        return {
            "schedule": self.schedule.digest,
            "injected": dict(self.injected),
            "unknown_tools": self.unknown,
        }


__all__ = ["ORIGINAL_METHOD", "TOOLS_METHOD", "ProxyFaults", "ScheduleError", "tools_call"]
