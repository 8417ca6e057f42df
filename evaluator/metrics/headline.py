"""Headline numbers as functions of column sums (shared by point estimates, CIs and comparisons).

Names carry their status: ``official.*`` (the released FinMCP script's formulas, unrounded here),
``paper.*`` (defined in a paper, not in released code), ``extended.*`` (finmcp's own),
``fintoolbench.*`` / ``fintoolbench_corrected.*``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from finmcp.evaluator.metrics.stats import MetricSpec, Sums


def _div(a: float, b: float) -> float | None:
    return a / b if b else None


def _zdiv(a: float, b: float) -> float:
    return a / b if b > 0 else 0.0


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def _micro(s: Sums, tp: str, pred: str, ref: str) -> tuple[float, float, float]:
    p = _zdiv(s[tp], s[pred])
    r = _zdiv(s[tp], s[ref])
    return p, r, _f1(p, r)


def _mean(col: str):
    return lambda s, n: s[col] / n if n else 0.0


FINMCP_CORE = [
    MetricSpec("official.macro_Precision", ("p",), _mean("p")),
    MetricSpec("official.macro_Recall", ("r",), _mean("r")),
    MetricSpec("official.macro_F1", ("f1",), _mean("f1")),
    MetricSpec("official.micro_Precision", ("tp", "fp"), lambda s, n: _zdiv(s["tp"], s["tp"] + s["fp"])),
    MetricSpec("official.micro_Recall", ("tp", "fn"), lambda s, n: _zdiv(s["tp"], s["tp"] + s["fn"])),
    MetricSpec(
        "official.micro_F1",
        ("tp", "fp", "fn"),
        lambda s, n: _f1(_zdiv(s["tp"], s["tp"] + s["fp"]), _zdiv(s["tp"], s["tp"] + s["fn"])),
    ),
    MetricSpec("official.consist_mean", ("consist",), _mean("consist")),
    MetricSpec("paper.EMR", ("emr",), _mean("emr")),
    MetricSpec("extended.emr_lenient", ("emr_seq",), _mean("emr_seq")),
    MetricSpec(
        "extended.dep_f1_micro",
        ("dep_tp", "dep_pred", "dep_ref"),
        lambda s, n: _micro(s, "dep_tp", "dep_pred", "dep_ref")[2] if s["dep_ref"] else None,
    ),
    MetricSpec("extended.dep_f1_macro", ("dep_f1", "dep_app"), lambda s, n: _div(s["dep_f1"], s["dep_app"])),
    MetricSpec(
        "extended.redundancy_rate", ("dup_excess", "n_pred"), lambda s, n: _zdiv(s["dup_excess"], s["n_pred"])
    ),
    MetricSpec("extended.overcall_rate", ("overcall",), _mean("overcall")),
    MetricSpec(
        "extended.first_error_rel_mean",
        ("first_error_rel", "first_error_any"),
        lambda s, n: _div(s["first_error_rel"], s["first_error_any"]),
    ),
]
FINMCP_ARGS = [
    MetricSpec(
        "extended.exact_call_precision", ("exact", "n_pred"), lambda s, n: _zdiv(s["exact"], s["n_pred"])
    ),
    MetricSpec("extended.exact_call_recall", ("exact", "n_ref"), lambda s, n: _zdiv(s["exact"], s["n_ref"])),
    MetricSpec(
        "extended.exact_call_f1",
        ("exact", "n_pred", "n_ref"),
        lambda s, n: _micro(s, "exact", "n_pred", "n_ref")[2],
    ),
    MetricSpec(
        "extended.arg_f1_micro",
        ("arg_tp", "arg_pred_all", "arg_ref_all"),
        lambda s, n: (
            _micro(s, "arg_tp", "arg_pred_all", "arg_ref_all")[2]
            if s["arg_pred_all"] + s["arg_ref_all"]
            else None
        ),
    ),
    MetricSpec(
        "extended.arg_f1_matched_micro",
        ("arg_tp", "arg_pred", "arg_ref"),
        lambda s, n: _micro(s, "arg_tp", "arg_pred", "arg_ref")[2] if s["arg_pred"] + s["arg_ref"] else None,
    ),
    MetricSpec("extended.arg_f1_macro", ("arg_f1", "arg_app"), lambda s, n: _div(s["arg_f1"], s["arg_app"])),
]


def finmcp_specs(args_known: bool) -> list[MetricSpec]:
    """Headline specs of a FinMCP-style table (argument metrics only when arguments are known)."""
    return FINMCP_CORE + (FINMCP_ARGS if args_known else [])


def table_columns(table: Any) -> dict[str, Sequence[float]]:
    """The score table's columns plus derived ones the specs need."""
    cols: dict[str, Sequence[float]] = dict(table.cols)
    cols["first_error_any"] = [1 if x else 0 for x in table.cols["first_error"]]
    return cols


def fintoolbench_columns(results: Sequence[Mapping[str, Any]]) -> dict[str, list[float]]:
    """Per-record 0/1 and score columns of graded FinToolBench records."""
    cols: dict[str, list[float]] = {
        k: []
        for k in (
            "invoked",
            "passed",
            "score",
            "score_valid",
            "css_num",
            "css_den",
            "eligible",
            "tmr",
            "imr",
            "dmr",
            "tmr_verdicts",
            "imr_verdicts",
            "dmr_verdicts",
        )
    }
    for r in results:
        score: Any = r.get("score_mean")
        valid = isinstance(score, (int, float))
        passed = r.get("pass") == "passed"
        comp = r.get("compliance") or {}
        eligible = bool(comp.get("eligible"))
        cols["invoked"].append(1 if r.get("tool_invoked") else 0)
        cols["passed"].append(1 if passed else 0)
        cols["score"].append(float(score) if valid else 0.0)
        cols["score_valid"].append(1 if valid else 0)
        cols["css_num"].append(float(score) if valid and passed else 0.0)
        cols["css_den"].append(1 if valid and passed else 0)
        cols["eligible"].append(1 if eligible else 0)
        for k in ("tmr", "imr", "dmr"):
            cols[k].append(1 if eligible and comp.get(k) else 0)
            cols[f"{k}_verdicts"].append(int((comp.get("verdicts") or {}).get(k, 0)) if eligible else 0)
    return cols


def _compliance_rate(prefix: str, flag: str) -> MetricSpec:
    """A compliance rate over eligible records; None (n/a) when no verdict was given at all."""
    verdicts = f"{flag}_verdicts"

    def rate(s: Sums, n: int) -> float | None:
        return _div(s[flag], s["eligible"]) if s[verdicts] else None

    return MetricSpec(f"{prefix}.{flag}", (flag, "eligible", verdicts), rate)


def fintoolbench_specs(prefix: str) -> list[MetricSpec]:
    """TIR, TESR, CER, SoftScore, CSS, TMR, IMR, DMR as sums-functions (prefix names the variant)."""
    return [
        MetricSpec(f"{prefix}.tir", ("invoked",), lambda s, n: _div(s["invoked"], n)),
        MetricSpec(f"{prefix}.tesr", ("passed",), lambda s, n: _div(s["passed"], n)),
        MetricSpec(f"{prefix}.cer", ("passed", "invoked"), lambda s, n: _div(s["passed"], s["invoked"])),
        MetricSpec(
            f"{prefix}.soft_score", ("score", "score_valid"), lambda s, n: _div(s["score"], s["score_valid"])
        ),
        MetricSpec(f"{prefix}.css", ("css_num", "css_den"), lambda s, n: _div(s["css_num"], s["css_den"])),
        *(_compliance_rate(prefix, flag) for flag in ("tmr", "imr", "dmr")),
    ]


def point_values(
    columns: Mapping[str, Sequence[float]], specs: Sequence[MetricSpec], n: int
) -> dict[str, Any]:
    """Each spec evaluated on the full sample."""
    needed = sorted({c for m in specs for c in m.columns})
    sums = {c: float(sum(columns[c])) for c in needed}
    return {m.name: m.fn(sums, n) for m in specs}
