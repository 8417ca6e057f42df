"""Score (reference, prediction) pairs into a columnar table of per-sample numbers.

The table keeps one array per statistic so that a million samples stay compact and bootstrap
resampling only sums precomputed per-sample values.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from finmcp.evaluator.inputs.model import Prediction, Reference
from finmcp.evaluator.metrics.argnorm import Canonicalizer
from finmcp.evaluator.metrics.extended import ExtendedCounts, extended_from_flat, flatten
from finmcp.evaluator.metrics.finmcp import multiset_counts, paper_emr

INT_COLUMNS = ("tp", "fp", "fn", "consist", "emr", *ExtendedCounts._fields, "arg_app", "dep_app", "overcall")
FLOAT_COLUMNS = ("p", "r", "f1", "arg_f1", "dep_f1", "first_error_rel")
META_COLUMNS = ("id", "type", "level1", "difficulty", "task", "trial")


@dataclass
class ScoreTable:
    """Per-sample statistics, one column per name (see INT_COLUMNS / FLOAT_COLUMNS)."""

    meta: dict[str, list[Any]] = field(default_factory=lambda: {k: [] for k in META_COLUMNS})
    cols: dict[str, array] = field(default_factory=dict)
    args_known: bool = True
    """False when no reference carries arguments (argument-based metrics are then undefined)."""

    def __post_init__(self) -> None:
        for name in INT_COLUMNS:
            self.cols.setdefault(name, array("q"))
        for name in FLOAT_COLUMNS:
            self.cols.setdefault(name, array("d"))

    def __len__(self) -> int:
        return len(self.cols["tp"])

    def row(self, i: int) -> dict[str, Any]:
        """All statistics of sample i as a dict."""
        out = {k: self.meta[k][i] for k in META_COLUMNS}
        out.update({k: self.cols[k][i] for k in INT_COLUMNS + FLOAT_COLUMNS})
        return out

    def extend(self, other: ScoreTable) -> None:
        """Append another table's rows (used to merge shards)."""
        for k in META_COLUMNS:
            self.meta[k].extend(other.meta[k])
        for k, col in other.cols.items():
            self.cols[k].extend(col)
        self.args_known = self.args_known and other.args_known


def _f1(tp: int, pred: int, ref: int) -> float:
    p = tp / pred if pred else 0.0
    r = tp / ref if ref else 0.0
    return 2 * p * r / (p + r) if p + r else 0.0


FLUSH_ROWS = 8192


class Scorer:
    """Appends scored samples to a ScoreTable; create one per table.

    Rows are buffered as tuples and moved into the column arrays in blocks (``array.extend`` runs in C).
    """

    def __init__(self, canon: Canonicalizer | None = None) -> None:
        self.canon = canon or Canonicalizer()
        self.table = ScoreTable()
        self._any_args = False
        self._rows: list[tuple] = []
        self._targets = [self.table.cols[k] for k in INT_COLUMNS + FLOAT_COLUMNS] + [
            self.table.meta[k] for k in META_COLUMNS
        ]

    def add(self, ref: Reference, pred: Prediction | None) -> None:
        """Score one pair (``pred`` None = the agent made no call) and append it."""
        self.append(self.score(ref, pred))

    def append(self, row: tuple) -> None:
        """Append a row :meth:`score` made (of this scorer or another with the same canonicalizer)."""
        self._rows.append(row)
        if len(self._rows) >= FLUSH_ROWS:
            self._flush()

    def score(self, ref: Reference, pred: Prediction | None) -> tuple:
        """The row of one pair, not appended (a streaming scorer keeps rows until it knows their order)."""
        gold_turns = [t.calls for t in ref.turns]
        pred_turns = pred.turns if pred is not None else []
        gold_flat, pred_flat = flatten(gold_turns), flatten(pred_turns)
        gold_names, pred_names = gold_flat[2], pred_flat[2]
        tp, fp, fn = multiset_counts(pred_names, gold_names)
        p = tp / (tp + fp) if tp + fp > 0 else 0
        r = tp / (tp + fn) if tp + fn > 0 else 0
        f1 = 2 * p * r / (p + r) if p + r > 0 else 0
        emr = paper_emr(pred_turns, gold_turns)
        args_known = ref.args_known
        ext = extended_from_flat(pred_turns, gold_turns, pred_flat, gold_flat, args_known, self.canon, emr)
        if args_known:
            self._any_args = True
        arg_all = ext.arg_pred_all + ext.arg_ref_all
        arg_app = 1 if args_known and arg_all > 0 else 0
        dep_app = 1 if ext.dep_ref > 0 else 0
        return (
            tp,
            fp,
            fn,
            1 if pred_names == gold_names else 0,
            emr,
            *ext,
            arg_app,
            dep_app,
            1 if ext.n_pred > ext.n_ref else 0,
            p,
            r,
            f1,
            2 * ext.arg_tp / arg_all if arg_app else 0.0,
            _f1(ext.dep_tp, ext.dep_pred, ext.dep_ref) if dep_app else 0.0,
            ext.first_error / ext.n_groups if ext.first_error and ext.n_groups else 0.0,
            ref.id,
            ref.type,
            ref.level1,
            ref.difficulty,
            ref.task,
            pred.trial if pred is not None else 0,
        )

    def _flush(self) -> None:
        if not self._rows:
            return
        for target, column in zip(self._targets, zip(*self._rows, strict=True), strict=True):
            target.extend(column)
        self._rows = []

    def finish(self) -> ScoreTable:
        """The filled table."""
        self._flush()
        self.table.args_known = self._any_args
        return self.table


def score_pairs(
    pairs: Iterable[tuple[Reference, Prediction | None]], canon: Canonicalizer | None = None
) -> ScoreTable:
    """Score every pair into a new table."""
    scorer = Scorer(canon)
    add = scorer.add
    for ref, pred in pairs:
        add(ref, pred)
    return scorer.finish()


def official_rows(table: ScoreTable, indices: Iterable[int] | None = None) -> Iterator[tuple]:
    """(level1, difficulty, task, TP, FP, FN, consist) rows for ``compute_official``."""
    m, c = table.meta, table.cols
    lvl, diff, task = m["level1"], m["difficulty"], m["task"]
    tp, fp, fn, consist = c["tp"], c["fp"], c["fn"], c["consist"]
    rng = range(len(table)) if indices is None else indices
    for i in rng:
        yield lvl[i], diff[i], task[i], tp[i], fp[i], fn[i], consist[i]
