"""The recovery section of a robustness run's report (Markdown and HTML) and its leaderboard cells.

The block is :func:`evaluator.metrics.recovery.recovery_metrics`'s; rates are shown with their 95%
bootstrap CIs, one row per fault kind, then the ``signalled`` and ``silent`` groups and ``all``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from html import escape
from typing import Any

COLUMNS = (
    ("recovered", "recovered"),
    ("transient_recovered", "transient recovered"),
    ("appropriate_retry", "appropriate retry"),
    ("retry_after_honoured", "Retry-After honoured"),
)
LEADERBOARD = (
    ("recovered (transient)", ("by_kind", "signalled", "transient_recovered")),
    ("gave up cleanly", ("gave_up_cleanly",)),
    ("ΔTF1", ("delta_vs_clean", "TF1")),
    ("ΔEMR", ("delta_vs_clean", "EMR")),
)
"""Leaderboard columns of a robustness row: label and the path of the estimate in the block."""


def estimate(entry: Mapping[str, Any] | None, key: str = "value") -> str:
    """``0.962 [0.900, 1.000]`` (``–`` when undefined)."""
    if not entry or entry.get(key) is None:
        return "–"
    text = f"{entry[key]:.3f}"
    if entry.get("lo") is not None and entry.get("hi") is not None:
        text += f" [{entry['lo']:.3f}, {entry['hi']:.3f}]"
    return text


def _at(block: Mapping[str, Any] | None, path: tuple[str, ...]) -> Mapping[str, Any] | None:
    value: Any = block
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value if isinstance(value, Mapping) else None


def leaderboard_cells(block: Mapping[str, Any] | None) -> list[str]:
    """The robustness columns of one leaderboard row (``–`` for a clean run)."""
    cells = []
    for _, path in LEADERBOARD:
        entry = _at(block, path)
        cells.append(estimate(entry, "diff" if path[0] == "delta_vs_clean" else "value"))
    return cells


def rows(block: Mapping[str, Any]) -> list[list[str]]:
    """One row per fault kind (and group): kind, faults (transient/permanent), then :data:`COLUMNS`."""
    out = []
    for kind, entry in (block.get("by_kind") or {}).items():
        counts = f"{entry['faults']} ({entry['transient']}/{entry['permanent']})"
        out.append([kind, counts, *(estimate(entry.get(key)) for key, _ in COLUMNS)])
    return out


def _summary(block: Mapping[str, Any]) -> list[str]:
    delta = block.get("delta_vs_clean") or {}
    lines = [
        f"- gave up cleanly: {estimate(block.get('gave_up_cleanly'))} of {block['gave_up_cleanly']['samples']}"
        " samples with an unrecovered signalled fault",
        f"- repeated calls that may act: {block['repeated_acting']['pairs']} (tool, arguments) pairs",
    ]
    if delta:
        lines.append(
            f"- vs clean run `{delta.get('clean_run')}` ({delta.get('paired_samples')} paired samples):"
            f" ΔTF1 {estimate(delta.get('TF1'), 'diff')}, ΔEMR {estimate(delta.get('EMR'), 'diff')}"
        )
    return lines


def recovery_markdown(block: Mapping[str, Any] | None) -> list[str]:
    """The ``## Recovery under faults`` section (nothing for a clean run)."""
    if not block:
        return []
    header = ["kind", "faults (transient/permanent)", *(label for _, label in COLUMNS)]
    lines = ["## Recovery under faults", "", f"{block['faults']} faults in {block['samples']} samples.", ""]
    lines += ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows(block)]
    return [*lines, "", *_summary(block), ""]


def recovery_html(block: Mapping[str, Any] | None, chart: Callable[..., str]) -> str:
    """The recovery section as HTML: a bar chart of recovery per kind with CIs, and the table."""
    if not block:
        return ""
    groups = {}
    for kind, entry in (block.get("by_kind") or {}).items():
        values: dict[str, Any] = {}
        for key, label in COLUMNS[:3]:
            rate = entry.get(key) or {}
            values[label], values[f"{label}_lo"], values[f"{label}_hi"] = (
                rate.get("value"),
                rate.get("lo"),
                rate.get("hi"),
            )
        groups[kind] = values
    header = ["kind", "faults (transient/permanent)", *(label for _, label in COLUMNS)]
    table = "<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in header) + "</tr>"
    table += "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in rows(block))
    items = "".join(f"<li>{escape(line[2:])}</li>" for line in _summary(block))
    plot = chart(groups, [label for _, label in COLUMNS[:3]], "Recovery per fault kind with 95% CIs", 640)
    return (
        f"<h2>Recovery under faults</h2><p>{block['faults']} faults in {block['samples']} samples.</p>"
        f"{plot}{table}</table><ul>{items}</ul>"
    )
