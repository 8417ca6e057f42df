"""HTML of a paired comparison (``finmcp-eval compare``) and of a leaderboard (``finmcp-eval demo``):
the paired bootstrap and McNemar tables of :func:`evaluator.metrics.compare.compare_runs` and a forest
plot of the per-scenario differences with their 95% CIs (inline SVG, no scripts, no external files)."""

from __future__ import annotations

import math
from html import escape
from typing import Any

from finmcp.evaluator.reports.html import CSS, html_table, svg, svg_text
from finmcp.evaluator.reports.markdown import (
    SAMPLE_COLUMNS,
    compare_sample_lines,
    estimate_text,
    fingerprint_rows,
    fmt,
    mcnemar_rows,
    not_comparable,
    paired_rows,
    sample_cells,
)
from finmcp.evaluator.reports.model import Report, flag_lines, leaderboard_flags
from finmcp.evaluator.reports.pareto import pareto_section
from finmcp.evaluator.reports.recovery import LEADERBOARD as RECOVERY_COLUMNS
from finmcp.evaluator.reports.recovery import leaderboard_cells as recovery_cells

GROUP_TITLES = {"level1": "scenario", "type": "sample type"}
FOREST_METRIC = "official.macro_F1"


def forest_axis(rows: list[dict[str, Any]]) -> float:
    """Half-width of a symmetric axis around zero that holds every difference and CI bound."""
    extent = max([abs(r[k]) for r in rows for k in ("diff", "lo", "hi") if r.get(k) is not None] + [0.05])
    step = 0.05 if extent <= 0.5 else 0.25
    return round(math.ceil(extent / step - 1e-9) * step, 6)


def forest_plot(rows: list[dict[str, Any]], title: str, width: int = 620) -> str:
    """One row per group (``label``, ``diff``, ``lo``, ``hi``, ``N``): the point is the difference B - A,
    the whisker its CI, the vertical line zero. The axis is ``[-m, m]`` with ``m`` from
    :func:`forest_axis`; the ``svg`` carries ``data-left``, ``data-plot-width`` and ``data-max``
    so a reader can map values to x (``left + (v + m) / (2 m) * plot width``)."""
    left, right, top, row_h = 210, 70, 14, 20
    plot_w = width - left - right
    m = forest_axis(rows)
    height = top + row_h * len(rows) + 30

    def x(v: float) -> float:
        return left + (v + m) / (2 * m) * plot_w

    parts = []
    for tick in (-m, -m / 2, 0.0, m / 2, m):
        parts.append(
            f'<line x1="{x(tick):.2f}" y1="{top}" x2="{x(tick):.2f}" y2="{height - 24}" stroke="#edf2f7"/>'
        )
        parts.append(svg_text(x(tick), height - 10, f"{tick:+.2f}" if tick else "0", "middle", 9))
    parts.append(
        f'<line class="zero" x1="{x(0):.2f}" y1="{top - 4}" x2="{x(0):.2f}" y2="{height - 24}" '
        'stroke="#1a202c" stroke-dasharray="3,2"/>'
    )
    for i, r in enumerate(rows):
        y = top + row_h * i + row_h / 2
        label = str(r["label"])
        short = label if len(label) <= 24 else label[:23] + "…"
        attrs = f'class="row" data-label="{escape(label)}" data-y="{y:.2f}"'
        body = [svg_text(left - 8, y + 4, f"{short} (N={r.get('N', '')})", "end", 10)]
        if r.get("lo") is not None and r.get("hi") is not None:
            x1, x2 = x(r["lo"]), x(r["hi"])
            body.append(
                f'<line class="ci" x1="{x1:.2f}" y1="{y:.2f}" x2="{x2:.2f}" y2="{y:.2f}" '
                'stroke="#4a5568" stroke-width="2"/>'
            )
            body += [
                f'<line class="cap" x1="{xx:.2f}" y1="{y - 4:.2f}" x2="{xx:.2f}" y2="{y + 4:.2f}" stroke="#4a5568"/>'
                for xx in (x1, x2)
            ]
        if r.get("diff") is not None:
            color = "#2f855a" if r["diff"] > 0 else "#c53030" if r["diff"] < 0 else "#2b6cb0"
            body.append(
                f'<circle class="point" cx="{x(r["diff"]):.2f}" cy="{y:.2f}" r="4" fill="{color}">'
                f"<title>{escape(label)}: {r['diff']:+.4f} [{fmt(r.get('lo'))}, {fmt(r.get('hi'))}]</title>"
                "</circle>"
            )
            body.append(svg_text(width - right + 6, y + 4, f"{r['diff']:+.3f}", "start", 10))
        parts.append(f"<g {attrs}>{''.join(body)}</g>")
    inner = "".join(parts)
    out = svg(width, height, inner, title)
    return out.replace(
        "<svg ", f'<svg class="forest" data-left="{left}" data-plot-width="{plot_w}" data-max="{m:g}" ', 1
    )


def forest_rows(by_group: dict[str, Any], metric: str = FOREST_METRIC) -> list[dict[str, Any]]:
    """Rows for :func:`forest_plot` from one ``by_group[key]`` block of a comparison."""
    rows = []
    for label, block in by_group.items():
        d = block.get(metric) or {}
        rows.append(
            {"label": label, "N": block.get("N"), "diff": d.get("diff"), "lo": d.get("lo"), "hi": d.get("hi")}
        )
    return rows


def comparison_body(result: dict[str, Any], heading: str = "h2") -> str:
    """The tables and forest plots of one comparison (no page frame); first, when the runs'
    fingerprints differ, what differs (the deltas are marked not comparable)."""
    flag = not_comparable(result)
    parts = []
    if flag:
        parts += [
            f'<p class="not-comparable"><strong>{escape(flag.capitalize())}.</strong> A and B were measured'
            " on different things: the deltas below are shown, but they are not a like-for-like comparison.</p>",
            html_table(["fingerprint", "A", "B", ""], fingerprint_rows(result)),
        ]
    parts += [
        f"<p>Paired samples: {result['paired_samples']}"
        + (
            f" (only in A: {result['only_a']}, only in B: {result['only_b']})"
            if result.get("only_a") or result.get("only_b")
            else ""
        )
        + f"; bootstrap {result['bootstrap']} (seed {result['seed']}), stratified by sample type.</p>",
        *(f"<p>{escape(line.removeprefix('- '))}</p>" for line in compare_sample_lines(result) if line),
        f"<{heading}>Paired bootstrap (B − A)</{heading}>",
        html_table(
            ["metric", "A", "B", f"B − A ({flag})" if flag else "B − A", "95% CI", "p"], paired_rows(result)
        ),
        f"<{heading}>McNemar (exact-match metrics)</{heading}>",
        html_table(["metric", "A only", "B only", "p", "method"], mcnemar_rows(result)),
    ]
    for key, block in (result.get("by_group") or {}).items():
        frows = forest_rows(block)
        if not frows:
            continue
        what = GROUP_TITLES.get(key, key)
        title = f"TF1 difference B − A by {what} with 95% CIs"
        parts += [
            f"<{heading}>{escape(title)}</{heading}>",
            f'<div class="chart" data-group="{escape(key)}">{forest_plot(frows, title)}</div>',
        ]
    return "".join(parts)


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body><h1>{escape(title)}</h1>{body}"
        "</body></html>"
    )


def render_compare_html(result: dict[str, Any]) -> str:
    """The whole HTML page of ``finmcp-eval compare``."""
    body = f"<p>A = <code>{escape(str(result['a']))}</code>, B = <code>{escape(str(result['b']))}</code>.</p>"
    body += comparison_body(result)
    if result.get("warnings"):
        body += (
            "<h2>Warnings</h2><ul>"
            + "".join(f"<li>{escape(w)}</li>" for w in result["warnings"][:50])
            + "</ul>"
        )
    return _page(f"finmcp-eval compare: {result['a']} vs {result['b']}", body)


def render_leaderboard_html(
    rows: list[tuple[str, Report]],
    columns: tuple[tuple[str, str], ...],
    comparisons: list[dict[str, Any]],
    title: str = "finmcp-eval leaderboard",
) -> str:
    """A leaderboard page: one row per agent (headline metrics with 95% CIs), then each paired comparison
    (tables and per-scenario forest plots) of ``comparisons`` (results of ``compare_runs``)."""
    from finmcp.evaluator.reports.grounding import LEADERBOARD_COLUMNS, leaderboard_cells

    flags = leaderboard_flags(rows)
    robust = any(report.recovery for _, report in rows)  # robustness columns only when a row has faults
    grounded = any(report.grounding is not None for _, report in rows)  # else the table is unchanged
    table = html_table(
        ["agent", *SAMPLE_COLUMNS, *(label for label, _ in columns)]
        + ([label for label, _ in RECOVERY_COLUMNS] if robust else [])
        + (list(LEADERBOARD_COLUMNS) if grounded else []),
        [
            [agent + (" ⚠" if agent in flags else ""), *sample_cells(report)]
            + [estimate_text(report.headline_entry(metric)) for _, metric in columns]
            + (recovery_cells(report.recovery) if robust else [])
            + (leaderboard_cells(report.grounding) if grounded else [])
            for agent, report in rows
        ],
    )
    body = [table]
    body += [f'<p class="not-comparable">⚠ {escape(line)}</p>' for line in flag_lines(rows, flags)]
    body.append(pareto_section(rows))  # quality against model cost, for runs through the model door
    for result in comparisons:
        body.append(
            f'<section class="comparison" data-a="{escape(str(result["a"]))}" data-b="{escape(str(result["b"]))}">'
            f"<h2>{escape(str(result['b']))} vs {escape(str(result['a']))} (B − A)</h2>"
            f"{comparison_body(result, 'h3')}</section>"
        )
    return _page(title, "".join(body))
