"""What an agent's model did besides its calls: loops of identical calls, malformed arguments, stops at
a cap, replies that look like a tool call.

Per sample (``samples[i].evidence.agent``): the turns' stop reasons and the agent's events from the
run state (when the run was driven by ``finmcp-eval run``), and the longest run of identical calls
found in the trace itself (any agent). Per report (``agent_behaviour``): the counts.
"""

from __future__ import annotations

import json
from collections import Counter
from html import escape
from typing import Any

from finmcp.evaluator.inputs.model import LOOP_AT, Prediction

EVENT_KINDS = ("malformed_arguments", "wrong_argument_types", "unknown_tool", "text_tool_call")


def longest_repeat(pred: Prediction) -> dict[str, Any] | None:
    """The longest run of identical calls (tool and arguments) in one turn of the trace, when it is at
    least :data:`LOOP_AT` long: ``turn``, ``tool``, ``times``."""
    best: dict[str, Any] | None = None
    for t, groups in enumerate(pred.turns):
        last, streak = None, 0
        for call in (c for g in groups for c in g):
            key = (call.tool, call.malformed, json.dumps(call.arguments, sort_keys=True, default=str))
            streak = streak + 1 if key == last else 1
            last = key
            if streak >= LOOP_AT and (best is None or streak > best["times"]):
                best = {"turn": t, "tool": call.tool, "times": streak}
    return best


def agent_evidence(pred: Prediction | None) -> dict[str, Any] | None:
    """The ``agent`` part of a sample's evidence, or None when there is nothing to say."""
    if pred is None:
        return None
    out: dict[str, Any] = {}
    if pred.agent:
        out["stopped"] = list(pred.agent.get("stopped") or [])
        out["events"] = list(pred.agent.get("events") or [])
    repeat = longest_repeat(pred)
    if repeat is not None:
        out["repeat"] = repeat
    malformed = sum(1 for c in pred.calls() if c.malformed)
    if malformed:
        out["malformed_calls"] = malformed
    return out or None


def behaviour_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts over the report's sample rows: samples stopped at a cap (by reason), samples with a loop
    of identical calls, malformed calls (trace), and samples with each kind of agent event."""
    stopped: Counter[str] = Counter()
    events: Counter[str] = Counter()
    loops = malformed = known = 0
    for row in rows:
        agent = (row.get("evidence") or {}).get("agent") or {}
        if "stopped" in agent:
            known += 1
        for reason in set(agent.get("stopped") or []) - {"done"}:
            stopped[reason] += 1
        for kind in {e.get("kind") for e in agent.get("events") or []} & set(EVENT_KINDS):
            events[kind] += 1
        loops += 1 if agent.get("repeat") else 0
        malformed += int(agent.get("malformed_calls") or 0)
    return {
        "samples_with_agent_log": known,
        "stopped_at_cap": dict(sorted(stopped.items())),
        "loops": loops,
        "loop_at": LOOP_AT,
        "malformed_calls": malformed,
        **{f"samples_with_{kind}": events[kind] for kind in EVENT_KINDS},
    }


def noteworthy(summary: dict[str, Any]) -> bool:
    """True when the summary has anything to show."""
    return bool(
        summary.get("stopped_at_cap")
        or summary.get("loops")
        or summary.get("malformed_calls")
        or any(summary.get(f"samples_with_{kind}") for kind in EVENT_KINDS)
    )


def summary_items(summary: dict[str, Any]) -> list[tuple[str, int]]:
    """(label, count) lines of a summary, for Markdown and HTML."""
    items = [(f"samples stopped at {reason}", n) for reason, n in summary.get("stopped_at_cap", {}).items()]
    items += [
        (
            f"samples with a loop (>= {summary.get('loop_at', LOOP_AT)} identical calls in a row)",
            summary["loops"],
        ),
        ("calls with malformed arguments (not a JSON object)", summary["malformed_calls"]),
        ("samples with arguments that do not fit the schema", summary["samples_with_wrong_argument_types"]),
        ("samples calling a tool that was not offered", summary["samples_with_unknown_tool"]),
        ("samples whose reply looks like a tool call (no call made)", summary["samples_with_text_tool_call"]),
    ]
    return items


def _event_text(event: dict[str, Any]) -> str:
    where = f"turn {event.get('turn', 0)}"
    kind = event.get("kind")
    if kind == "stop":
        detail = f" — {event['detail']}" if event.get("detail") else ""
        return f"{where}: stopped at {event.get('reason')} after {event.get('calls', '?')} calls{detail}"
    if kind == "malformed_arguments":
        return f"{where}: malformed arguments of {event.get('tool')} ({event.get('why')}): {event.get('raw')}"
    if kind == "wrong_argument_types":
        return f"{where}: arguments of {event.get('tool')} do not fit its schema: {event.get('why')}"
    if kind == "unknown_tool":
        return f"{where}: called {event.get('tool')!r}, which was not offered"
    if kind == "repeated_call":
        return f"{where}: {event.get('tool')} called {event.get('times')}× in a row with identical arguments"
    if kind == "text_tool_call":
        return f"{where}: reply looks like a tool call ({event.get('pattern')}) but none was made: {event.get('snippet')}"
    return f"{where}: {json.dumps(event, ensure_ascii=False, default=str)}"


def sample_flags(agent: dict[str, Any] | None) -> list[str]:
    """Short flags for a sample's summary line: ``stopped: max_calls``, ``loop ×20``, ``text tool call`` ..."""
    if not agent:
        return []
    flags = [f"stopped: {r}" for r in dict.fromkeys(agent.get("stopped") or []) if r != "done"]
    if agent.get("repeat"):
        flags.append(f"loop ×{agent['repeat']['times']}")
    if agent.get("malformed_calls"):
        flags.append(f"{agent['malformed_calls']} malformed")
    kinds = {e.get("kind") for e in agent.get("events") or []}
    flags += [
        k.replace("_", " ") for k in ("text_tool_call", "unknown_tool", "wrong_argument_types") if k in kinds
    ]
    return flags


def sample_notes_html(agent: dict[str, Any] | None) -> str:
    """The agent's events of one sample as HTML lines (the trace's loop when the run state has none)."""
    if not agent:
        return ""
    lines = [_event_text(e) for e in agent.get("events") or []]
    repeat = agent.get("repeat")
    if repeat and not any(e.get("kind") == "repeated_call" for e in agent.get("events") or []):
        lines.append(_event_text({"kind": "repeated_call", **repeat}))
    return "".join(f'<p class="ag" data-agent-event><b>Agent</b> {escape(line)}</p>' for line in lines)


def summary_html(summary: dict[str, Any]) -> str:
    """The report's behaviour section (empty when there is nothing to show)."""
    if not summary or not noteworthy(summary):
        return ""
    rows = "".join(
        f'<tr><td>{escape(label)}</td><td class="num">{n}</td></tr>' for label, n in summary_items(summary)
    )
    return f'<h2>Agent behaviour</h2><table class="behaviour"><tbody>{rows}</tbody></table>'


def summary_markdown(summary: dict[str, Any]) -> list[str]:
    """The report's behaviour section as Markdown lines (none when there is nothing to show)."""
    if not summary or not noteworthy(summary):
        return []
    lines = ["## Agent behaviour", "", "| what | count |", "|---|---|"]
    lines += [f"| {label} | {n} |" for label, n in summary_items(summary)]
    return lines + [""]
