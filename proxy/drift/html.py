"""The drift report as a self-contained HTML page (``--html FILE``): no scripts, no external assets."""

from __future__ import annotations

import html
import json
from typing import Any

STYLE = (
    "body{font:14px system-ui,sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse;width:100%}"
    "td,th{border:1px solid #ccc;padding:4px 6px;text-align:left;vertical-align:top}"
    "code{white-space:pre-wrap;word-break:break-all}.breaks-replay{background:#fdd}"
    ".changes-references{background:#ffd}.cosmetic{background:#eef}"
)


def _cell(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return f"<code>{html.escape(text[:2000])}</code>"


def drift_section(report: dict[str, Any]) -> str:
    """The ``<section>`` of a drift report (findings table, then per-call verdicts)."""
    rows = "".join(
        f'<tr class="{html.escape(f["severity"])}"><td>{html.escape(f["severity"])}</td>'
        f"<td>{html.escape(f['tool'])}</td><td>{html.escape(f['kind'])}</td><td>{_cell(f['path'])}</td>"
        f"<td>{_cell(f['recorded'])}</td><td>{_cell(f['live'])}</td>"
        f"<td>{html.escape(str((f.get('call') or {}).get('call_id', '')))}</td></tr>"
        for f in report["findings"]
    )
    calls = "".join(
        f"<tr><td>{html.escape(o['verdict'])}</td><td>{html.escape(str(o.get('sample_id')))}</td>"
        f"<td>{html.escape(str(o.get('call_id')))}</td><td>{html.escape(o['tool'])}</td>"
        f"<td>{html.escape(o.get('reason', ''))}</td></tr>"
        for o in report["calls"]
    )
    counts = ", ".join(f"{n} {html.escape(s)}" for s, n in report["severities"].items())
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in report["notes"])
    return (
        '<section id="drift"><h2>Drift audit</h2>'
        f"<p>{html.escape(report['source'])} against {html.escape(report['target'])}: {counts}</p>"
        f"<ul>{notes}</ul>"
        "<table><tr><th>severity</th><th>tool</th><th>kind</th><th>path</th><th>recorded</th><th>live</th>"
        f"<th>call</th></tr>{rows}</table>"
        f"<h3>Calls</h3><table><tr><th>verdict</th><th>sample</th><th>call</th><th>tool</th><th>note</th></tr>{calls}</table>"
        "</section>"
    )


def drift_page(report: dict[str, Any]) -> str:
    """A whole self-contained page around :func:`drift_section`."""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>finmcp drift audit</title>'
        f"<style>{STYLE}</style></head><body>{drift_section(report)}</body></html>\n"
    )
