"""One self-contained HTML report: inline CSS and SVG only (no scripts, no external fonts or files)."""

from __future__ import annotations

import json
import math
from collections import Counter
from html import escape
from typing import Any

from finmcp.evaluator.metrics.finmcp import OFFICIAL_KEYS
from finmcp.evaluator.reports.behaviour import sample_flags, sample_notes_html, summary_html
from finmcp.evaluator.reports.markdown import (
    FINTOOLBENCH_METRICS,
    fintoolbench_value,
    fmt,
    official_rows,
    table2_columns,
    tool_metadata_line,
    type_rows,
)
from finmcp.evaluator.reports.model import Estimate, Report, SampleCounts
from finmcp.evaluator.reports.recovery import recovery_html

HTML_OUTPUT_LIMIT = 600
"""Characters of a call's output shown in the page (the rest is counted, and kept in the JSON report)."""
COLORS = ("#2b6cb0", "#38a169", "#dd6b20", "#805ad5", "#e53e3e")
CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#1a202c;max-width:1200px}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #e2e8f0}
table{border-collapse:collapse;margin:8px 0;font-size:13px}td,th{border:1px solid #e2e8f0;padding:3px 7px}
th{background:#f7fafc;text-align:left}td.num{text-align:right;font-variant-numeric:tabular-nums}
.charts{display:flex;flex-wrap:wrap;gap:24px}.chart{border:1px solid #e2e8f0;padding:8px}
.ok{background:#f0fff4}.bad{background:#fff5f5}.muted{color:#718096}
details{margin:2px 0}summary{cursor:pointer;font-family:monospace}
.align td{font-family:monospace;font-size:12px;vertical-align:top}
.call{margin:1px 0}.call code{color:#4a5568;word-break:break-all}.missing{background:#fed7d7}
.extra{background:#feebc8}.failed{outline:1px solid #e53e3e}.st{color:#c53030;font-weight:bold}
pre.out{white-space:pre-wrap;max-height:300px;overflow:auto;background:#f7fafc;margin:2px 0}
.more{color:#718096;font-style:italic}.fe,.fc,.ag{margin:4px 0;font-size:13px}.ag{color:#9c4221}
"""


def svg(width: int, height: int, body: str, title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}"><title>{escape(title)}</title>'
        f"{body}</svg>"
    )


def svg_text(
    x: float, y: float, s: str, anchor: str = "middle", size: int = 11, color: str = "#2d3748"
) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" fill="{color}">'
        f"{escape(s)}</text>"
    )


def radar_chart(values: dict[str, float], title: str, size: int = 380) -> str:
    """Radar (spider) chart of values in [0, 1], one axis per key; bars when fewer than 3 keys."""
    if len(values) < 3:
        return bar_chart({k: {"value": v} for k, v in values.items()}, ["value"], title)
    cx = cy = size / 2
    radius = size / 2 - 70
    n = len(values)
    parts = []
    for ring in (0.25, 0.5, 0.75, 1.0):
        pts = " ".join(
            f"{cx + radius * ring * math.sin(2 * math.pi * i / n):.1f},"
            f"{cy - radius * ring * math.cos(2 * math.pi * i / n):.1f}"
            for i in range(n)
        )
        parts.append(f'<polygon points="{pts}" fill="none" stroke="#e2e8f0"/>')
        parts.append(svg_text(cx + 3, cy - radius * ring + 10, f"{ring:.2f}", "start", 9, "#a0aec0"))
    points = []
    for i, (label, value) in enumerate(values.items()):
        angle = 2 * math.pi * i / n
        x, y = cx + radius * math.sin(angle), cy - radius * math.cos(angle)
        parts.append(f'<line x1="{cx}" y1="{cy}" x2="{x:.1f}" y2="{y:.1f}" stroke="#e2e8f0"/>')
        lx, ly = cx + (radius + 18) * math.sin(angle), cy - (radius + 18) * math.cos(angle)
        anchor = "middle" if abs(math.sin(angle)) < 0.3 else ("start" if math.sin(angle) > 0 else "end")
        short = label if len(label) <= 18 else label[:17] + "…"
        parts.append(svg_text(lx, ly + 4, f"{short} {value:.2f}", anchor, 10))
        v = max(0.0, min(1.0, value or 0.0))
        points.append(f"{cx + radius * v * math.sin(angle):.1f},{cy - radius * v * math.cos(angle):.1f}")
    parts.append(
        f'<polygon points="{" ".join(points)}" fill="#2b6cb0" fill-opacity="0.25" stroke="#2b6cb0"/>'
    )
    return svg(size + 300, size, f'<g transform="translate(150,0)">{"".join(parts)}</g>', title)


def bar_chart(groups: dict[str, dict[str, Any]], series: list[str], title: str, width: int = 520) -> str:
    """Grouped bars in [0, 1] per group and series; ``{series}_lo``/``_hi`` keys draw CI whiskers."""
    height, left, bottom, top = 260, 40, 40, 20
    plot_h = height - bottom - top
    n_groups = max(1, len(groups))
    slot = (width - left - 10) / n_groups
    bar_w = max(4.0, (slot - 16) / max(1, len(series)))
    parts = [f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#a0aec0"/>']
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        y = top + plot_h * (1 - tick)
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{width - 10}" y2="{y:.1f}" stroke="#edf2f7"/>')
        parts.append(svg_text(left - 4, y + 4, f"{tick:.2f}", "end", 9))
    for gi, (group, vals) in enumerate(groups.items()):
        x0 = left + gi * slot + 8
        for si, name in enumerate(series):
            value = vals.get(name)
            if value is None:
                continue
            v = max(0.0, min(1.0, value))
            x = x0 + si * bar_w
            y = top + plot_h * (1 - v)
            color = COLORS[si % len(COLORS)]
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w - 2:.1f}" height="{plot_h * v:.1f}" fill="{color}">'
                f"<title>{escape(group)} {escape(name)} = {value:.4f}</title></rect>"
            )
            lo, hi = vals.get(f"{name}_lo"), vals.get(f"{name}_hi")
            if lo is not None and hi is not None:
                xm = x + (bar_w - 2) / 2
                y_lo, y_hi = top + plot_h * (1 - lo), top + plot_h * (1 - hi)
                parts.append(
                    f'<line x1="{xm:.1f}" y1="{y_lo:.1f}" x2="{xm:.1f}" y2="{y_hi:.1f}" stroke="#1a202c"/>'
                )
                for yy in (y_lo, y_hi):
                    parts.append(
                        f'<line x1="{xm - 3:.1f}" y1="{yy:.1f}" x2="{xm + 3:.1f}" y2="{yy:.1f}" stroke="#1a202c"/>'
                    )
        parts.append(svg_text(x0 + len(series) * bar_w / 2, height - bottom + 16, group, "middle", 11))
    for si, name in enumerate(series):
        x = left + 10 + si * 90
        parts.append(
            f'<rect x="{x}" y="{height - 14}" width="10" height="10" fill="{COLORS[si % len(COLORS)]}"/>'
        )
        parts.append(svg_text(x + 14, height - 5, name, "start", 10))
    return svg(width, height, "".join(parts), title)


def ci_chart(headline: dict[str, Estimate], title: str, width: int = 560) -> str:
    """Dot-and-whisker chart of every headline number with its 95% CI on a [0, 1] axis."""
    items = [(k, v) for k, v in headline.items() if v.value is not None]
    row_h, left, right = 18, 230, 20
    height = 30 + row_h * len(items)
    plot_w = width - left - right
    parts = []
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        x = left + plot_w * tick
        parts.append(f'<line x1="{x:.1f}" y1="10" x2="{x:.1f}" y2="{height - 16}" stroke="#edf2f7"/>')
        parts.append(svg_text(x, height - 4, f"{tick:.2f}", "middle", 9))
    for i, (name, h) in enumerate(items):
        y = 20 + i * row_h
        parts.append(svg_text(left - 6, y + 4, name, "end", 10))
        clamp = lambda v: max(0.0, min(1.0, v))  # noqa: E731
        value = h.value
        assert value is not None
        if h.lo is not None and h.hi is not None:
            x1, x2 = left + plot_w * clamp(h.lo), left + plot_w * clamp(h.hi)
            parts.append(
                f'<line x1="{x1:.1f}" y1="{y}" x2="{x2:.1f}" y2="{y}" stroke="#4a5568" stroke-width="2"/>'
            )
        x = left + plot_w * clamp(value)
        parts.append(
            f'<circle cx="{x:.1f}" cy="{y}" r="4" fill="#2b6cb0"><title>{escape(name)} = {value:.4f} '
            f"[{fmt(h.lo)}, {fmt(h.hi)}]</title></circle>"
        )
    return svg(width, height, "".join(parts), title)


def html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{escape(c)}</td>' if i else f"<td>{escape(c)}</td>" for i, c in enumerate(r)
        )
        + "</tr>"
        for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _args(arguments: Any) -> str:
    return escape(json.dumps(arguments, ensure_ascii=False, separators=(",", ":"), default=str))


def output_block(text: str | None, total: int) -> str:
    """A folded output: its first ``HTML_OUTPUT_LIMIT`` characters and how many more there were."""
    if text is None:
        return '<span class="muted">output not recorded</span>'
    shown = text[:HTML_OUTPUT_LIMIT]
    more = total - len(shown)
    tail = f'<span class="more">… {more} more characters</span>' if more > 0 else ""
    return (
        f"<details><summary>output ({total} characters)</summary>"
        f'<pre class="out">{escape(shown)}{tail}</pre></details>'
    )


def _marks(mine: list[dict[str, Any]], other: list[dict[str, Any]]) -> list[bool]:
    """For each call of ``mine``: True when ``other`` has no call of that tool left to pair it with."""
    left = Counter(c["tool"] for c in other)
    out = []
    for c in mine:
        out.append(left[c["tool"]] <= 0)
        left[c["tool"]] -= 1
    return out


def _ref_cell(calls: list[dict[str, Any]], pred: list[dict[str, Any]]) -> str:
    return "".join(
        f'<div class="call{" missing" if miss else ""}"><b>{escape(c["tool"])}</b> '
        f"<code>{_args(c.get('arguments'))}</code>{' <em>missing</em>' if miss else ''}</div>"
        for c, miss in zip(calls, _marks(calls, pred), strict=True)
    )


def _pred_cell(calls: list[dict[str, Any]], ref: list[dict[str, Any]]) -> str:
    out = []
    for c, extra in zip(calls, _marks(calls, ref), strict=True):
        status = c.get("status")
        failed = status not in (None, "ok")
        cls = "call" + (" extra" if extra else "") + (" failed" if failed else "")
        badge = f' <span class="{"st" if failed else "muted"}">{escape(str(status))}</span>' if status else ""
        malformed = ' <span class="st">malformed arguments</span>' if c.get("malformed") else ""
        out.append(
            f'<div class="{cls}"><b>{escape(c["tool"])}</b> <code>{_args(c.get("arguments"))}</code>'
            f"{badge}{malformed}{' <em>extra</em>' if extra else ''}"
            f"{output_block(c.get('output'), int(c.get('output_chars') or 0))}</div>"
        )
    return "".join(out)


def evidence_table(evidence: dict[str, Any]) -> str:
    """Reference and predicted calls side by side, turn by turn and group by group."""
    ref, pred = evidence.get("ref", []), evidence.get("pred", [])
    rows = []
    for t in range(max(len(ref), len(pred))):
        rg = ref[t] if t < len(ref) else []
        pg = pred[t] if t < len(pred) else []
        for k in range(max(len(rg), len(pg))):
            a = rg[k] if k < len(rg) else []
            b = pg[k] if k < len(pg) else []
            same = sorted(c["tool"] for c in a) == sorted(c["tool"] for c in b)
            rows.append(
                f'<tr class="{"ok" if same else "bad"}"><td>{t}</td><td>{k + 1}</td>'
                f"<td>{_ref_cell(a, b) or '—'}</td><td>{_pred_cell(b, a) or '—'}</td></tr>"
            )
    if not rows:
        rows.append('<tr><td colspan="4" class="muted">no calls on either side</td></tr>')
    return (
        '<table class="align"><thead><tr><th>turn</th><th>group</th><th>reference</th><th>predicted</th></tr>'
        f"</thead><tbody>{''.join(rows)}</tbody></table>"
    )


def sample_block(s: dict[str, Any]) -> str:
    """One sample, folded: a summary line with its numbers and first error, then the evidence."""
    ev = s.get("evidence") or {
        "ref": [[[{"tool": t} for t in g] for g in turn] for turn in s.get("ref_groups", [])],
        "pred": [[[{"tool": t} for t in g] for g in turn] for turn in s.get("pred_groups", [])],
    }
    first, failed, harness = ev.get("first_error"), ev.get("failed_call"), ev.get("harness_error")
    mark = "✓" if s.get("emr") else "✗"
    summary = (
        f"{mark} {escape(str(s['id']))} · {escape(s['type'])} · {escape(s['difficulty'])} · "
        f"F1 {s['f1']:.3f} · TP {s['tp']} FP {s['fp']} FN {s['fn']}"
        + (f" · first error: {escape(first['kind'])} at group {first['position']}" if first else "")
        + (" · failed call" if failed else "")
        + "".join(f" · {escape(flag)}" for flag in sample_flags(ev.get("agent")))
    )
    notes = []
    if first:
        notes.append(f'<p class="fe"><b>First error</b> {escape(first["text"])}</p>')
    if failed:
        notes.append(
            f'<p class="fc"><b>First failed call</b> turn {failed["turn"]}, group {failed["group"]}: '
            f"{escape(failed['tool'])} → {escape(str(failed['status']))}: "
            f"<code>{escape(failed['output'][:200])}</code></p>"
        )
    if harness:
        notes.append(f'<p class="fc"><b>Harness error</b> {escape(harness)}</p>')
    notes.append(sample_notes_html(ev.get("agent")))
    return (
        f'<details class="sample" id="sample-{escape(str(s["id"]))}" data-sample="{escape(str(s["id"]))}">'
        f"<summary>{summary}</summary>{''.join(notes)}{evidence_table(ev)}</details>"
    )


def _samples(report: Report) -> str:
    samples = report.samples
    wrong = sum(1 for s in samples if not s.get("emr"))
    head = (
        f'<p class="muted">{len(samples)} samples ({wrong} not an exact match, marked ✗); '
        "open one to see its reference and predicted calls with arguments, the outputs the agent saw "
        f"(first {HTML_OUTPUT_LIMIT} characters; the JSON report keeps more) and its first error.</p>"
    )
    return head + "".join(sample_block(s) for s in samples)


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def render_html(report: Report) -> str:
    """The whole HTML page."""
    inputs, cov, headline = report.inputs, report.coverage, report.headline
    cols = table2_columns(report)
    radar = radar_chart(
        {k: v.get("official.macro_F1") or 0.0 for k, v in report.by_scenario.items()},
        "TF1 (official macro F1) by level-1 scenario",
    )
    diff_groups = {}
    for level in ("easy", "medium", "hard", *report.by_difficulty):
        if level in diff_groups or level not in report.by_difficulty:
            continue
        values = report.by_difficulty[level]
        entry: dict[str, Any] = {}
        for short, key in (
            ("TF1", "official.macro_F1"),
            ("TR", "official.macro_Recall"),
            ("TP", "official.macro_Precision"),
        ):
            entry[short] = values.get(key)
            ci = values.get("ci", {}).get(key, {})
            entry[f"{short}_lo"], entry[f"{short}_hi"] = ci.get("lo"), ci.get("hi")
        diff_groups[level] = entry
    bars = bar_chart(diff_groups, ["TF1", "TR", "TP"], "TF1 / TR / TP by difficulty with 95% CIs")
    parts = [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        f"<title>finmcp-eval report ({escape(report.benchmark)})</title><style>{CSS}</style></head><body>",
        f"<h1>finmcp-eval report — {escape(report.benchmark)}</h1>",
        f"<p>references <code>{escape(str(inputs.references))}</code> ({escape(inputs.reference_format)}), "
        f"predictions <code>{escape(str(inputs.predictions))}</code> ({escape(inputs.prediction_format)})"
        + (f", run <code>{escape(inputs.run_id)}</code>" if inputs.run_id else "")
        + f". {escape(_sentence(SampleCounts.of_report(report).line()))}"
        + (
            f"; {cov.predictions_not_in_references_count} predicted samples match no reference"
            if cov.predictions_not_in_references_count
            else ""
        )
        + f". Bootstrap {inputs.bootstrap} (seed {inputs.seed}).</p>",
        "<h2>Results by sample type</h2>",
        html_table(["type", "N"] + [c for c, _ in cols], type_rows(report, "overall")),
        '<div class="charts">',
        f'<div class="chart">{radar}</div><div class="chart">{bars}</div>',
        f'<div class="chart">{ci_chart(headline, "Headline numbers with 95% CIs")}</div>',
        "</div>",
    ]
    for block, title in (
        (report.official, "Official FinMCP-Bench evaluation"),
        (report.tool_selection, "Tool selection (not official)"),
    ):
        if block is not None:
            parts += [
                f"<h2>{title}</h2>",
                html_table(["group", "value", *OFFICIAL_KEYS], official_rows(block)),
            ]
    if report.fintoolbench is not None:
        fb = report.fintoolbench
        names = FINTOOLBENCH_METRICS
        rows = [
            [variant] + [fintoolbench_value(getattr(fb, variant).metrics, n) for n in names]
            for variant in ("fintoolbench", "fintoolbench_corrected")
        ]
        parts += [
            f"<h2>FinToolBench (judge: {escape(fb.judge)})</h2>",
            f"<p>{escape(tool_metadata_line(fb))}.</p>",
            html_table(["variant", *names], rows),
        ]
    if report.trials is not None:
        t = report.trials
        parts += [
            f"<h2>Repeated trials ({t.trials}): pass^k (success = paper EMR)</h2>",
            html_table(list(t.pass_hat_k), [[fmt(v) for v in t.pass_hat_k.values()]]),
        ]
    parts.append(summary_html(report.agent_behaviour or {}))
    parts.append(recovery_html(report.recovery, bar_chart))
    if report.grounding is not None:
        from finmcp.evaluator.reports.grounding import grounding_html

        parts.append(grounding_html(report.grounding, bar_chart))
    parts += ["<h2>Per sample: reference vs predicted calls</h2>", _samples(report)]
    if report.warnings:
        parts += (
            ["<h2>Warnings</h2><ul>"] + [f"<li>{escape(w)}</li>" for w in report.warnings[:100]] + ["</ul>"]
        )
    parts.append("</body></html>")
    return "".join(parts)
