"""Calls of one parallel group in the order their client issued them, not the order they arrived.

A client sends a step's calls at once; on several connections the proxy may read the second before
the first (the event loop's order of ready sockets), so ``seq`` is the arrival order and can differ
between two runs of the same agent. FinMCP-Bench's consistency metric compares the flattened
order of a sample's calls, and the model's own order of its parallel calls is the one it means.
Most clients number their requests in order (the mcp SDK, finmcp's harness), so within a group
whose calls share one session and carry integer JSON-RPC ids, the ids give the issuing order.
Any other group keeps the arrival order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import groupby
from typing import Any

ORDER_COLUMNS = 2
"""Trailing columns :func:`in_client_order` reads and strips: ``session_key``, ``jsonrpc_id``."""


def in_client_order(rows: Iterable[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
    """Rows ordered by (sample, trial, turn, group, seq), each ending with ``session_key, jsonrpc_id``:
    the same rows without those two columns, a group's calls re-ordered by integer id where they
    share a session. Rows of no group (``call_group`` NULL, index 3) are left as they come."""
    for key, block in groupby(rows, key=lambda row: (row[0], row[1], row[2], row[3])):
        group = list(block)
        if key[3] is not None and len(group) > 1:
            ids = [rid for rid in map(_integer_id, (row[-1] for row in group)) if rid is not None]
            if len({row[-2] for row in group}) == 1 and len(ids) == len(group):
                group = [row for _, row in sorted(zip(ids, group, strict=True), key=lambda pair: pair[0])]
        for row in group:
            yield row[:-ORDER_COLUMNS]


def _integer_id(value: Any) -> int | None:
    """A JSON-RPC id stored as text (``7``) as an int; None for a string id or none at all."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None
