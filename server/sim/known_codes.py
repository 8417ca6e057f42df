"""Codes that recorded outputs mention, so the simulated world resolves them too.

A recorded ``SearchFunds`` answer may name fund 161128; a later call on 161128 that nothing recorded is
simulated, and it must find that fund rather than answer "not found". These codes can be passed to
``World(extra_fund_codes=..., extra_strategy_codes=...)``; adding them leaves every other entity of the
world byte-identical.

The server now adopts more than the codes (names, types, NAVs: :mod:`server.sim.entity_harvest`); this
scan is what it did before, kept as the baseline of ``bench/bench_adoption.py`` and of the entity
adoption tests' "before" measurement.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from finmcp.recordings.store import RecordingStore

FUND_KEYS = frozenset({"fundCode", "fundCodes", "fundCodeList", "基金代码", "assetCode"})
STRATEGY_KEYS = frozenset({"strategyCode", "strategyCodes", "poCode", "策略代码"})
_FUND_RE = re.compile(r"^\d{6}$")
_STRATEGY_RE = re.compile(r"^[A-Z][A-Z0-9_]{0,23}$")


def _walk(node: Any, funds: set[str], strategies: set[str], key: str | None = None) -> None:
    if isinstance(node, dict):
        for k, v in node.items():
            _walk(v, funds, strategies, k)
    elif isinstance(node, list):
        for item in node:
            _walk(item, funds, strategies, key)
    elif isinstance(node, str):
        if key in FUND_KEYS and _FUND_RE.match(node):
            funds.add(node)
        elif key in STRATEGY_KEYS and _STRATEGY_RE.match(node):
            strategies.add(node)


def codes_in(values: Iterable[Any]) -> tuple[set[str], set[str]]:
    """(fund codes, strategy codes) found under the known code keys anywhere in ``values``."""
    funds: set[str] = set()
    strategies: set[str] = set()
    for value in values:
        _walk(value, funds, strategies)
    return funds, strategies


def codes_from_recordings(store: RecordingStore) -> tuple[set[str], set[str]]:
    """Fund and strategy codes in every recorded argument object and output of ``store``."""

    def values() -> Iterable[Any]:
        for record in store.iter_responses():
            yield record["arguments"]
            result = record["result"]
            if result.get("structuredContent") is not None:
                yield result["structuredContent"]
                continue
            for block in result.get("content") or []:
                try:
                    yield json.loads(block.get("text") or "")
                except (json.JSONDecodeError, TypeError):
                    continue

    return codes_in(values())
