"""One self-contained HTML report: inline CSS and SVG only (no scripts, no external fonts or files)."""

from __future__ import annotations

import math
from html import escape
from typing import Any

from evaluator.metrics.finmcp import OFFICIAL_KEYS
from evaluator.reports.markdown import (
    FINTOOLBENCH_METRICS,
    TABLE2,
    TYPE_ORDER,
    fintoolbench_value,
    fmt,
    official_cells,
    tool_metadata_line,
)

MAX_SAMPLES = 2000
COLORS = ("#2b6cb0", "#38a169", "#dd6b20", "#805ad5", "#e53e3e")
CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#1a202c;max-width:1200px}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #e2e8f0}
table{border-collapse:collapse;margin:8px 0;font-size:13px}td,th{border:1px solid #e2e8f0;padding:3px 7px}
th{background:#f7fafc;text-align:left}td.num{text-align:right;font-variant-numeric:tabular-nums}
.charts{display:flex;flex-wrap:wrap;gap:24px}.chart{border:1px solid #e2e8f0;padding:8px}
.ok{background:#f0fff4}.bad{background:#fff5f5}.muted{color:#718096}
details{margin:2px 0}summary{cursor:pointer;font-family:monospace}
.align td{font-family:monospace;font-size:12px}
"""


def _svg(width: int, height: int, body: str, title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}"><title>{escape(title)}</title>'
        f"{body}</svg>"
    )


def _text(x: float, y: float, s: str, anchor: str = "middle", size: int = 11, color: str = "#2d3748") -> str:
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
        parts.append(_text(cx + 3, cy - radius * ring + 10, f"{ring:.2f}", "start", 9, "#a0aec0"))
    points = []
    for i, (label, value) in enumerate(values.items()):
        angle = 2 * math.pi * i / n
        x, y = cx + radius * math.sin(angle), cy - radius * math.cos(angle)
        parts.append(f'<line x1="{cx}" y1="{cy}" x2="{x:.1f}" y2="{y:.1f}" stroke="#e2e8f0"/>')
        lx, ly = cx + (radius + 18) * math.sin(angle), cy - (radius + 18) * math.cos(angle)
        anchor = "middle" if abs(math.sin(angle)) < 0.3 else ("start" if math.sin(angle) > 0 else "end")
        short = label if len(label) <= 18 else label[:17] + "…"
        parts.append(_text(lx, ly + 4, f"{short} {value:.2f}", anchor, 10))
        v = max(0.0, min(1.0, value or 0.0))
        points.append(f"{cx + radius * v * math.sin(angle):.1f},{cy - radius * v * math.cos(angle):.1f}")
    parts.append(
        f'<polygon points="{" ".join(points)}" fill="#2b6cb0" fill-opacity="0.25" stroke="#2b6cb0"/>'
    )
    return _svg(size + 300, size, f'<g transform="translate(150,0)">{"".join(parts)}</g>', title)


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
        parts.append(_text(left - 4, y + 4, f"{tick:.2f}", "end", 9))
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
        parts.append(_text(x0 + len(series) * bar_w / 2, height - bottom + 16, group, "middle", 11))
    for si, name in enumerate(series):
        x = left + 10 + si * 90
        parts.append(
            f'<rect x="{x}" y="{height - 14}" width="10" height="10" fill="{COLORS[si % len(COLORS)]}"/>'
        )
        parts.append(_text(x + 14, height - 5, name, "start", 10))
    return _svg(width, height, "".join(parts), title)


def ci_chart(headline: dict[str, dict[str, Any]], title: str, width: int = 560) -> str:
    """Dot-and-whisker chart of every headline number with its 95% CI on a [0, 1] axis."""
    items = [(k, v) for k, v in headline.items() if v.get("value") is not None]
    row_h, left, right = 18, 230, 20
    height = 30 + row_h * len(items)
    plot_w = width - left - right
    parts = []
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        x = left + plot_w * tick
        parts.append(f'<line x1="{x:.1f}" y1="10" x2="{x:.1f}" y2="{height - 16}" stroke="#edf2f7"/>')
        parts.append(_text(x, height - 4, f"{tick:.2f}", "middle", 9))
    for i, (name, h) in enumerate(items):
        y = 20 + i * row_h
        parts.append(_text(left - 6, y + 4, name, "end", 10))
        clamp = lambda v: max(0.0, min(1.0, v))  # noqa: E731
        if h.get("lo") is not None and h.get("hi") is not None:
            x1, x2 = left + plot_w * clamp(h["lo"]), left + plot_w * clamp(h["hi"])
            parts.append(
                f'<line x1="{x1:.1f}" y1="{y}" x2="{x2:.1f}" y2="{y}" stroke="#4a5568" stroke-width="2"/>'
            )
        x = left + plot_w * clamp(h["value"])
        parts.append(
            f'<circle cx="{x:.1f}" cy="{y}" r="4" fill="#2b6cb0"><title>{escape(name)} = {h["value"]:.4f} '
            f"[{fmt(h.get('lo'))}, {fmt(h.get('hi'))}]</title></circle>"
        )
    return _svg(width, height, "".join(parts), title)


def _table(header: list[str], rows: list[list[str]]) -> str:
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


def _alignment(sample: dict[str, Any]) -> str:
    ref, pred = sample.get("ref_groups", []), sample.get("pred_groups", [])
    rows = []
    for t in range(max(len(ref), len(pred))):
        rg = ref[t] if t < len(ref) else []
        pg = pred[t] if t < len(pred) else []
        for k in range(max(len(rg), len(pg))):
            a = rg[k] if k < len(rg) else []
            b = pg[k] if k < len(pg) else []
            cls = "ok" if sorted(a) == sorted(b) else "bad"
            rows.append(
                f'<tr class="{cls}"><td>{t}</td><td>{k + 1}</td><td>{escape(", ".join(a)) or "—"}</td>'
                f"<td>{escape(', '.join(b)) or '—'}</td></tr>"
            )
    if not rows:
        rows.append('<tr><td colspan="4" class="muted">no calls on either side</td></tr>')
    return (
        '<table class="align"><thead><tr><th>turn</th><th>group</th><th>reference</th><th>predicted</th></tr>'
        f"</thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _samples(report: dict[str, Any]) -> str:
    samples = report.get("samples", [])
    shown = samples[:MAX_SAMPLES]
    out = []
    for s in shown:
        mark = "✓" if s.get("emr") else "✗"
        summary = (
            f"{mark} {escape(str(s['id']))} · {escape(s['type'])} · {escape(s['difficulty'])} · "
            f"F1 {s['f1']:.3f} · TP {s['tp']} FP {s['fp']} FN {s['fn']}"
        )
        out.append(f"<details><summary>{summary}</summary>{_alignment(s)}</details>")
    more = (
        f'<p class="muted">{len(samples) - len(shown)} more samples in the JSON report.</p>'
        if len(samples) > len(shown)
        else ""
    )
    return "".join(out) + more


def render_html(report: dict[str, Any]) -> str:
    """The whole HTML page."""
    inputs, cov, headline = report["inputs"], report["coverage"], report.get("headline", {})
    cols = [(label, key) for label, key in TABLE2 if key in headline]
    by_type = report.get("by_type", {})
    type_rows = [
        [t, str(by_type[t]["N"])] + [fmt(by_type[t].get(k)) for _, k in cols]
        for t in [t for t in TYPE_ORDER if t in by_type] + [t for t in by_type if t not in TYPE_ORDER]
    ]
    type_rows.append(["overall", str(cov["scored"])] + [fmt(headline[k]["value"]) for _, k in cols])
    radar = radar_chart(
        {k: v.get("official.macro_F1") or 0.0 for k, v in report.get("by_scenario", {}).items()},
        "TF1 (official macro F1) by level-1 scenario",
    )
    diff_groups = {}
    for level in ("easy", "medium", "hard", *report.get("by_difficulty", {})):
        if level in diff_groups or level not in report.get("by_difficulty", {}):
            continue
        values = report["by_difficulty"][level]
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
        f"<title>finmcp-eval report ({escape(report['benchmark'])})</title><style>{CSS}</style></head><body>",
        f"<h1>finmcp-eval report — {escape(report['benchmark'])}</h1>",
        f"<p>references <code>{escape(str(inputs['references']))}</code> ({escape(inputs['reference_format'])}), "
        f"predictions <code>{escape(str(inputs['predictions']))}</code> ({escape(inputs['prediction_format'])})"
        + (f", run <code>{escape(inputs['run_id'])}</code>" if inputs.get("run_id") else "")
        + f". Scored {cov['scored']} of {cov['references']} samples; {len(cov['dropped'])} dropped; "
        f"{cov['missing_predictions']} without prediction"
        + (
            f"; {cov['predictions_not_in_references_count']} predicted samples match no reference"
            if cov.get("predictions_not_in_references_count")
            else ""
        )
        + f". Bootstrap {inputs['bootstrap']} (seed {inputs['seed']}).</p>",
        "<h2>Results by sample type</h2>",
        _table(["type", "N"] + [c for c, _ in cols], type_rows),
        '<div class="charts">',
        f'<div class="chart">{radar}</div><div class="chart">{bars}</div>',
        f'<div class="chart">{ci_chart(headline, "Headline numbers with 95% CIs")}</div>',
        "</div>",
    ]
    for key, title in (
        ("official", "Official FinMCP-Bench evaluation"),
        ("tool_selection", "Tool selection (not official)"),
    ):
        if key in report:
            block = report[key]
            rows = [["overall", ""] + official_cells(block["overall"])]
            for group in ("level1", "difficulty", "task"):
                rows += [[group, v] + official_cells(n) for v, n in block.get(group, {}).items()]
            parts += [f"<h2>{title}</h2>", _table(["group", "value", *OFFICIAL_KEYS], rows)]
    if "fintoolbench" in report:
        fb = report["fintoolbench"]
        names = FINTOOLBENCH_METRICS
        rows = [
            [variant] + [fintoolbench_value(fb[variant]["metrics"], n) for n in names]
            for variant in ("fintoolbench", "fintoolbench_corrected")
        ]
        parts += [
            f"<h2>FinToolBench (judge: {escape(fb['judge'])})</h2>",
            f"<p>{escape(tool_metadata_line(fb))}.</p>",
            _table(["variant", *names], rows),
        ]
    if "trials" in report:
        t = report["trials"]
        parts += [
            f"<h2>Repeated trials ({t['trials']}): pass^k (success = paper EMR)</h2>",
            _table(list(t["pass_hat_k"]), [[fmt(v) for v in t["pass_hat_k"].values()]]),
        ]
    parts += ["<h2>Per sample: reference groups vs predicted groups</h2>", _samples(report)]
    if report.get("warnings"):
        parts += (
            ["<h2>Warnings</h2><ul>"]
            + [f"<li>{escape(w)}</li>" for w in report["warnings"][:100]]
            + ["</ul>"]
        )
    parts.append("</body></html>")
    return "".join(parts)
