"""The evidence behind one sample's numbers: reference and predicted calls with arguments, the outputs
the agent saw (cut to ``OUTPUT_LIMIT`` characters, with the full length kept), the first wrong group
the first failed call, and what the agent's model did (:mod:`evaluator.reports.behaviour`). Stored per sample in the report (``samples[i].evidence``) and drawn by the
HTML report."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from finmcp.evaluator.inputs.model import Call, Groups, Prediction, Reference
from finmcp.evaluator.metrics.extended import first_error_at
from finmcp.evaluator.reports.behaviour import agent_evidence

OUTPUT_LIMIT = 1000
"""Characters of a call's output kept in the report (``output_chars`` says how many there were)."""
OK_STATUSES = (None, "ok")


def output_text(output: Any) -> str:
    """A call's output as the agent saw it: the string itself, else compact JSON."""
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    return json.dumps(output, ensure_ascii=False, separators=(",", ":"), default=str)


def _call(call: Call, outcome: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"tool": call.tool, "arguments": call.arguments}
    if call.malformed:
        out["malformed"] = True
    if outcome:
        text = output_text(call.output)
        out["status"] = call.status
        out["output"] = text[:OUTPUT_LIMIT] if call.output is not None else None
        out["output_chars"] = len(text)
    return out


def _view(turns: Sequence[Groups], outcome: bool) -> list[list[list[dict[str, Any]]]]:
    return [[[_call(c, outcome) for c in group] for group in groups] for groups in turns]


def _names(calls: Sequence[Call]) -> str:
    return ", ".join(sorted(c.tool for c in calls))


def first_error(pred_turns: Sequence[Groups], gold_turns: Sequence[Groups]) -> dict[str, Any] | None:
    """Where and how the prediction first goes wrong (tool names per group, order free inside a group),
    at the place :func:`evaluator.metrics.extended.first_error_at` gives; None when nowhere."""
    found = first_error_at(pred_turns, gold_turns)
    if found is None:
        return None
    position, t, k = found
    pred = pred_turns[t] if t < len(pred_turns) else []
    gold = gold_turns[t] if t < len(gold_turns) else []
    where = {"position": position, "turn": t, "group": k + 1}
    if k == len(gold):  # groups beyond the reference's in this turn
        extra_groups = pred[len(gold) :]
        tools = sorted(c.tool for g in extra_groups for c in g)
        text = f"turn {t}: {len(extra_groups)} group(s) beyond the reference: {', '.join(tools)}"
        return {**where, "kind": "extra", "missing": [], "extra": tools, "text": text}
    group = gold[k]
    if k >= len(pred):
        return {
            **where,
            "kind": "missing",
            "missing": sorted(c.tool for c in group),
            "extra": [],
            "text": f"turn {t}, group {k + 1}: missing {_names(group)} (no call made here)",
        }
    want, got = Counter(c.tool for c in group), Counter(c.tool for c in pred[k])
    missing, extra = sorted((want - got).elements()), sorted((got - want).elements())
    parts = ([f"missing {', '.join(missing)}"] if missing else []) + (
        [f"unexpected {', '.join(extra)}"] if extra else []
    )
    kind = "wrong" if missing and extra else "missing" if missing else "extra"
    return {
        **where,
        "kind": kind,
        "missing": missing,
        "extra": extra,
        "text": f"turn {t}, group {k + 1}: {'; '.join(parts)}",
    }


def failed_call(pred_turns: Sequence[Groups]) -> dict[str, Any] | None:
    """The first predicted call whose status is not ok (tool error, RPC error, transport error ...)."""
    for t, groups in enumerate(pred_turns):
        for k, group in enumerate(groups):
            for call in group:
                if call.status not in OK_STATUSES:
                    text = output_text(call.output)
                    return {
                        "turn": t,
                        "group": k + 1,
                        "tool": call.tool,
                        "status": call.status,
                        "output": text[:OUTPUT_LIMIT],
                        "output_chars": len(text),
                    }
    return None


def sample_evidence(ref: Reference, pred: Prediction | None) -> dict[str, Any]:
    """Everything the report shows about one sample beyond its numbers."""
    gold = [t.calls for t in ref.turns]
    turns = pred.turns if pred is not None else []
    return {
        "ref": _view(gold, outcome=False),
        "pred": _view(turns, outcome=True),
        "first_error": first_error(turns, gold),
        "failed_call": failed_call(turns),
        "harness_error": str(pred.error) if pred is not None and pred.error else None,
        "agent": agent_evidence(pred),
    }
