"""``finmcp-proxy sessions`` and ``finmcp-proxy show``: a trace database as text.

Every value that came from a peer (tags, session keys, client names, protocol versions, tool names,
arguments, outputs) is printed through :func:`recordings.plumbing.terminal.visible`: a control
character shows as an escape (``\\x1b[2J``), so a hostile server or client cannot drive the terminal.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from finmcp.proxy.views import arrange, result_text
from finmcp.recordings.plumbing.protocol import stored_era
from finmcp.recordings.plumbing.terminal import visible
from finmcp.recordings.trace_store import describe, open_trace_store


@dataclass(frozen=True)
class ShowOptions:
    """``finmcp-proxy show``: the calls of a run (or one sample of it), shortened unless ``full``."""

    db: str
    run: str
    sample: str | None = None
    full: bool = False
    """Arguments and outputs whole (else cut to 100 characters)."""


READ_CHARS = 1_000_000
"""Characters of a result ``show`` reads (a longer one is read cut by the store and shown as its JSON's start)."""


def _short(text: str, limit: int) -> str:
    """One line of at most ``limit`` visible characters: newlines become spaces, controls escapes."""
    text = visible(text.replace("\n", " "))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _field(value: object, absent: str = "?") -> str:
    """A one-line field from the store as it may be printed (``absent`` when None or empty)."""
    return visible(value) if value not in (None, "") else absent


SESSIONS_HEADER = (
    "  SESSION  RUN TRANSPORT ERA PROTOCOL CLIENT(name/version) STARTED → ENDED (open: not ended yet)"
)
"""The header row of ``sessions``'s session lines (their fields in this order)."""


def cmd_sessions(db: str, run_id: str | None = None) -> int:
    """Runs (with call/sample counts) and their sessions: of every run, or of ``run_id``."""
    with open_trace_store(db) as store:
        runs = [r for r in store.runs() if run_id is None or r["run_id"] == run_id]
        sessions = store.sessions(run_id)
        # None unless the file ships (--ship-to); a PostgreSQL store is where outboxes ship to
        outbox = store.outbox_status(time.time())
    if run_id is not None and not runs:
        print(f"run {run_id!r} not found in {describe(db)}")  # repr escapes every control
        return 1
    for run in runs:
        print(
            f"run {visible(run['run_id'])}: {run['calls']} calls, {run['samples']} samples, {run['sessions']} sessions"
        )
    untagged = [s for s in sessions if s["run_id"] is None]
    if untagged and run_id is None:
        print(f"(no run tag): {len(untagged)} sessions")
    if sessions:
        print(SESSIONS_HEADER)
    for s in sessions:
        client = f"{_field(s['client_name'])}/{_field(s['client_version'])}"
        print(
            f"  {visible(s['session_key'])}  run={_field(s['run_id'], '-')} {_field(s['transport'])}"
            f" {stored_era(s['era']) or '?'} {_field(s['protocol_version'])} client={client}"
            f" {_field(s['started'])} → {_field(s['ended'], 'open')}"
        )
    if outbox:
        print(outbox)
    return 0


def cmd_show(args: ShowOptions) -> int:
    """The calls of a run (or one sample), turn by turn, in parallel groups."""
    limit = 10_000_000 if args.full else 100
    with open_trace_store(args.db) as store:
        calls = store.calls(args.run, args.sample, result_chars=max(limit, READ_CHARS))
    if not calls:
        what = f"run {args.run!r}" + (f" sample {args.sample!r}" if args.sample else "")
        print(f"no calls for {what} in {describe(args.db)}")
        return 1
    for trace in arrange(calls):
        trial = f" trial {trace.trial}" if trace.trial else ""
        print(f"sample {_field(trace.sample_id, '(untagged)')}{trial}: {trace.call_count()} calls")
        for turn, groups in trace.ordered_turns():
            print(f"  turn {turn}")
            for index, group in enumerate(groups):
                source = _field(group[0]["group_source"], "-")
                print(f"    group {index} ({len(group)} call{'s' * (len(group) != 1)}, {source})")
                for call in group:
                    print(_call_line(call, limit))
    return 0


def _call_line(call: dict[str, Any], limit: int) -> str:
    args = json.dumps(call["arguments"], ensure_ascii=False)
    latency = f"{call['latency_ms']:.1f} ms" if call["latency_ms"] is not None else "-"
    line = f"      [{call['seq']}] {visible(call['tool'])} {_short(args, limit)}  → {visible(call['status'])} {latency}"
    result = call["result"]
    if isinstance(result, str):  # longer than the store was asked to read: the JSON's first characters
        text = f"({call['result_length']} characters, cut) {result}"
    else:
        text = result_text(call)
    return line + f"\n          {_short(text, limit)}"
