"""The grounded-answers section of a report (Markdown and HTML) and its leaderboard cells."""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import Any

from finmcp.evaluator.reports.markdown_text import md_code, md_text

RATES = (
    ("claim precision", "claim_precision"),
    ("invented-number rate", "invented_number_rate"),
    ("stale-data rate", "stale_data_rate"),
)
LEADERBOARD_COLUMNS = ("CP", "INV", "STALE")
"""Leaderboard columns: claim precision, invented-number rate, stale-data rate (with CIs)."""
MAX_MD_ANSWERS = 30


def rate_text(entry: dict[str, Any] | None) -> str:
    """``0.9876 [0.97, 0.99]``, or ``n/a`` when undefined."""
    if not entry or entry.get("value") is None:
        return "n/a"
    lo, hi = entry.get("lo"), entry.get("hi")
    ci = f" [{lo:.2f}, {hi:.2f}]" if lo is not None and hi is not None else ""
    return f"{entry['value']:.4f}{ci}"


def leaderboard_cells(block: dict[str, Any] | None) -> list[str]:
    """The grounded cells of a leaderboard row (``—`` without a grounding block)."""
    if block is None:
        return ["—"] * len(LEADERBOARD_COLUMNS)
    return [rate_text(block.get(key)) for _, key in RATES]


def totals_line(block: dict[str, Any]) -> str:
    """One sentence: answers, claims and their verdicts."""
    return (
        f"{block['answers']} answers, {block['claims']} claims: {block['supported']} supported, "
        f"{block['unsupported']} unsupported, {block['stale']} stale, {block['not_checkable']} not checkable "
        f"({block['unreadable_answers']} unreadable answers); {block['numeric_claims']} checkable numeric claims"
    )


def _flagged(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in answer["claims"] if c["verdict"] in ("unsupported", "stale", "not_checkable")]


def grounding_markdown(block: dict[str, Any]) -> list[str]:
    """The report's ``## Grounded answers`` section: rates with CIs, totals, flagged claims per answer."""
    lines = [
        "## Grounded answers",
        "",
        f"Claims of the final answers checked against the sample's tool outputs and the world (seed "
        f'{block["world_seed"]}); docs/evaluator.md "Grounded answers". {totals_line(block)}.',
        "",
        "| metric | value [95% CI] |",
        "|---|---|",
        *(f"| {label} | {rate_text(block.get(key))} |" for label, key in RATES),
        "",
    ]
    listed = [a for a in block.get("per_answer", []) if _flagged(a)][:MAX_MD_ANSWERS]
    if listed:
        lines += ["| sample | turn | claim | verdict | evidence |", "|---|---|---|---|---|"]
        for answer in listed:
            for claim in _flagged(answer):
                lines.append(
                    f"| {md_code(answer['sample'])} | {answer['turn']} | {md_text(claim['text'])} | "
                    f"{claim['verdict']} | {md_text(claim['evidence'])} |"
                )
        lines.append("")
    return lines


def grounding_html(block: dict[str, Any], chart: Callable[..., str]) -> str:
    """The HTML section: a bar chart of the rates with CI whiskers, totals, each listed answer's claims."""
    group: dict[str, Any] = {}
    for label, key in RATES:
        entry = block.get(key) or {}
        group[label] = entry.get("value") or 0.0
        group[f"{label}_lo"], group[f"{label}_hi"] = entry.get("lo"), entry.get("hi")
    parts = [
        "<h2>Grounded answers</h2>",
        f"<p>{escape(totals_line(block))}; world seed {block['world_seed']}.</p>",
        f'<div class="chart">{chart({"run": group}, [label for label, _ in RATES], "Grounded answers with 95% CIs")}</div>',
    ]
    rows = []
    for answer in block.get("per_answer", []):
        for claim in answer["claims"]:
            rows.append(
                f"<tr><td><code>{escape(str(answer['sample']))}</code></td><td>{answer['turn']}</td>"
                f"<td>{escape(claim['text'])}</td><td>{escape(claim['kind'])}</td>"
                f"<td>{escape(claim['verdict'])}</td><td>{escape(claim['evidence'])}</td></tr>"
            )
    if rows:
        parts.append(
            "<details><summary>Claims and evidence (answers with a flagged claim first)</summary><table>"
            "<tr><th>sample</th><th>turn</th><th>claim</th><th>kind</th><th>verdict</th><th>evidence</th></tr>"
            + "".join(rows)
            + "</table></details>"
        )
    return "".join(parts)
