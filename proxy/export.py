"""``finmcp-proxy export``: a run as predictions (finmcp JSONL, FinMCP-Bench, FinToolBench) or a standard format.

- ``jsonl``: one line per (sample, trial): ``{run_id, sample_id, trial, turns: [{turn, calls: [[{tool,
  arguments, status, output}]]}]}`` (what ``finmcp-eval score --preds`` reads); ``output`` is the
  observation as FinToolBench's agent stores it, as ``finmcp-eval`` reads it from the trace store;
- ``finmcp``: FinMCP-Bench predictions (a JSON list): ``{id, messages_pred}`` with, per turn, a user
  placeholder message, one assistant ``tool_calls`` message per group and one ``tool`` message per call
  (the user text and final answers are not seen by a proxy, so they are empty). Only samples with calls
  are written and the references are not: the file the official ``evaluation.py`` reads is written by
  ``finmcp-eval export --format finmcp --bench ...``;
- ``fintoolbench``: FinToolBench result JSONL: ``{id, tool_calls: [{step, tool_name, parameters,
  output}], error}``; ``step`` counts groups from 1 across the sample's turns; ``error`` is the last
  call's output when it contains ``error``, as its agent sets it.

The standard formats (``otlp``, ``otlp-proto``, ``har``, ``csv``, ``parquet``) are written by
:mod:`proxy.exports`, one module per format.

Tool outputs follow each benchmark's convention (:func:`recordings.transcripts.observation`): in
``finmcp`` an ``isError`` result is its plain text and a call that raised reads ``[error] message``; in
``fintoolbench`` (and ``jsonl``) both read ``{"error": message}``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from finmcp.proxy.exports import STANDARD_FORMATS, render
from finmcp.proxy.views import SampleTrace, arrange
from finmcp.recordings.errors import RecordingsError
from finmcp.recordings.plumbing.terminal import visible_json
from finmcp.recordings.results import escape_surrogates
from finmcp.recordings.trace_store import describe, open_trace_store
from finmcp.recordings.transcripts import ChatCall, ChatTurn, call_id, chat_messages, observation

BINARY_FORMATS = frozenset({"otlp-proto", "parquet"})
"""Formats whose bytes are not text: never written to a terminal."""
OFFICIAL_FILE_NOTE = (
    "finmcp-proxy export: note: this file holds predictions only (id, messages_pred) for the samples "
    "with calls; the file the official evaluation.py reads (every reference sample with its gold "
    "messages) is written by: finmcp-eval export --format finmcp --bench NAME_OR_FILE --db DB --run RUN"
)


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


def _observation(call: dict[str, Any], style: str) -> str:
    return observation(call.get("result"), call.get("rpc_error"), call.get("status"), style=style)


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
                            "output": _observation(c, "fintoolbench"),
                        }
                        for c in group
                    ]
                    for group in groups
                ],
            }
        )
    return {"run_id": run_id, "sample_id": trace.sample_id, "trial": trace.trial, "turns": turns}


def _finmcp(run_id: str, trace: SampleTrace) -> dict[str, Any]:
    turns = dict(trace.ordered_turns())
    chat = [
        ChatTurn(
            "",
            [
                [
                    ChatCall(
                        call_id(run_id, c["sample_id"], c["id"]),
                        c["tool"],
                        c["arguments"],
                        _observation(c, "finmcp"),
                    )
                    for c in group
                ]
                for group in turns.get(turn, [])
            ],
        )
        for turn in range(max(turns) + 1 if turns else 0)
    ]
    return {"id": trace.sample_id, "messages_pred": chat_messages(chat, index=True)}


def _fintoolbench(trace: SampleTrace) -> dict[str, Any]:
    entries = []
    step = 0
    for _turn, groups in trace.ordered_turns():
        for group in groups:
            step += 1
            for call in group:
                entries.append(
                    {
                        "step": step,
                        "tool_name": call["tool"],
                        "parameters": call["arguments"] if isinstance(call["arguments"], dict) else {},
                        "output": _observation(call, "fintoolbench"),
                    }
                )
    last = entries[-1]["output"] if entries else ""
    return {"id": trace.sample_id, "tool_calls": entries, "error": last if "error" in last else None}


def _write_standard(store: Any, db: str, run_id: str, fmt: str, out: str | None) -> int:
    """``otlp``, ``har``, ``csv``, ``parquet`` (:mod:`proxy.exports`): the file's bytes to ``--output`` or stdout.

    A binary format (``otlp-proto``, ``parquet``: the exact text, any byte) is not written to a
    terminal (as ``gzip`` refuses): its bytes could drive it."""
    if out is None and fmt in BINARY_FORMATS and sys.stdout.isatty():
        print(
            f"finmcp-proxy export: --format {fmt} is binary: not written to a terminal"
            " (give --output FILE, or redirect stdout)",
            file=sys.stderr,
        )
        return 2
    if not store.calls(run_id) and not store.messages(run_id=run_id):
        print(
            f"finmcp-proxy export: run {run_id!r} has nothing logged in {describe(db)}",
            file=sys.stderr,
        )
        return 1
    try:
        data = render(store, run_id, fmt)
    except RecordingsError as exc:
        print(f"finmcp-proxy export: {exc}", file=sys.stderr)
        return 2
    if out:
        with open(out, "wb") as handle:
            handle.write(data)
    else:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    return 0


def cmd_export(db: str, run_id: str, fmt: str = "jsonl", out: str | None = None) -> int:
    """Write run ``run_id`` of the trace store ``db`` in format ``fmt`` to the file ``out`` or stdout."""
    with open_trace_store(db) as store:
        if fmt in STANDARD_FORMATS:
            return _write_standard(store, db, run_id, fmt, out)
        calls = store.calls(run_id)
    if not calls:
        print(f"finmcp-proxy export: run {run_id!r} has no calls in {describe(db)}", file=sys.stderr)
        return 1
    records = export_records(calls, run_id, fmt)
    if fmt == "finmcp":
        text = json.dumps(records, ensure_ascii=False, indent=4) + "\n"
    else:
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    # a client's "\ud800" stays an escape (UTF-8 cannot hold it raw), and so does a C1 or bidi control
    # (json.dumps escapes the C0 ones): the same JSON values, safe to print on a terminal
    text = visible_json(escape_surrogates(text))
    if out:
        with open(out, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)
    if fmt == "finmcp":
        print(OFFICIAL_FILE_NOTE, file=sys.stderr)
    untagged = sum(1 for c in calls if c["sample_id"] is None)
    if untagged:
        print(f"finmcp-proxy export: {untagged} calls without a sample tag were left out", file=sys.stderr)
    return 0
