"""Fixed vocabularies the world builders draw from (names, themes, taxonomies), as data.

The tables live in ``data/vocab.json`` (shipped as package data); this module reads them once and
gives them the shapes the builders use (tuples, and int keys where the codes are numbers). Company
names, index names and the asset-class taxonomy codes/colours are public facts; every fund, strategy
and person built from them is synthetic.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

_DATA: dict[str, Any] = json.loads(
    (resources.files("finmcp.server.world") / "data" / "vocab.json").read_text("utf-8")
)


def _frozen(value: Any) -> Any:
    """JSON lists as tuples, all the way down (dicts stay dicts)."""
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return {k: _frozen(v) for k, v in value.items()}
    return value


def _table(name: str) -> Any:
    return _frozen(_DATA[name])


def _int_keys(name: str) -> dict[int, Any]:
    return {int(k): v for k, v in _table(name).items()}


# ---------------------------------------------------------------- fund types (one row per type)
_FUND_TYPES: tuple[dict[str, Any], ...] = _table("fund_types")


def _by_type(field: str) -> dict[str, Any]:
    return {t["name"]: t[field] for t in _FUND_TYPES if t[field] is not None}


FUND_TYPES: tuple[str, ...] = tuple(t["name"] for t in _FUND_TYPES)
FUND_TYPE_WEIGHTS: tuple[float, ...] = tuple(t["weight"] for t in _FUND_TYPES)
FUND_TYPE_CODES: dict[str, str] = _by_type("invest_type_code")
"""The real server's fundInvestType codes (seen: 01 index/equity, 02 bond, 04 money)."""
FUND_TYPE_CATEGORY: dict[str, tuple[str, str]] = _by_type("category")
"""Composition category names used by strategy compositions."""
FUND_RISK_LEVELS: dict[str, tuple[int, int]] = _by_type("risk_levels")
"""The range of the 5-level risk rating per type."""
BASE_MIX: dict[str, tuple[float, float]] = _by_type("base_mix")
"""Typical (stock, bond) shares of net assets by fund type, before per-fund variation."""
NAV_MODEL: dict[str, tuple[float, tuple[float, float], str, tuple[float, float]]] = _by_type("nav_model")
"""(daily idiosyncratic vol, (annual drift lo, hi), shared factor, beta range) by type (none for money funds)."""
TURNOVER_RANGE: dict[str, tuple[float, float]] = _by_type("turnover")
"""Annual stock turnover range (2.0 = 200%) by type."""
PEER_RETURN: dict[str, tuple[float, float]] = _by_type("peer_return")
"""(mean, spread) of a type's annual return: the reference its funds' returns are ranked against."""
PEER_VOLATILITY: dict[str, tuple[float, float]] = _by_type("peer_volatility")
PEER_DRAWDOWN: dict[str, tuple[float, float]] = _by_type("peer_drawdown")
HIDDEN_COSTS: dict[str, tuple[float, float]] = _by_type("hidden_costs")
"""Trading-cost range per type, as fractions per year."""
MANAGEMENT_FEE: dict[str, tuple[float, float]] = _by_type("management_fee")
"""Annual management-fee range per type (a fund's fee is one of five steps of it)."""

# ---------------------------------------------------------------- names, themes, taxonomies
COMPANIES: tuple[tuple[str, str], ...] = _table("companies")
"""(short name used in fund names, full company name)."""
FACTORS: dict[str, tuple[float, float]] = _table("factors")
"""Shared daily market factors: (daily vol, annual drift)."""
INDEX_THEMES: tuple[str, ...] = _table("index_themes")
"""Index themes of index-fund names (沪深300, 中证红利, ...)."""
INDEX_FORMS: tuple[str, ...] = _table("index_forms")
"""How an index fund's name ends (ETF联接, 指数增强, ...)."""
STOCK_THEMES: tuple[str, ...] = _table("stock_themes")
"""Themes of equity-fund names."""
MIXED_THEMES: tuple[str, ...] = _table("mixed_themes")
"""Themes of mixed-fund names."""
MIXED_FORMS: tuple[str, ...] = _table("mixed_forms")
"""How a mixed fund's name ends."""
BOND_NAMES: tuple[str, ...] = _table("bond_names")
"""Bond-fund name stems."""
MONEY_NAMES: tuple[str, ...] = _table("money_names")
"""Money-fund name stems."""
QDII_NAMES: tuple[str, ...] = _table("qdii_names")
"""QDII-fund name stems."""
FOF_NAMES: tuple[str, ...] = _table("fof_names")
"""FOF name stems."""
INDUSTRIES: tuple[str, ...] = _table("industries")
"""The world's Shenwan level-1 industries."""
STOCK_PREFIXES: tuple[str, ...] = _table("stock_prefixes")
"""First syllables of synthetic stock names."""
STOCK_MIDDLES: tuple[str, ...] = _table("stock_middles")
"""Middle syllables of synthetic stock names."""
INDUSTRY_SUFFIX: dict[str, str] = _table("industry_suffix")
"""How a stock's name ends, by industry."""
INDICES: tuple[tuple[str, str, float, str, float], ...] = _table("indices")
"""(code, name, level at 2025-09-30 roughly, factor, beta)."""
RISK_LEVEL_NAMES: dict[int, str] = _int_keys("risk_level_names")
"""Names of the five risk levels."""
RISK_PROFILE_NAMES: dict[str, str] = _table("risk_profile_names")
"""Investor risk profiles C1-C5."""
HOLDING_DURATIONS: dict[int, str] = _int_keys("holding_durations")
"""Recommended holding period by risk level."""
STRATEGY_NAME_PARTS_A: tuple[str, ...] = _table("strategy_name_parts_a")
"""First halves of strategy names."""
STRATEGY_NAME_PARTS_B: tuple[str, ...] = _table("strategy_name_parts_b")
"""Second halves of strategy names."""
STRATEGY_MANAGERS: tuple[str, ...] = _table("strategy_managers")
"""Advisers who run strategies."""
ASSET_CLASSES: dict[str, tuple[str, str, str]] = _table("asset_classes")
"""Asset-class taxonomy used by asset-class analyses: code -> (name, level, colour)."""
PLAN_CLASSES: tuple[str, ...] = _table("plan_classes")
"""Planning asset classes."""
PLAN_HORIZONS: tuple[str, ...] = _table("plan_horizons")
"""Investment horizons of allocation plans."""
NEWS_SOURCES: tuple[str, ...] = _table("news_sources")
"""Publishers of the world's news."""
NEWS_TOPICS: tuple[tuple[str, tuple[str, ...]], ...] = _table("news_topics")
"""(topic, keywords) of news items."""
