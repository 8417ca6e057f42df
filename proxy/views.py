"""Reading a run back: calls arranged as samples → trials → turns → groups (shared by show/export/audit)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from finmcp.recordings import transcripts


@dataclass
class SampleTrace:
    """The calls of one (sample, trial): ``turns[turn] = [group, ...]``, each group a list of call rows."""

    sample_id: str | None
    trial: int
    turns: dict[int, list[list[dict[str, Any]]]] = field(default_factory=dict)

    def ordered_turns(self) -> list[tuple[int, list[list[dict[str, Any]]]]]:
        return sorted(self.turns.items())

    def call_count(self) -> int:
        return sum(len(g) for groups in self.turns.values() for g in groups)


def arrange(calls: list[dict[str, Any]]) -> list[SampleTrace]:
    """Group call rows (from :meth:`recordings.trace_store.TraceStore.calls`) per sample and trial, turn, then ``call_group``.

    Within a turn, groups are ordered by ``call_group`` (a NULL group is a group of its own, placed by
    ``seq``), calls inside a group by ``seq``. A missing turn tag counts as turn 0.
    """
    by_key: dict[tuple[str | None, int], dict[int, list[dict[str, Any]]]] = {}
    for call in calls:
        key = (call["sample_id"], int(call.get("trial") or 0))
        by_key.setdefault(key, {}).setdefault(call["turn"] if call["turn"] is not None else 0, []).append(
            call
        )
    out = []
    for (sample_id, trial), turns in sorted(by_key.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        trace = SampleTrace(sample_id, trial)
        for turn, rows in turns.items():
            rows.sort(key=lambda c: (c["seq"] is None, c["seq"] or 0, c["id"]))
            groups: dict[Any, list[dict[str, Any]]] = {}
            order: list[tuple[float, Any]] = []
            for row in rows:
                gkey = row["call_group"] if row["call_group"] is not None else ("solo", row["id"])
                if gkey not in groups:
                    groups[gkey] = []
                    rank = row["call_group"] if row["call_group"] is not None else (row["seq"] or 0) - 0.5
                    order.append((rank, gkey))
                groups[gkey].append(row)
            trace.turns[turn] = [groups[k] for _, k in sorted(order, key=lambda item: item[0])]
        out.append(trace)
    return out


def result_text(call: dict[str, Any]) -> str:
    """For display: the result's text (:func:`recordings.transcripts.result_text`), else its content
    blocks as JSON, or the error's message."""
    result = call.get("result")
    if isinstance(result, dict):
        return transcripts.result_text(result) or json.dumps(result.get("content"), ensure_ascii=False)
    error = call.get("rpc_error")
    if isinstance(error, dict):
        return str(error.get("message"))
    return "" if error is None else str(error)


def is_failure(call: dict[str, Any]) -> bool:
    """True when the call did not produce a normal result (tool error, RPC/transport error, cancelled)."""
    return call.get("status") != "ok"
