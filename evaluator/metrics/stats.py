"""Statistics: stratified bootstrap CIs and paired differences (:class:`Bootstrap`), McNemar's test and pass^k.

Every metric is a function of column *sums* (and the sample count), so one resample costs one index draw
and one pass over each needed column: no match is ever recomputed.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

Sums = Mapping[Any, float]


@dataclass(frozen=True)
class MetricSpec:
    """A headline number: ``fn(sums, n)`` over the sums of ``columns`` (None when undefined)."""

    name: str
    columns: tuple[Any, ...]
    """Column names, or ``(side, name)`` pairs for a paired difference."""
    fn: Callable[[Sums, int], float | None]


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolation percentile (q in [0, 1]) of already sorted values."""
    if not sorted_values:
        return math.nan
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def strata_indices(strata: Sequence[str]) -> list[list[int]]:
    """Indices of each stratum, strata in first-seen order."""
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(strata):
        groups.setdefault(s, []).append(i)
    return list(groups.values())


def _draws(groups: list[list[int]], rng: random.Random, n_boot: int):
    choices = rng.choices
    for _ in range(n_boot):
        idx: list[int] = []
        for members in groups:
            idx.extend(choices(members, k=len(members)))
        yield idx


def _sums(getter: Callable, columns: Mapping[Any, Sequence[float]], needed: Sequence[Any], one: bool):
    if one:  # itemgetter with a single index returns the item, not a tuple
        return {c: float(getter(columns[c])) for c in needed}
    return {c: sum(getter(columns[c])) for c in needed}


Intervals = dict[str, dict[str, float | None]]


@dataclass(frozen=True)
class Bootstrap:
    """A stratified bootstrap: ``n_boot`` resamples, each stratum of ``strata`` (e.g. sample types)
    resampled to its own size with ``random.Random(seed).choices``; percentile intervals at ``level``."""

    strata: Sequence[str]
    n_boot: int = 2000
    seed: int = 0
    level: float = 0.95

    def distributions(
        self, columns: Mapping[Any, Sequence[float]], metrics: Sequence[MetricSpec]
    ) -> dict[str, list[float]]:
        """The sorted resampled values of every metric (undefined values left out)."""
        n = len(self.strata)
        dist: dict[str, list[float]] = {m.name: [] for m in metrics}
        if n == 0 or self.n_boot <= 0:
            return dist
        needed = sorted({c for m in metrics for c in m.columns})
        for idx in _draws(strata_indices(self.strata), random.Random(self.seed), self.n_boot):
            sums = _sums(itemgetter(*idx), columns, needed, n == 1)
            for m in metrics:
                value = m.fn(sums, n)
                if value is not None:
                    dist[m.name].append(value)
        return {name: sorted(values) for name, values in dist.items()}

    def bounds(self, values: Sequence[float]) -> dict[str, float | None]:
        """``lo`` and ``hi`` percentiles of sorted resampled values (None when there are none)."""
        alpha = (1 - self.level) / 2
        return {
            "lo": percentile(values, alpha) if values else None,
            "hi": percentile(values, 1 - alpha) if values else None,
        }

    def ci(self, columns: Mapping[str, Sequence[float]], metrics: Sequence[MetricSpec]) -> Intervals:
        """Percentile CIs of every metric."""
        dist = self.distributions(columns, metrics)
        return {name: {**self.bounds(values), "n_boot": len(values)} for name, values in dist.items()}

    def paired(
        self,
        columns_a: Mapping[str, Sequence[float]],
        columns_b: Mapping[str, Sequence[float]],
        metrics: Sequence[MetricSpec],
    ) -> Intervals:
        """Difference B - A of each metric on the same resampled samples: observed, CI and two-sided p."""
        n = len(self.strata)
        needed = sorted({c for m in metrics for c in m.columns})
        merged = {(side, c): cols[c] for side, cols in (("a", columns_a), ("b", columns_b)) for c in needed}
        dist = self.distributions(merged, [_difference(m, needed) for m in metrics])
        full_a = {c: float(sum(columns_a[c])) for c in needed}
        full_b = {c: float(sum(columns_b[c])) for c in needed}
        out = {}
        for m in metrics:
            va, vb = m.fn(full_a, n) if n else None, m.fn(full_b, n) if n else None
            values = dist[m.name]
            p_value = None
            if values:
                below = sum(1 for d in values if d <= 0) / len(values)
                above = sum(1 for d in values if d >= 0) / len(values)
                p_value = min(1.0, 2 * min(below, above))
            out[m.name] = {
                "a": va,
                "b": vb,
                "diff": None if va is None or vb is None else vb - va,
                **self.bounds(values),
                "p_value": p_value,
                "n_boot": len(values),
            }
        return out


def _difference(metric: MetricSpec, needed: Sequence[str]) -> MetricSpec:
    """``metric`` as B - A over sums keyed ('a', column) / ('b', column); undefined when either side is."""

    def fn(sums: Sums, n: int) -> float | None:
        va = metric.fn({c: sums[("a", c)] for c in needed}, n)
        vb = metric.fn({c: sums[("b", c)] for c in needed}, n)
        return None if va is None or vb is None else vb - va

    return MetricSpec(metric.name, tuple((side, c) for side in "ab" for c in needed), fn)


def mcnemar(success_a: Sequence[float], success_b: Sequence[float]) -> dict[str, float | int | str]:
    """McNemar's test on paired 0/1 outcomes: exact two-sided binomial p for b + c <= 1000, else the
    chi-square approximation with continuity correction."""
    b = sum(1 for x, y in zip(success_a, success_b, strict=True) if x and not y)
    c = sum(1 for x, y in zip(success_a, success_b, strict=True) if y and not x)
    n = b + c
    if n == 0:
        p_value = 1.0
        method = "exact"
    elif n <= 1000:
        k = min(b, c)
        tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
        p_value = min(1.0, 2 * tail)
        method = "exact"
    else:
        stat = (abs(b - c) - 1) ** 2 / n
        p_value = math.erfc(math.sqrt(stat / 2))
        method = "chi2_cc"
    return {"a_only": b, "b_only": c, "p_value": p_value, "method": method}


def pass_hat_k(successes_per_sample: Sequence[Sequence[int]]) -> dict[str, float]:
    """pass^k = mean over samples of C(c, k) / C(n, k) (all k trials succeed), for k = 1..min trials."""
    rows = [list(s) for s in successes_per_sample if s]
    if not rows:
        return {}
    k_max = min(len(r) for r in rows)
    out = {}
    for k in range(1, k_max + 1):
        total = 0.0
        for r in rows:
            total += math.comb(sum(1 for x in r if x), k) / math.comb(len(r), k)
        out[f"pass^{k}"] = total / len(rows)
    return out
