"""FinMCP-Bench metrics as the released ``eval/evaluation.py`` computes them, plus the paper's EMR.

Official (reproduced exactly, including its rounding to 4 decimals and its dictionary keys):

* tool names are taken from every assistant ``tool_calls`` (gold: ``messages``; model: ``messages_pred``);
* TP/FP/FN by multiset counting (``Counter`` intersection / differences);
* per-sample P = TP/(TP+FP), R = TP/(TP+FN), F1 = 2PR/(P+R), each 0 when its denominator is 0;
* macro = mean of the per-sample values; micro = the same formulas on pooled TP/FP/FN;
* ``consist`` = the flattened ordered name lists are equal;
* grouped by level-1 scenario (``scenery.split('-')[0].strip()``), ``diff_level.level`` and ``task``;
* samples whose ``error`` is truthy are dropped before scoring.

Paper (not in the released code): EMR = the call *groups* of every turn match exactly, order ignored
inside a group (parallel calls), order kept between groups.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from finmcp.evaluator.inputs.model import Groups

OFFICIAL_KEYS = (
    "macro_Precision",
    "macro_Recall",
    "macro_F1",
    "micro_Precision",
    "micro_Recall",
    "micro_F1",
    "N",
    "consist_mean",
)


def names_of(turns: Sequence[Groups]) -> list[str]:
    """Flattened tool names in call order over all turns and groups."""
    return [c.tool for groups in turns for g in groups for c in g]


def multiset_counts(pred: Sequence[str], gold: Sequence[str]) -> tuple[int, int, int]:
    """(TP, FP, FN) of two name lists counted as multisets (same as ``Counter`` & and -)."""
    remaining: dict[str, int] = {}
    for name in gold:
        remaining[name] = remaining.get(name, 0) + 1
    tp = 0
    for name in pred:
        left = remaining.get(name, 0)
        if left:
            remaining[name] = left - 1
            tp += 1
    return tp, len(pred) - tp, len(gold) - tp


def safe_div(a: float, b: float) -> float:
    """a / b, or 0 when b is not positive (the official ``safe_div``)."""
    return a / b if b > 0 else 0


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    """Precision, recall, F1 with the official zero conventions."""
    p = safe_div(tp, tp + fp)
    r = safe_div(tp, tp + fn)
    return p, r, safe_div(2 * p * r, p + r)


def paper_emr(pred_turns: Sequence[Groups], gold_turns: Sequence[Groups]) -> int:
    """1 when every turn has the same groups in the same order (names; order free inside a group)."""
    n = max(len(pred_turns), len(gold_turns))
    for t in range(n):
        pg = pred_turns[t] if t < len(pred_turns) else []
        gg = gold_turns[t] if t < len(gold_turns) else []
        if len(pg) != len(gg):
            return 0
        for a, b in zip(pg, gg, strict=True):
            if len(a) != len(b):
                return 0
            if len(a) == 1:
                if a[0].tool != b[0].tool:
                    return 0
            elif sorted(c.tool for c in a) != sorted(c.tool for c in b):
                return 0
    return 1


def _block(values: list[tuple[int, int, int, int]]) -> dict[str, Any]:
    """One official result dict from (TP, FP, FN, consist) tuples, rounded like the script."""
    ps: list[float] = []
    rs: list[float] = []
    f1s: list[float] = []
    tp_sum = fp_sum = fn_sum = consist_sum = 0
    for tp, fp, fn, consist in values:
        p, r, f1 = prf(tp, fp, fn)
        ps.append(p)
        rs.append(r)
        f1s.append(f1)
        tp_sum += tp
        fp_sum += fp
        fn_sum += fn
        consist_sum += consist
    return block_from_sums(sum(ps), sum(rs), sum(f1s), tp_sum, fp_sum, fn_sum, consist_sum, len(values))


def block_from_sums(
    p_sum: float, r_sum: float, f1_sum: float, tp: int, fp: int, fn: int, consist: int, n: int
) -> dict[str, Any]:
    """The official dict from sums of per-sample values and pooled counts (rounded to 4 decimals)."""
    micro_p, micro_r, micro_f1 = prf(tp, fp, fn)
    return {
        "macro_Precision": round(p_sum / n, 4) if n else 0,
        "macro_Recall": round(r_sum / n, 4) if n else 0,
        "macro_F1": round(f1_sum / n, 4) if n else 0,
        "micro_Precision": round(micro_p, 4),
        "micro_Recall": round(micro_r, 4),
        "micro_F1": round(micro_f1, 4),
        "N": n,
        "consist_mean": round(consist / n, 4) if n else 0,
    }


def compute_official(records: Iterable[tuple[str, str, str, int, int, int, int]]) -> dict[str, Any]:
    """Overall and grouped official metrics from (level1, difficulty, task, TP, FP, FN, consist) rows.

    Group dictionaries keep first-seen order, as the script's ``defaultdict`` does.
    """
    allv: list[tuple[int, int, int, int]] = []
    level1: dict[str, list[tuple[int, int, int, int]]] = {}
    difficulty: dict[str, list[tuple[int, int, int, int]]] = {}
    task: dict[str, list[tuple[int, int, int, int]]] = {}
    for lvl, diff, tsk, tp, fp, fn, consist in records:
        v = (tp, fp, fn, consist)
        allv.append(v)
        level1.setdefault(lvl, []).append(v)
        difficulty.setdefault(diff, []).append(v)
        task.setdefault(tsk, []).append(v)
    return {
        "overall": _block(allv),
        "level1": {k: _block(v) for k, v in level1.items()},
        "difficulty": {k: _block(v) for k, v in difficulty.items()},
        "task": {k: _block(v) for k, v in task.items()},
    }
