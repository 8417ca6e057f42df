"""Markdown report: a type x metric table like FinMCP-Bench's Table 2, the official block, breakdowns.

Every text that did not come from this module (run ids, sample ids, benchmark and file names, group
values of the references, warnings) goes through :mod:`evaluator.reports.markdown_text`: a code span
no backtick can close (:func:`md_code`) or escaped inline text (:func:`md_text`, in table cells), so a
previewer that renders raw HTML shows it as text.
"""

from __future__ import annotations

from typing import Any

from finmcp.evaluator.inputs.fingerprint import COMPARED, not_comparable_text
from finmcp.evaluator.metrics.finmcp import OFFICIAL_KEYS
from finmcp.evaluator.reports.behaviour import summary_markdown
from finmcp.evaluator.reports.markdown_text import md_code, md_text
from finmcp.evaluator.reports.model import (
    Estimate,
    FintoolbenchBlock,
    OfficialBlock,
    OfficialNumbers,
    Report,
    SampleCounts,
)
from finmcp.evaluator.reports.model_usage import markdown_lines as model_usage_lines
from finmcp.evaluator.reports.recovery import recovery_markdown

TYPE_ORDER = ("single_tool", "multi_tool", "multi_turn")
TABLE2 = (
    ("TR", "official.macro_Recall"),
    ("TP", "official.macro_Precision"),
    ("TF1", "official.macro_F1"),
    ("micro F1", "official.micro_F1"),
    ("consist", "official.consist_mean"),
    ("EMR (paper)", "paper.EMR"),
    ("EMR lenient", "extended.emr_lenient"),
    ("exact-call F1", "extended.exact_call_f1"),
    ("arg F1", "extended.arg_f1_micro"),
    ("dep F1", "extended.dep_f1_micro"),
)


def fmt(value: Any, digits: int = 4) -> str:
    """A number with fixed decimals; 'n/a' for None."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def official_cells(result: OfficialNumbers) -> list[str]:
    """An official result as table cells (the script's 0 for empty denominators shown as 0.0000)."""
    numbers = result.model_dump()
    return [str(numbers[k]) if k == "N" else fmt(float(numbers[k])) for k in OFFICIAL_KEYS]


def official_rows(block: OfficialBlock) -> list[list[str]]:
    """The official block's table rows: overall, then each group's values (group, value, numbers)."""
    rows = [["overall", ""] + official_cells(block.overall)]
    for group in ("level1", "difficulty", "task"):
        rows += [[group, value] + official_cells(numbers) for value, numbers in getattr(block, group).items()]
    return rows


def _escaped(rows: list[list[str]], columns: int) -> list[list[str]]:
    """``rows`` with their first ``columns`` cells (names from the inputs) as Markdown text."""
    return [[md_text(cell) for cell in row[:columns]] + row[columns:] for row in rows]


def estimate_text(entry: Estimate | None) -> str:
    """A headline number with its CI in three decimals (``–`` when undefined), as leaderboards show it."""
    if entry is None or entry.value is None:
        return "–"
    text = f"{entry.value:.3f}"
    if entry.lo is not None and entry.hi is not None:
        text += f" [{entry.lo:.3f}, {entry.hi:.3f}]"
    return text


def paired_rows(result: dict[str, Any]) -> list[list[str]]:
    """A comparison's paired-bootstrap rows: metric, A, B, B - A, 95% CI, p."""
    return [
        [
            name,
            fmt(d["a"]),
            fmt(d["b"]),
            fmt(d["diff"]),
            f"[{fmt(d['lo'])}, {fmt(d['hi'])}]",
            fmt(d["p_value"]),
        ]
        for name, d in result["paired_bootstrap"].items()
    ]


def mcnemar_rows(result: dict[str, Any]) -> list[list[str]]:
    """A comparison's McNemar rows: metric, A only, B only, p, method."""
    return [
        [name, str(m["a_only"]), str(m["b_only"]), fmt(m["p_value"]), m["method"]]
        for name, m in result["mcnemar"].items()
    ]


FINTOOLBENCH_METRICS = ("tir", "tesr", "cer", "soft_score", "css", "tmr", "imr", "dmr")


def fintoolbench_value(metrics: dict[str, Any], name: str) -> str:
    """One FinToolBench number of a variant's ``metrics`` block; a rate that is n/a says why
    (``n/a (no tool metadata)``), so a metric computed over nothing never reads as a number."""
    com = metrics.get("com", {})
    value = {**metrics.get("cap", {}), **com}.get(name)
    reason = (com.get("na_reason") or {}).get(name)
    return f"n/a ({reason})" if value is None and reason else fmt(value)


def tool_metadata_line(block: FintoolbenchBlock) -> str:
    """How many tools had finance tags for TMR/IMR/DMR, and from where."""
    source = block.tool_metadata_source
    return f"tools with metadata: {block.tool_metadata}" + (f" ({source})" if source else "")


SAMPLE_COLUMNS = ("scored", "missing")
"""The leaderboard's sample columns: samples scored on their predictions, and samples missing."""


def sample_cells(report: Report) -> list[str]:
    """A leaderboard row's sample cells: scored (of the references) and missing (and how counted)."""
    counts = SampleCounts.of_report(report)
    missing = str(counts.missing)
    if counts.missing:
        missing += " (as empty)" if counts.missing_as == "empty" else " (left out)"
    return [f"{counts.scored} of {counts.references}", missing]


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def table2_columns(report: Report) -> list[tuple[str, str]]:
    """The Table 2 columns (label, headline metric) the report has."""
    return [(label, key) for label, key in TABLE2 if key in report.headline]


def type_rows(report: Report, overall: str) -> list[list[str]]:
    """Table 2's rows: one per sample type (the paper's order first), then ``overall``."""
    by_type, cols = report.by_type, table2_columns(report)
    rows = []
    for t in [t for t in TYPE_ORDER if t in by_type] + [t for t in by_type if t not in TYPE_ORDER]:
        rows.append([md_text(t), str(by_type[t]["N"])] + [fmt(by_type[t].get(k)) for _, k in cols])
    rows.append([overall, str(report.coverage.scored)] + [fmt(report.headline[k].value) for _, k in cols])
    return rows


def _table2(report: Report) -> list[str]:
    return _table(["type", "N"] + [c for c, _ in table2_columns(report)], type_rows(report, "**overall**"))


def _official(block: OfficialBlock, title: str) -> list[str]:
    rows = _escaped(official_rows(block), 2)
    return [f"## {title}", ""] + _table(["group", "value", *OFFICIAL_KEYS], rows) + [""]


def _headline(report: Report) -> list[str]:
    rows = []
    for name, h in report.headline.items():
        ci = f"[{fmt(h.lo)}, {fmt(h.hi)}]" if h.lo is not None else "n/a"
        rows.append([name, fmt(h.value), ci])
    return (
        ["## Headline numbers with 95% bootstrap CIs (stratified by type)", ""]
        + _table(["metric", "value", "95% CI"], rows)
        + [""]
    )


def _breakdown(report: Report, key: str, title: str) -> list[str]:
    groups: dict[str, dict[str, Any]] = getattr(report, key)
    if not groups:
        return []
    cols = table2_columns(report)
    rows = [[md_text(g), str(v["N"])] + [fmt(v.get(k)) for _, k in cols] for g, v in groups.items()]
    return [f"## By {title}", ""] + _table([title, "N"] + [c for c, _ in cols], rows) + [""]


def _fintoolbench(block: FintoolbenchBlock) -> list[str]:
    out = [
        "## FinToolBench",
        "",
        f"Judge: {md_code(block.judge)} (repeats {block.judge_repeats}); {md_text(tool_metadata_line(block))}.",
        "",
    ]
    names = FINTOOLBENCH_METRICS
    rows = []
    for variant in ("fintoolbench", "fintoolbench_corrected"):
        m = getattr(block, variant).metrics
        ci = getattr(block, variant).ci
        rows.append(
            [variant]
            + [
                fintoolbench_value(m, n)
                + (
                    f" [{fmt(ci[f'{variant}.{n}']['lo'], 3)}, {fmt(ci[f'{variant}.{n}']['hi'], 3)}]"
                    if ci.get(f"{variant}.{n}", {}).get("lo") is not None
                    else ""
                )
                for n in names
            ]
        )
    return (
        out
        + _table(["variant", *(n.upper() if n != "soft_score" else "SoftScore" for n in names)], rows)
        + [""]
    )


def render_markdown(report: Report) -> str:
    """The whole Markdown report."""
    inputs, cov = report.inputs, report.coverage
    lines = [
        f"# finmcp-eval report ({md_text(report.benchmark)})",
        "",
        f"- references: {md_code(inputs.references)} ({md_text(inputs.reference_format)}),"
        f" {cov.references} samples",
        f"- predictions: {md_code(inputs.predictions)} ({md_text(inputs.prediction_format)})"
        + (f", run {md_code(inputs.run_id)}" if inputs.run_id else ""),
        f"- coverage: {SampleCounts.of_report(report).line()}"
        + (
            f"; predicted samples matching no reference: {cov.predictions_not_in_references_count}"
            if cov.predictions_not_in_references_count
            else ""
        ),
        f"- bootstrap: {inputs.bootstrap} resamples, seed {inputs.seed}",
        "",
        "TR/TP/TF1 are the official script's macro recall/precision/F1; consist is its ordered-list match. "
        "EMR (paper) ignores order inside parallel groups. `extended.*` numbers are finmcp's own.",
        "",
        "## Results by sample type",
        "",
        *_table2(report),
        "",
    ]
    if report.official is not None:
        lines += _official(
            report.official, "Official FinMCP-Bench evaluation (exact, rounded like the script)"
        )
    if report.tool_selection is not None:
        lines += _official(
            report.tool_selection, "Tool selection (FinMCP formulas on select_tools; not official)"
        )
    lines += _headline(report)
    lines += _breakdown(report, "by_scenario", "scenario")
    lines += _breakdown(report, "by_difficulty", "difficulty")
    hist = report.first_error_histogram
    if hist:
        lines += (
            ["## First wrong reference group", ""]
            + _table([md_text(k) for k in hist], [[str(v) for v in hist.values()]])
            + [""]
        )
    if report.trials is not None:
        t = report.trials
        lines += [f"## Repeated trials ({t.trials})", ""]
        lines += _table([md_text(k) for k in t.pass_hat_k], [[fmt(v) for v in t.pass_hat_k.values()]]) + [""]
    if report.fintoolbench is not None:
        lines += _fintoolbench(report.fintoolbench)
    if cov.dropped:
        dropped = [f"- {md_code(d.id)}: {md_text(d.reason)}" for d in cov.dropped[:50]]
        lines += ["## Dropped samples", "", *dropped, ""]
    lines += summary_markdown(report.agent_behaviour or {})
    lines += recovery_markdown(report.recovery)
    lines += model_usage_lines(report.model_usage)
    if report.grounding is not None:
        from finmcp.evaluator.reports.grounding import grounding_markdown

        lines += grounding_markdown(report.grounding)
    if report.warnings:
        lines += ["## Warnings", ""] + [f"- {md_text(w)}" for w in report.warnings[:50]] + [""]
    return "\n".join(lines).rstrip() + "\n"


def compare_sample_lines(result: dict[str, Any]) -> list[str]:
    """A compare result's per-run sample counts as Markdown bullets (none when it has no ``samples``)."""
    samples = result.get("samples") or {}
    lines = [
        f"- {side.upper()}: {SampleCounts(**samples[side]).line()}" for side in ("a", "b") if side in samples
    ]
    return lines + [""] if lines else []


def not_comparable(result: dict[str, Any]) -> str | None:
    """``not comparable: tools differ`` when the two runs' fingerprints differ (else None)."""
    differ = (result.get("fingerprints") or {}).get("differ")
    return not_comparable_text(differ) if differ else None


def fingerprint_rows(result: dict[str, Any]) -> list[list[str]]:
    """One row per compared fingerprint part: ``part, A, B, same?`` (the table shown when they differ)."""
    block = result.get("fingerprints") or {}
    a, b = block.get("a") or {}, block.get("b") or {}
    rows = []
    for key, label in COMPARED.items():
        va, vb = a.get(key), b.get(key)
        same = "unknown" if va is None or vb is None else "same" if va == vb else "DIFFERENT"
        rows.append([label, _short(va), _short(vb), same])
    return rows


def _short(value: Any) -> str:
    if isinstance(value, dict):
        value = value.get("sha256") or value
    text = "-" if value is None else str(value)
    return text[:19] + "…" if text.startswith("sha256:") else text[:12] + "…" if len(text) > 40 else text


def render_compare_markdown(result: dict[str, Any]) -> str:
    """Markdown of a paired comparison of two runs (marked *not comparable* when their fingerprints differ)."""
    flag = not_comparable(result)
    lines = [
        f"# finmcp-eval compare: A = {md_code(result['a'])} vs B = {md_code(result['b'])}",
        "",
    ]
    if flag:
        lines += [
            f"**{flag.capitalize()}.** A and B were measured on different things: the deltas below are"
            " shown, but they are not a like-for-like comparison.",
            "",
        ]
        lines += _table(["fingerprint", "A", "B", ""], fingerprint_rows(result)) + [""]
    lines += [
        f"Paired samples: {result['paired_samples']}; bootstrap {result['bootstrap']} (seed {result['seed']}).",
        "",
        *compare_sample_lines(result),
        "## Paired bootstrap (B - A)",
        "",
    ]
    delta = f"B - A ({flag})" if flag else "B - A"
    lines += _table(["metric", "A", "B", delta, "95% CI", "p"], paired_rows(result)) + [
        "",
        "## McNemar",
        "",
    ]
    lines += _table(["metric", "A only", "B only", "p", "method"], mcnemar_rows(result))
    if result.get("warnings"):
        lines += ["", "## Warnings", ""] + [f"- {md_text(w)}" for w in result["warnings"][:50]]
    return "\n".join(lines) + "\n"
