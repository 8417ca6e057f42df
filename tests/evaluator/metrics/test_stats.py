"""Bootstrap CIs (stratified, seeded), paired bootstrap, McNemar's test and pass^k."""

from __future__ import annotations

import math
import random

import pytest

from finmcp.evaluator.metrics.stats import (
    Bootstrap,
    MetricSpec,
    mcnemar,
    pass_hat_k,
    percentile,
)

MEAN = MetricSpec("mean", ("x",), lambda s, n: s["x"] / n)
RATIO = MetricSpec("ratio", ("x", "w"), lambda s, n: s["x"] / s["w"] if s["w"] else None)


def test_percentile_interpolates():
    values = [1.0, 2.0, 3.0, 4.0]
    assert percentile(values, 0.0) == 1.0 and percentile(values, 1.0) == 4.0
    assert percentile(values, 0.5) == 2.5 and math.isnan(percentile([], 0.5))


def test_bootstrap_is_seeded_and_covers_the_estimate():
    rng = random.Random(3)
    cols = {"x": [1 if rng.random() < 0.3 else 0 for _ in range(400)]}
    strata = ["a"] * 200 + ["b"] * 200
    first = Bootstrap(strata, 500, seed=7).ci(cols, [MEAN])
    assert first == Bootstrap(strata, 500, seed=7).ci(cols, [MEAN])
    assert first != Bootstrap(strata, 500, seed=8).ci(cols, [MEAN])
    value = sum(cols["x"]) / 400
    assert first["mean"]["lo"] < value < first["mean"]["hi"]
    assert first["mean"]["hi"] - first["mean"]["lo"] < 0.15 and first["mean"]["n_boot"] == 500


def test_bootstrap_keeps_stratum_sizes():
    strata = ["single"] * 3 + ["multi"] * 5 + ["turn"] * 2
    cols = {"x": [1 if s == "multi" else 0 for s in strata]}
    ci = Bootstrap(strata, 300, seed=1).ci(cols, [MEAN])["mean"]
    assert ci["lo"] == ci["hi"] == 0.5  # each resample has exactly five 'multi' samples


def test_undefined_values_are_left_out_and_tiny_inputs_work():
    cols = {"x": [1, 0], "w": [0, 0]}
    assert Bootstrap(["a", "a"], 100).ci(cols, [RATIO])["ratio"] == {"lo": None, "hi": None, "n_boot": 0}
    one = Bootstrap(["a"], 50).ci({"x": [1]}, [MEAN])["mean"]
    assert (one["lo"], one["hi"]) == (1.0, 1.0)
    assert Bootstrap([], 50).ci({"x": []}, [MEAN])["mean"]["n_boot"] == 0


def test_paired_bootstrap_difference():
    rng = random.Random(5)
    a = {"x": [rng.random() * 0.5 for _ in range(300)]}
    same = Bootstrap(["t"] * 300, 300, seed=2).paired(a, a, [MEAN])["mean"]
    assert same["diff"] == 0 and same["lo"] == same["hi"] == 0 and same["p_value"] == 1.0
    b = {"x": [v + 0.1 for v in a["x"]]}
    better = Bootstrap(["t"] * 300, 300, seed=2).paired(a, b, [MEAN])["mean"]
    assert better["diff"] == pytest.approx(0.1) and better["lo"] > 0 and better["p_value"] == 0.0


def test_mcnemar_exact_and_approximate():
    assert mcnemar([1] * 10 + [0] * 5, [0] * 10 + [0] * 5) == {
        "a_only": 10,
        "b_only": 0,
        "p_value": 2 / 1024,
        "method": "exact",
    }
    assert mcnemar([1, 0] * 5, [0, 1] * 5)["p_value"] == 1.0
    assert mcnemar([1, 1], [1, 1]) == {"a_only": 0, "b_only": 0, "p_value": 1.0, "method": "exact"}
    big = mcnemar([1] * 700 + [0] * 500, [0] * 700 + [1] * 500)
    assert big["method"] == "chi2_cc"
    assert big["p_value"] == pytest.approx(math.erfc(math.sqrt((199**2 / 1200) / 2)))


def test_pass_hat_k():
    result = pass_hat_k([[1, 1, 0], [1, 1, 1], [0, 0, 0]])
    assert result == pytest.approx(
        {"pass^1": (2 / 3 + 1 + 0) / 3, "pass^2": (1 / 3 + 1 + 0) / 3, "pass^3": 1 / 3}
    )
    assert pass_hat_k([]) == {}
    assert list(pass_hat_k([[1, 0], [1, 1, 1]])) == ["pass^1", "pass^2"]
