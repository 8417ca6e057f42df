"""finmcp's own per-sample metrics (never mixed into the official numbers).

For one sample it returns counts that aggregate by pooling (micro) or by averaging per-sample values
(macro): call-level matching (maximum-weight bipartite, see ``matching``), argument key/value F1 on
the matched calls, exact-call P/R/F1, dependency precedence-pair F1 across groups, an EMR that also
accepts a parallel group issued as several consecutive groups, redundancy and the first-error position.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from finmcp.evaluator.inputs.model import Groups
from finmcp.evaluator.metrics.argnorm import Canonicalizer
from finmcp.evaluator.metrics.matching import match_calls


class ExtendedCounts(NamedTuple):
    """Per-sample counts of the extended metrics."""

    n_ref: int
    n_pred: int
    matched: int
    exact: int
    """matched pairs whose canonical arguments are identical."""
    arg_tp: int
    arg_pred: int
    """key/value pairs of the matched predicted calls."""
    arg_ref: int
    """key/value pairs of the matched reference calls."""
    arg_pred_all: int
    """key/value pairs of every predicted call."""
    arg_ref_all: int
    """key/value pairs of every reference call."""
    dep_tp: int
    dep_pred: int
    dep_ref: int
    emr_seq: int
    dup_excess: int
    first_error: int
    """1-based index of the first wrong reference group (0 = none)."""
    n_groups: int
    malformed: int


def _kv_f1(a: frozenset, b: frozenset) -> float:
    if not a and not b:
        return 1.0
    return 2 * len(a & b) / (len(a) + len(b))


def lenient_emr(pred_turns: Sequence[Groups], gold_turns: Sequence[Groups]) -> int:
    """EMR that accepts a gold group issued as several consecutive predicted groups (any order inside)."""
    for t in range(max(len(pred_turns), len(gold_turns))):
        pred = pred_turns[t] if t < len(pred_turns) else []
        gold = gold_turns[t] if t < len(gold_turns) else []
        j = 0
        for group in gold:
            need: dict[str, int] = {}
            for c in group:
                need[c.tool] = need.get(c.tool, 0) + 1
            remaining = len(group)
            while remaining:
                if j >= len(pred):
                    return 0
                for c in pred[j]:
                    left = need.get(c.tool, 0)
                    if not left:
                        return 0
                    need[c.tool] = left - 1
                    remaining -= 1
                j += 1
        if j != len(pred):
            return 0
    return 1


def first_error_at(pred_turns: Sequence[Groups], gold_turns: Sequence[Groups]) -> tuple[int, int, int] | None:
    """Where the prediction first goes wrong (names, order free inside a group): (1-based position over
    all gold groups turn by turn, turn, 0-based group of that turn); extra predicted groups err at the
    next position, with the group one past the turn's gold groups. None when nowhere."""
    position = 0
    for t in range(max(len(pred_turns), len(gold_turns))):
        pred = pred_turns[t] if t < len(pred_turns) else []
        gold = gold_turns[t] if t < len(gold_turns) else []
        for k, group in enumerate(gold):
            position += 1
            if k >= len(pred) or sorted(c.tool for c in pred[k]) != sorted(c.tool for c in group):
                return position, t, k
        if len(pred) > len(gold):
            return position + 1, t, len(gold)
    return None


def first_error_position(pred_turns: Sequence[Groups], gold_turns: Sequence[Groups]) -> int:
    """1-based position of :func:`first_error_at`; 0 if none."""
    found = first_error_at(pred_turns, gold_turns)
    return found[0] if found is not None else 0


def flatten(turns: Sequence[Groups]) -> tuple[list, list, list[str]]:
    """(groups over all turns, calls in order, their tool names)."""
    groups = [g for turn in turns for g in turn]
    calls = [c for g in groups for c in g]
    return groups, calls, [c.tool for c in calls]


def extended_counts(
    pred_turns: Sequence[Groups],
    gold_turns: Sequence[Groups],
    args_known: bool,
    canon: Canonicalizer,
    emr: int | None = None,
) -> ExtendedCounts:
    """All extended per-sample counts for one (reference, prediction) pair.

    ``emr`` (the paper EMR of the pair, if already known) short-cuts the group walks: an exact group
    match is also a lenient match and has no first error.
    """
    return extended_from_flat(
        pred_turns, gold_turns, flatten(pred_turns), flatten(gold_turns), args_known, canon, emr
    )


def extended_from_flat(
    pred_turns: Sequence[Groups],
    gold_turns: Sequence[Groups],
    pred_flat: tuple[list, list, list[str]],
    gold_flat: tuple[list, list, list[str]],
    args_known: bool,
    canon: Canonicalizer,
    emr: int | None,
) -> ExtendedCounts:
    """:func:`extended_counts` on already flattened turns (see :func:`flatten`)."""
    r_all, r_calls, r_names = gold_flat
    p_all, p_calls, p_names = pred_flat
    r_groups = [k for k, g in enumerate(r_all) for _ in g]
    p_groups = [k for k, g in enumerate(p_all) for _ in g]
    n_groups = len(r_all)
    malformed = sum(1 for c in p_calls if c.malformed)
    pairs_of = canon.pairs
    if args_known:
        r_kv = [pairs_of(c.tool, c.arguments) for c in r_calls]
        p_kv = [pairs_of(c.tool, c.arguments) for c in p_calls]

        def similarity(i: int, j: int) -> float:
            return _kv_f1(r_kv[i], p_kv[j])
    else:
        r_kv = [_EMPTY] * len(r_calls)
        p_kv = [_EMPTY] * len(p_calls)

        def similarity(i: int, j: int) -> float:
            return 0.0

    pairs = match_calls(r_names, p_names, similarity, r_groups, p_groups)
    exact = arg_tp = arg_pred = arg_ref = arg_pred_all = arg_ref_all = 0
    if args_known:
        for kv in p_kv:
            arg_pred_all += len(kv)
        for kv in r_kv:
            arg_ref_all += len(kv)
        for i, j in pairs:
            a, b = r_kv[i], p_kv[j]
            arg_ref += len(a)
            arg_pred += len(b)
            if a == b:
                exact += 1
                arg_tp += len(a)
            else:
                arg_tp += len(a & b)
    # dependency precedence pairs: reference orders two calls when they sit in different groups
    n_ref = len(r_names)
    if n_groups == n_ref:
        dep_ref = n_ref * (n_ref - 1) // 2
    else:
        sizes: dict[int, int] = {}
        for grp in r_groups:
            sizes[grp] = sizes.get(grp, 0) + 1
        dep_ref = (n_ref * n_ref - sum(v * v for v in sizes.values())) // 2
    m = len(pairs)
    if emr == 1 and m == n_ref and len(set(r_names)) == n_ref:
        dep_tp = dep_pred = dep_ref  # same groups, distinct names: every matched pair keeps its order
    else:
        dep_tp = dep_pred = 0
        rgs = [r_groups[i] for i, _ in pairs]
        pgs = [p_groups[j] for _, j in pairs]
        for x in range(m - 1):
            rg, pg = rgs[x], pgs[x]
            for y in range(x + 1, m):
                rg2, pg2 = rgs[y], pgs[y]
                if rg != rg2 and pg != pg2:
                    dep_pred += 1
                    if (rg < rg2) == (pg < pg2):
                        dep_tp += 1
    # redundancy: identical (tool, canonical args) calls beyond what the reference itself repeats
    dup_excess = 0
    if len(set(p_names)) < len(p_names):
        ref_keys: dict[tuple, int] = {}
        for key in zip(r_names, r_kv, strict=True):
            ref_keys[key] = ref_keys.get(key, 0) + 1
        pred_keys: dict[tuple, int] = {}
        for key in zip(p_names, p_kv, strict=True):
            pred_keys[key] = pred_keys.get(key, 0) + 1
        for key, count in pred_keys.items():
            if count > 1:
                dup_excess += max(0, count - max(1, ref_keys.get(key, 0)))
    if emr == 1:
        lenient, first_error = 1, 0
    else:
        lenient = lenient_emr(pred_turns, gold_turns)
        first_error = first_error_position(pred_turns, gold_turns)
    return ExtendedCounts(
        n_ref,
        len(p_names),
        m,
        exact,
        arg_tp,
        arg_pred,
        arg_ref,
        arg_pred_all,
        arg_ref_all,
        dep_tp,
        dep_pred,
        dep_ref,
        lenient,
        dup_excess,
        first_error,
        n_groups,
        malformed,
    )


_EMPTY: frozenset = frozenset()
