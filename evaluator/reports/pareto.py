"""Quality against cost on the leaderboard: a scatter of the agents' TF1 over their model cost, the
Pareto front drawn through the agents no other beats on both (cheaper or equal, and better or equal).

The cost is the run's model-door cost in dollars (``model_usage.totals.cost_usd``, with
``finmcp-eval score --prices``), else its model tokens (input + output) when some run has no price;
runs without model-door exchanges are left out (they have no cost to place). Inline SVG, no scripts.
"""

from __future__ import annotations

from html import escape

from finmcp.evaluator.reports.html import svg, svg_text
from finmcp.evaluator.reports.model import Report

Point = tuple[str, float, float]  # agent, cost, quality


def cost_points(rows: list[tuple[str, Report]]) -> tuple[list[Point], str]:
    """``(points, axis label)``: each agent with model usage, at (cost, TF1); dollars when every one is priced."""
    usable = [
        (agent, report.model_usage, report.official_numbers.overall.macro_F1)
        for agent, report in rows
        if report.model_usage
    ]
    if not usable:
        return [], ""
    if all(u["totals"]["cost_usd"] is not None for _, u, _ in usable):
        return [(a, float(u["totals"]["cost_usd"]), float(q)) for a, u, q in usable], "model cost ($)"
    tokens = [
        (a, float(u["totals"]["input_tokens"] + u["totals"]["output_tokens"]), float(q)) for a, u, q in usable
    ]
    return tokens, "model tokens (input + output)"


def pareto_front(points: list[Point]) -> list[Point]:
    """The points no other dominates (lower or equal cost and higher or equal quality, one strictly), by cost."""
    front = []
    for p in points:
        dominated = any(
            q[1] <= p[1] and q[2] >= p[2] and (q[1] < p[1] or q[2] > p[2]) for q in points if q is not p
        )
        if not dominated:
            front.append(p)
    return sorted(front, key=lambda p: (p[1], -p[2]))


def pareto_svg(points: list[Point], x_label: str, width: int = 560, height: int = 320) -> str:
    """The scatter with the front as a line; each point labelled with its agent."""
    left, right, top, bottom = 56, 24, 24, 44
    pw, ph = width - left - right, height - top - bottom
    xmax = max(p[1] for p in points) or 1.0
    ymax = max(1.0, max(p[2] for p in points))

    def x(v: float) -> float:
        return left + pw * v / (xmax * 1.05)

    def y(v: float) -> float:
        return top + ph * (1 - v / ymax)

    parts = [
        f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#4a5568"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="#4a5568"/>',
        svg_text(left + pw / 2, height - 8, x_label, "middle", 10),
        svg_text(14, top + ph / 2, "TF1", "middle", 10),
    ]
    for f in (0.0, 0.5, 1.0):
        parts.append(svg_text(left - 6, y(f * ymax) + 4, f"{f * ymax:.2g}", "end", 9))
        parts.append(svg_text(x(f * xmax), top + ph + 14, f"{f * xmax:.3g}", "middle", 9))
    front = pareto_front(points)
    if len(front) > 1:
        path = " ".join(f"{x(c):.1f},{y(q):.1f}" for _, c, q in front)
        parts.append(
            f'<polyline class="front" points="{path}" fill="none" stroke="#2b6cb0" stroke-dasharray="4 3"/>'
        )
    names = {p[0] for p in front}
    for agent, cost, quality in points:
        on = agent in names
        parts.append(
            f'<circle class="agent{" on-front" if on else ""}" data-agent="{escape(agent)}" cx="{x(cost):.1f}"'
            f' cy="{y(quality):.1f}" r="5" fill="{"#2b6cb0" if on else "#a0aec0"}"/>'
        )
        parts.append(svg_text(x(cost) + 8, y(quality) - 6, agent, "start", 10))
    return svg(width, height, "".join(parts), f"TF1 against {x_label}").replace(
        "<svg ", '<svg class="pareto" ', 1
    )


def pareto_section(rows: list[tuple[str, Report]]) -> str:
    """The leaderboard's "Quality against cost" section ("" when no run has model usage)."""
    points, label = cost_points(rows)
    if not points:
        return ""
    front = ", ".join(p[0] for p in pareto_front(points))
    note = f"<p>Pareto front (no agent is both cheaper and better): {escape(front)}.</p>"
    return f'<section class="pareto"><h2>Quality against cost</h2>{pareto_svg(points, label)}{note}</section>'
