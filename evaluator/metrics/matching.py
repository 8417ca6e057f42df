"""Maximum-weight bipartite matching of predicted calls to reference calls.

Two calls can only be matched when they name the same tool, so the graph splits into one complete
bipartite block per tool name; every block is solved exactly with the Hungarian algorithm
(Kuhn-Munkres with potentials, O(n^2 m)). Weights are ``1 + argument similarity + a small position
term`` and all positive, so each block's optimum has ``min(#ref, #pred)`` pairs: the number of matched
pairs always equals the multiset TP of the official metric.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

INF = float("inf")


def hungarian_max(weights: Sequence[Sequence[float]]) -> list[tuple[int, int]]:
    """Pairs (row, col) of a maximum-weight matching of a dense rectangular matrix (all rows or all
    columns matched, whichever is fewer)."""
    n_rows = len(weights)
    n_cols = len(weights[0]) if n_rows else 0
    if n_rows == 0 or n_cols == 0:
        return []
    transposed = n_rows > n_cols
    if transposed:
        weights = [[weights[r][c] for r in range(n_rows)] for c in range(n_cols)]
        n_rows, n_cols = n_cols, n_rows
    # min-cost assignment of every row (n <= m) on cost = -weight; 1-based arrays, column 0 is virtual
    u = [0.0] * (n_rows + 1)
    v = [0.0] * (n_cols + 1)
    owner = [0] * (n_cols + 1)
    way = [0] * (n_cols + 1)
    for row in range(1, n_rows + 1):
        owner[0] = row
        col0 = 0
        minv = [INF] * (n_cols + 1)
        used = [False] * (n_cols + 1)
        while True:
            used[col0] = True
            r0 = owner[col0]
            delta = INF
            col1 = 0
            w_row = weights[r0 - 1]
            u_r0 = u[r0]
            for col in range(1, n_cols + 1):
                if not used[col]:
                    cur = -w_row[col - 1] - u_r0 - v[col]
                    if cur < minv[col]:
                        minv[col] = cur
                        way[col] = col0
                    if minv[col] < delta:
                        delta = minv[col]
                        col1 = col
            for col in range(n_cols + 1):
                if used[col]:
                    u[owner[col]] += delta
                    v[col] -= delta
                else:
                    minv[col] -= delta
            col0 = col1
            if owner[col0] == 0:
                break
        while col0:
            prev = way[col0]
            owner[col0] = owner[prev]
            col0 = prev
    pairs = [(owner[col] - 1, col - 1) for col in range(1, n_cols + 1) if owner[col]]
    if transposed:
        pairs = [(c, r) for r, c in pairs]
    return sorted(pairs)


def match_calls(
    ref_names: Sequence[str],
    pred_names: Sequence[str],
    similarity: Callable[[int, int], float],
    ref_groups: Sequence[int] | None = None,
    pred_groups: Sequence[int] | None = None,
) -> list[tuple[int, int]]:
    """Maximum-weight matching (ref index, pred index) of same-named calls.

    ``similarity(i, j)`` in [0, 1] scores the arguments of ref call i against pred call j. With the
    calls' group indices, a tie-breaking term of at most 0.001 prefers pairs at the same relative place.
    """
    if len(set(pred_names)) == len(pred_names) and len(set(ref_names)) == len(ref_names):
        position = dict(zip(pred_names, range(len(pred_names)), strict=True))  # no name repeats: forced pairs
        return [(i, position[name]) for i, name in enumerate(ref_names) if name in position]
    pred_by_name: dict[str, list[int]] = {}
    for j, name in enumerate(pred_names):
        bucket = pred_by_name.get(name)
        if bucket is None:
            pred_by_name[name] = [j]
        else:
            bucket.append(j)
    ref_by_name: dict[str, list[int]] = {}
    for i, name in enumerate(ref_names):
        if name in pred_by_name:
            bucket = ref_by_name.get(name)
            if bucket is None:
                ref_by_name[name] = [i]
            else:
                bucket.append(i)
    pairs: list[tuple[int, int]] = []
    for name, ref_idx in ref_by_name.items():
        pred_idx = pred_by_name[name]
        if len(ref_idx) == 1 and len(pred_idx) == 1:
            pairs.append((ref_idx[0], pred_idx[0]))
            continue
        place = _places(ref_groups, pred_groups)
        matrix = []
        for i in ref_idx:
            row = []
            for j in pred_idx:
                w = 1.0 + similarity(i, j)
                if place is not None:
                    w += 0.001 * (1.0 - abs(place[0](i) - place[1](j)))
                row.append(w)
            matrix.append(row)
        pairs.extend((ref_idx[r], pred_idx[c]) for r, c in hungarian_max(matrix))
    pairs.sort()
    return pairs


def _places(ref_groups: Sequence[int] | None, pred_groups: Sequence[int] | None):
    """Functions index -> relative group position in [0, 1] for both sides (None without groups)."""
    if ref_groups is None or pred_groups is None:
        return None
    r_den = max(1, ref_groups[-1] if ref_groups else 0)
    p_den = max(1, pred_groups[-1] if pred_groups else 0)
    return (lambda i: ref_groups[i] / r_den), (lambda j: pred_groups[j] / p_den)


def greedy_first_fit(
    ref_names: Sequence[str], pred_names: Sequence[str], similarity: Callable[[int, int], float]
) -> list[tuple[int, int]]:
    """The naive alternative (for comparison only): each predicted call takes the best free reference
    call of the same name, in prediction order. Not optimal; see tests."""
    free = set(range(len(ref_names)))
    pairs = []
    for j, name in enumerate(pred_names):
        best, best_w = None, -1.0
        for i in sorted(free):
            if ref_names[i] == name and similarity(i, j) > best_w:
                best, best_w = i, similarity(i, j)
        if best is not None:
            free.discard(best)
            pairs.append((best, j))
    return sorted(pairs)
