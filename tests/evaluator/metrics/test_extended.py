"""finmcp's own metrics: optimal call matching, argument normalisation, dependency pairs, lenient EMR,
redundancy and first-error position."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from finmcp.evaluator.inputs.model import Call
from finmcp.evaluator.metrics.argnorm import Canonicalizer, canon_value, inventory_schema_lookup
from finmcp.evaluator.metrics.extended import extended_counts, first_error_position, lenient_emr
from finmcp.evaluator.metrics.matching import greedy_first_fit, hungarian_max, match_calls


def turns(*groups):
    """One turn of groups given as lists of tool names or (name, args) tuples."""
    return [[[Call(*c) if isinstance(c, tuple) else Call(c) for c in g] for g in groups]]


# ------------------------------------------------------------------ matching


def test_hungarian_beats_greedy_first_fit():
    sim = {(0, 0): 0.6, (1, 0): 0.5, (0, 1): 0.5, (1, 1): 0.0}
    names = ["A", "A"]
    greedy = greedy_first_fit(names, names, lambda i, j: sim[(i, j)])
    optimal = match_calls(names, names, lambda i, j: sim[(i, j)])
    assert sum(sim[p] for p in greedy) == pytest.approx(0.6)
    assert optimal == [(0, 1), (1, 0)] and sum(sim[p] for p in optimal) == pytest.approx(1.0)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 5), st.integers(1, 5), st.integers(0, 10_000))
def test_hungarian_is_optimal_against_brute_force(rows, cols, seed):
    rng = random.Random(seed)
    w = [[rng.random() for _ in range(cols)] for _ in range(rows)]
    pairs = hungarian_max(w)
    assert len(pairs) == min(rows, cols)
    assert len({r for r, _ in pairs}) == len(pairs) == len({c for _, c in pairs})
    if rows <= cols:
        best = max(sum(w[r][c] for r, c in enumerate(p)) for p in itertools.permutations(range(cols), rows))
    else:
        best = max(sum(w[r][c] for c, r in enumerate(p)) for p in itertools.permutations(range(rows), cols))
    assert sum(w[r][c] for r, c in pairs) == pytest.approx(best)


def test_matched_pairs_equal_the_multiset_tp():
    ref = ["A", "B", "A", "C"]
    pred = ["A", "A", "A", "D", "B"]
    assert len(match_calls(ref, pred, lambda i, j: 0.0)) == 3


def test_matching_prefers_equal_arguments_for_repeated_tools():
    gold = turns([("S", {"code": "ZH1"})], [("S", {"code": "ZH2"})])
    pred = turns([("S", {"code": "ZH2"})], [("S", {"code": "ZH1"})])
    counts = extended_counts(pred, gold, True, Canonicalizer())
    assert counts.exact == 2 and counts.arg_tp == 2
    assert counts.dep_ref == 1 and counts.dep_pred == 1 and counts.dep_tp == 0  # the order is reversed


# ------------------------------------------------------------------ argument normalisation


@pytest.mark.parametrize(
    ("key", "a", "b", "schema"),
    [
        ("fundCode", "1", 1, None),
        ("fundCode", "161128.OF", "161128", None),
        (
            "fundCodes",
            ["161128", "000001"],
            ["000001.SZ", 161128],
            {"type": "array", "items": {"type": "string"}},
        ),
        ("startDate", "2024-01-05", "2024/1/5", None),
        ("startDate", "2024年1月5日", "20240105", None),
        ("rate", "6%", 0.06, {"type": "number"}),
        ("rate", "6%", 0.06, None),
        ("pageSize", 10, 10.0, None),
        ("pageSize", "10", 10, {"type": "integer"}),
        ("pageSize", "10", 10, None),
        ("beforeDays", 10, "10", {"type": "string"}),
        ("keyword", " 中证　红利 ", "中证 红利", None),
        ("keyword", "ABC", "abc", None),
        ("isDesc", "true", True, {"type": "boolean"}),
        ("weights", {"a": 0.5, "b": None}, {"a": "50%"}, None),
    ],
)
def test_equal_values_canonicalise_equal(key, a, b, schema):
    assert canon_value(key, a, schema) == canon_value(key, b, schema)


@pytest.mark.parametrize(
    ("key", "a", "b", "schema"),
    [
        ("fundCode", "161128", "161129", None),
        ("startDate", "2024-01-05", "2024-01-06", None),
        ("keyword", "000001", "1", None),  # not a code key: leading zeros matter
        ("pageSize", 10, 11, None),
        ("flag", True, 1, None),
    ],
)
def test_different_values_stay_different(key, a, b, schema):
    assert canon_value(key, a, schema) != canon_value(key, b, schema)


def test_canonicalizer_cache_keeps_types_apart():
    canon = Canonicalizer()
    assert canon.pairs("T", {"v": [True]}) != canon.pairs("T", {"v": [1]})
    assert canon.pairs("T", {"v": True}) != canon.pairs("T", {"v": 1})
    assert canon.pairs("T", {"v": None}) == frozenset()


def test_schema_lookup_from_an_inventory_like_object():
    class Spec:
        input_schema = {"type": "object", "properties": {"beforeDays": {"type": "string"}}}

    class Inv:
        def get(self, name):
            return Spec() if name == "GetTxnDayRange" else None

    canon = Canonicalizer(inventory_schema_lookup(Inv()))
    assert canon.pairs("GetTxnDayRange", {"beforeDays": 5}) == canon.pairs(
        "GetTxnDayRange", {"beforeDays": "5"}
    )
    assert canon.pairs("Other", {"beforeDays": 5}) != canon.pairs("Other", {"beforeDays": "05"})


def test_argument_f1_counts_key_value_pairs():
    gold = turns([("A", {"x": 1, "y": "2024-01-01", "z": "k"})])
    pred = turns([("A", {"x": "1", "y": "2024/1/1", "z": "other", "extra": 3})])
    c = extended_counts(pred, gold, True, Canonicalizer())
    # matched kv: x, y; pred has 4 pairs, ref 3 -> F1 = 2*2/7
    assert (c.arg_tp, c.arg_pred, c.arg_ref, c.exact) == (2, 4, 3, 0)


def test_unknown_reference_arguments_disable_argument_metrics():
    c = extended_counts(turns([("A", {"x": 1})]), turns(["A"]), False, Canonicalizer())
    assert (c.arg_tp, c.arg_pred_all, c.arg_ref_all, c.exact) == (0, 0, 0, 0) and c.matched == 1


# ------------------------------------------------------------------ structure metrics


def test_dependency_pairs_ignore_order_inside_reference_groups():
    gold = turns(["A", "B"], ["C"])  # ordered pairs: A<C, B<C (A, B parallel)
    c = extended_counts(turns(["B"], ["A"], ["C"]), gold, True, Canonicalizer())
    assert (c.dep_ref, c.dep_pred, c.dep_tp) == (2, 2, 2)
    c = extended_counts(turns(["C"], ["A", "B"]), gold, True, Canonicalizer())
    assert (c.dep_ref, c.dep_pred, c.dep_tp) == (2, 2, 0)
    c = extended_counts(turns(["A", "B", "C"]), gold, True, Canonicalizer())  # all parallel: no order given
    assert (c.dep_ref, c.dep_pred, c.dep_tp) == (2, 0, 0)


def test_lenient_emr_accepts_a_split_parallel_group_only():
    gold = turns(["A", "B"], ["C"])
    assert lenient_emr(turns(["B"], ["A"], ["C"]), gold) == 1
    assert lenient_emr(turns(["A", "B"], ["C"]), gold) == 1
    assert lenient_emr(turns(["A"], ["B", "C"]), gold) == 0  # straddles two reference groups
    assert lenient_emr(turns(["A", "B", "C"]), turns(["A"], ["B"], ["C"])) == 0  # merging is not splitting
    assert lenient_emr(turns(["A", "B"], ["C"], ["D"]), gold) == 0


def test_first_error_position_over_turns():
    gold = [[[Call("A")], [Call("B")]], [[Call("C")]]]
    assert first_error_position(gold, gold) == 0
    assert first_error_position([[[Call("A")], [Call("X")]], [[Call("C")]]], gold) == 2
    assert first_error_position([[[Call("A")], [Call("B")]], []], gold) == 3
    assert first_error_position([[[Call("A")], [Call("B")], [Call("D")]], [[Call("C")]]], gold) == 3
    assert first_error_position([], gold) == 1


def test_redundancy_counts_repeats_beyond_the_reference():
    gold = turns([("S", {"k": 1})], [("S", {"k": 1})], [("T", {})])
    pred = turns([("S", {"k": 1})], [("S", {"k": 1})], [("S", {"k": 1})], [("T", {})], [("T", {})])
    c = extended_counts(pred, gold, True, Canonicalizer())
    assert c.dup_excess == 2  # one S beyond the two the reference asks for, one repeated T
