"""Differences between two JSON values: numbers by value, objects by key, lists by element.

Lists are compared with an edit script over the longest common subsequence of equal elements, so one
item inserted at the front is one ``inserted`` change, not a changed line per position; an item found
on both sides at different places is ``moved``; a removed and an inserted item facing each other in
the script are compared element-wise (a changed item). Each change is
``{path, change, logged, reissued}`` with ``change`` one of ``value`` (a scalar changed), ``type``
(the JSON type changed), ``added``/``removed`` (object keys), ``inserted``/``removed``/``moved``
(list items). ``value`` is a value change; the rest are structural.
"""

from __future__ import annotations

import json
from typing import Any

MISSING = "<missing>"
STRUCTURAL = frozenset({"type", "added", "removed", "inserted", "moved"})
_LCS_CELLS = 4_000_000
"""Above this many LCS table cells a list is compared by position (bounded time and memory)."""


def json_type(value: Any) -> str:
    """The JSON type name of a decoded value (``number`` for int and float alike)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else type(value).__name__


def same(a: Any, b: Any) -> bool:
    """JSON equality: numbers by value (``1 == 1.0``), booleans never equal to numbers."""
    ta, tb = json_type(a), json_type(b)
    if ta != tb:
        return False
    if ta == "object":
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if ta == "array":
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _key(value: Any) -> str:
    """A hashable form for list matching, numbers by value (``1`` and ``1.0`` alike)."""

    def norm(v: Any) -> Any:
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        if isinstance(v, list):
            return [norm(x) for x in v]
        return v

    return json.dumps(norm(value), sort_keys=True, ensure_ascii=False, default=str)


def _change(path: str, kind: str, logged: Any, reissued: Any) -> dict[str, Any]:
    return {"path": path or "$", "change": kind, "logged": logged, "reissued": reissued}


def diff(logged: Any, reissued: Any, path: str = "") -> list[dict[str, Any]]:
    """The changes that turn ``logged`` into ``reissued`` (empty when they are the same JSON value)."""
    if isinstance(logged, dict) and isinstance(reissued, dict):
        out: list[dict[str, Any]] = []
        for key in list(logged) + [k for k in reissued if k not in logged]:
            sub = f"{path}.{key}" if path else str(key)
            if key not in reissued:
                out.append(_change(sub, "removed", logged[key], MISSING))
            elif key not in logged:
                out.append(_change(sub, "added", MISSING, reissued[key]))
            else:
                out += diff(logged[key], reissued[key], sub)
        return out
    if isinstance(logged, list) and isinstance(reissued, list):
        return _diff_lists(logged, reissued, path)
    if same(logged, reissued):
        return []
    kind = "value" if json_type(logged) == json_type(reissued) else "type"
    return [_change(path, kind, logged, reissued)]


def _lcs_pairs(a: list[str], b: list[str]) -> list[tuple[int, int]]:
    """Index pairs of a longest common subsequence of ``a`` and ``b``."""
    n, m = len(a), len(b)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        row, below = table[i], table[i + 1]
        for j in range(m - 1, -1, -1):
            row[j] = below[j + 1] + 1 if a[i] == b[j] else max(below[j], row[j + 1])
    pairs, i, j = [], 0, 0
    while i < n and j < m:
        if a[i] == b[j]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def _diff_lists(logged: list[Any], reissued: list[Any], path: str) -> list[dict[str, Any]]:
    if len(logged) * len(reissued) > _LCS_CELLS:  # by position, bounded
        out: list[dict[str, Any]] = []
        for i in range(max(len(logged), len(reissued))):
            if i >= len(logged):
                out.append(_change(f"{path}[{i}]", "inserted", MISSING, reissued[i]))
            elif i >= len(reissued):
                out.append(_change(f"{path}[{i}]", "removed", logged[i], MISSING))
            else:
                out += diff(logged[i], reissued[i], f"{path}[{i}]")
        return out
    ka, kb = [_key(v) for v in logged], [_key(v) for v in reissued]
    pairs = _lcs_pairs(ka, kb) + [(len(logged), len(reissued))]
    removed: list[int] = []
    inserted: list[int] = []
    changed: list[tuple[int, int]] = []
    i = j = 0
    for pi, pj in pairs:
        gap_a, gap_b = list(range(i, pi)), list(range(j, pj))
        # facing items of one gap are the same item changed; the rest were removed or inserted
        for x, y in zip(gap_a, gap_b, strict=False):
            changed.append((x, y))
        removed += gap_a[len(gap_b) :]
        inserted += gap_b[len(gap_a) :]
        i, j = pi + 1, pj + 1
    out = []
    # an item removed here and inserted there is one moved item
    for x in list(removed):
        match = next((y for y in inserted if kb[y] == ka[x]), None)
        if match is not None:
            removed.remove(x)
            inserted.remove(match)
            out.append(_change(f"{path}[{match}]", "moved", f"{path}[{x}]", f"{path}[{match}]"))
    for x, y in list(changed):  # a "changed" pair whose logged item reappears elsewhere: moved
        match = next((z for z in inserted if kb[z] == ka[x]), None)
        if match is not None:
            changed.remove((x, y))
            inserted.remove(match)
            inserted.append(y)
            out.append(_change(f"{path}[{match}]", "moved", f"{path}[{x}]", f"{path}[{match}]"))
    for x, y in changed:
        out += diff(logged[x], reissued[y], f"{path}[{y}]")
    out += [_change(f"{path}[{x}]", "removed", logged[x], MISSING) for x in sorted(removed)]
    out += [_change(f"{path}[{y}]", "inserted", MISSING, reissued[y]) for y in sorted(inserted)]
    return out
