"""A world snapshot built in a chosen order: what the determinism tests hash (also in a subprocess)."""

from __future__ import annotations

import hashlib
import json
from datetime import date
from typing import Any

from finmcp.server.world import World

EXTRA_FUNDS = ("161128", "010883", "000216")
EXTRA_STRATEGIES = ("SI000035", "J7", "LONG_WIN")
USER = "9b989c9d999f93"


def world(seed: int = 0) -> World:
    """The test world: seed plus a few extra fund and strategy codes."""
    return World(seed, extra_fund_codes=EXTRA_FUNDS, extra_strategy_codes=EXTRA_STRATEGIES)


def snapshot(w: World, order: str) -> str:
    """JSON of a few hundred entities built in the given order."""
    funds = w.fund_codes()[::25]  # ~120 funds
    strategies = w.strategy_codes()[::10]  # ~30 strategies
    users = w.user_ids(20) + [USER]
    jobs = [("fund", c) for c in funds] + [("strategy", c) for c in strategies] + [("user", u) for u in users]
    jobs += [("index", "000300"), ("macro", "CPI同比"), ("news", "2025-09-29")]
    if order == "reversed":
        jobs = jobs[::-1]
    out: dict[str, Any] = {}
    for kind, key in jobs:
        if kind == "fund":
            out[f"fund:{key}"] = w.fund(key).to_dict()
        elif kind == "strategy":
            out[f"strategy:{key}"] = w.strategy(key).to_dict()
        elif kind == "user":
            out[f"user:{key}"] = w.user(key).to_dict()
        elif kind == "index":
            out[f"index:{key}"] = w.index_series(key).to_dict()
        elif kind == "macro":
            out[f"macro:{key}"] = w.macro(key)
        else:
            out[f"news:{key}"] = w.news_for_day(date.fromisoformat(key))
    return json.dumps(out, ensure_ascii=False, sort_keys=True)


def digest(text: str) -> str:
    """SHA-256 hex of a snapshot."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
