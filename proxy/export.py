"""``finmcp-proxy export``: a run's calls as finmcp JSONL, FinMCP-Bench predictions or FinToolBench traces.

- ``jsonl``: one line per (sample, trial): ``{run_id, sample_id, trial, turns: [{turn, calls: [[{tool,
  arguments, status, output}]]}]}`` (what ``finmcp-eval score --preds`` reads);
- ``finmcp``: the official FinMCP-Bench prediction file (a JSON list): ``{id, messages_pred}`` with, per
  turn, a user placeholder message, one assistant ``tool_calls`` message per group and one ``tool``
  message per call (the user text and final answers are not seen by a proxy, so they are empty);
- ``fintoolbench``: FinToolBench result JSONL: ``{id, tool_calls: [{step, tool_name, parameters,
  output}], error}``; ``step`` counts groups from 1 across the sample's turns; failed calls have the
  output ``{"error": message}`` as its agent stores exceptions.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from typing import Any

from proxy.views import SampleTrace, arrange, result_text
from recordings.results import escape_surrogates
from recordings.store import RecordingStore


def export_records(calls: list[dict[str, Any]], run_id: str, fmt: str) -> list[dict[str, Any]]:
    """The exported records of one run's calls in format ``fmt``."""
    traces = [t for t in arrange(calls) if t.sample_id is not None]
    if fmt == "jsonl":
        return [_jsonl(run_id, t) for t in traces]
    if fmt == "finmcp":
        return [
            _finmcp(run_id, t)
            for t in traces
            if t.trial == min(x.trial for x in traces if x.sample_id == t.sample_id)
        ]
    if fmt == "fintoolbench":
        return [
            _fintoolbench(t)
            for t in traces
            if t.trial == min(x.trial for x in traces if x.sample_id == t.sample_id)
        ]
    raise ValueError(f"unknown export format {fmt!r}")


def _output(call: dict[str, Any]) -> Any:
    return {"error": result_text(call)} if call["status"] not in ("ok",) else result_text(call)


def _jsonl(run_id: str, trace: SampleTrace) -> dict[str, Any]:
    turns = []
    for turn, groups in trace.ordered_turns():
        turns.append(
            {
                "turn": turn,
                "calls": [
                    [
                        {
                            "tool": c["tool"],
                            "arguments": c["arguments"],
                            "status": c["status"],
                            "output": _output(c),
                        }
                        for c in group
                    ]
                    for group in groups
                ],
            }
        )
    return {"run_id": run_id, "sample_id": trace.sample_id, "trial": trace.trial, "turns": turns}


def _call_id(run_id: str, call: dict[str, Any]) -> str:
    digest = hashlib.sha256(f"{run_id}/{call['sample_id']}/{call['id']}".encode()).hexdigest()
    return "call_" + digest[:22]


def _finmcp(run_id: str, trace: SampleTrace) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    turns = dict(trace.ordered_turns())
    for turn in range(max(turns) + 1 if turns else 0):
        messages.append({"role": "user", "content": ""})
        for group in turns.get(turn, []):
            tool_calls = []
            for index, call in enumerate(group):
                tool_calls.append(
                    {
                        "id": _call_id(run_id, call),
                        "type": "function",
                        "index": index,
                        "function": {
                            "name": call["tool"],
                            "arguments": json.dumps(call["arguments"], ensure_ascii=False),
                        },
                    }
                )
            messages.append({"role": "assistant", "content": "", "tool_calls": tool_calls})
            for call in group:
                text = result_text(call)
                if call["status"] not in ("ok", "tool_error"):
                    text = f"[error] {text}"
                messages.append({"role": "tool", "tool_call_id": _call_id(run_id, call), "content": text})
    return {"id": trace.sample_id, "messages_pred": messages}


def _fintoolbench(trace: SampleTrace) -> dict[str, Any]:
    entries = []
    step = 0
    for _turn, groups in trace.ordered_turns():
        for group in groups:
            step += 1
            for call in group:
                output = _output(call)
                entries.append(
                    {
                        "step": step,
                        "tool_name": call["tool"],
                        "parameters": call["arguments"] if isinstance(call["arguments"], dict) else {},
                        "output": json.dumps(output, ensure_ascii=False)
                        if isinstance(output, dict)
                        else output,
                    }
                )
    return {"id": trace.sample_id, "tool_calls": entries, "error": None}


def cmd_export(args: argparse.Namespace) -> int:
    """Write the export to ``--out`` or stdout."""
    with RecordingStore.open(args.db) as store:
        calls = store.calls(args.run)
    if not calls:
        print(f"finmcp-proxy export: run {args.run!r} has no calls in {args.db}", file=sys.stderr)
        return 1
    records = export_records(calls, args.run, args.format)
    if args.format == "finmcp":
        text = json.dumps(records, ensure_ascii=False, indent=4) + "\n"
    else:
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    text = escape_surrogates(text)  # a client's "\ud800" stays an escape: UTF-8 cannot hold it raw
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)
    untagged = sum(1 for c in calls if c["sample_id"] is None)
    if untagged:
        print(f"finmcp-proxy export: {untagged} calls without a sample tag were left out", file=sys.stderr)
    return 0
