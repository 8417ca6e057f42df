"""The drift report: one dict (the ``--json`` schema, docs/proxy.md "The drift report") and its text form."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from finmcp.proxy.drift.severity import SEVERITIES, Finding, worst
from finmcp.recordings.plumbing.terminal import visible, visible_json

SCHEMA = "finmcp-drift/1"
SHOWN_CHARS = 200


def build_report(
    *,
    source: str,
    target: str,
    run_id: str | None,
    outcomes: list[dict[str, Any]],
    definition_findings: list[Finding] | None,
    recorded_tools: int | None,
    live_tools: int | None,
    normalisers: list[str],
    fail_on: str,
    notes: list[str],
    skipped_tools: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The report dict; every finding appears once under ``findings`` (definitions first)."""
    call_findings = [f for o in outcomes for f in o.pop("_findings", [])]
    findings = list(definition_findings or []) + call_findings
    counts = Counter(o["verdict"] for o in outcomes)
    first: dict[str, dict[str, Any]] = {}
    for o in outcomes:
        session = str(o.get("session") or "")
        if o["verdict"] in ("different", "failed") and session not in first:
            first[session] = {"session": o.get("session"), "call_id": o["call_id"], "tool": o["tool"]}
    return {
        "schema": SCHEMA,
        "run_id": run_id,
        "source": source,
        "target": target,
        "normalisers": normalisers,
        "fail_on": fail_on,
        "worst": worst(findings),
        "counts": dict(sorted(counts.items())),
        "severities": {s: sum(1 for f in findings if f.severity == s) for s in reversed(SEVERITIES)},
        "definitions": {
            "compared": definition_findings is not None,
            "recorded": recorded_tools,
            "live": live_tools,
            "findings": [f.as_json() for f in definition_findings or []],
        },
        "calls": outcomes,
        "first_drift": list(first.values()),
        "skipped_tools": dict(skipped_tools or {}),
        "findings": [f.as_json() for f in findings],
        "notes": notes,
    }


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return visible_json(text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "…")


def where_of(o: dict[str, Any]) -> str:
    """``sample tTURN gGROUP #SEQ`` of a call (``t-`` for an untagged turn)."""
    turn = "-" if o.get("turn") is None else o["turn"]
    group = "-" if o.get("group") is None else o["group"]
    return f"{o.get('sample_id') or '-'} t{turn} g{group} #{o.get('seq')}"


def text_lines(report: dict[str, Any]) -> list[str]:
    """The text report: definitions per tool, then calls (structured paths first), then the summary."""
    lines: list[str] = []
    for note in report["notes"]:
        lines.append(f"note: {visible(note)}")
    defs = report["definitions"]
    if defs["compared"]:
        lines.append(
            f"definitions: {defs['recorded']} tools recorded, {defs['live']} live, {len(defs['findings'])} changes"
        )
        for f in sorted(defs["findings"], key=lambda f: (f["tool"], f["path"])):
            detail = f"  {visible(f['detail'])}" if f["detail"] else ""
            lines.append(
                f"  {f['severity']:18} {visible(f['tool'])}: {f['kind']} at {visible(f['path'])}{detail}"
            )
            if f["recorded"] is not None or f["live"] is not None:
                lines.append(f"{'':22}recorded {_shown(f['recorded'])} | live {_shown(f['live'])}")
    for o in report["calls"]:
        reason = f"  ({visible(o['reason'])})" if "reason" in o else ""
        lines.append(f"{o['verdict']:9} {visible(where_of(o))} {visible(o['tool'])}{reason}")
        for d in o.get("diff", []):
            lines.append(
                f"            {visible(d['path'])} [{d.get('change', 'value')}]: "
                f"logged {_shown(d['logged'])} | reissued {_shown(d['reissued'])}"
            )
    for tool, reason in report["skipped_tools"].items():
        lines.append(f"not re-issued: {visible(tool)} ({visible(reason)})")
    for first in report["first_drift"]:
        lines.append(
            f"first drifted call of session {visible(str(first['session']))}: call {first['call_id']} {visible(first['tool'])}"
        )
    severities = ", ".join(f"{n} {s}" for s, n in report["severities"].items() if n)
    lines.append(f"findings: {severities or 'none'} (--fail-on {report['fail_on']})")
    summary = ", ".join(f"{n} {v}" for v, n in report["counts"].items())
    what = f"run {report['run_id']}" if report["run_id"] is not None else report["source"]
    lines.append(f"audited {len(report['calls'])} calls of {visible(what)}: {summary or 'none'}")
    return lines
