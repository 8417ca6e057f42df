"""Entity types that tools consume and produce; they drive the data-flow graph and the simulator.

An edge A -> B exists in the dependency graph when A produces an entity type that B consumes.
Generic inputs that a user can type directly (keywords, free-text dates) are entity types too, but
they are *sources*: nothing needs to produce them first, so they are excluded from edges.
"""

from __future__ import annotations

from typing import Literal, TypeGuard, get_args

EntityType = Literal[
    # Qieman / fund-advisory world
    "fund_code",
    "fund_name",
    "strategy_code",
    "strategy_name",
    "user_id",
    "service_account_id",
    "asset_plan_id",
    "announcement_id",
    "manager_name",
    "fund_company",
    "fund_holdings",
    "portfolio_weights",
    "asset_allocation",
    "nav_series",
    "return_metrics",
    "risk_metrics",
    "fee_rules",
    "trade_rules",
    "family_profile",
    "cashflow_items",
    "financial_statement",
    "chart_spec",
    "html_document",
    "trading_calendar",
    "date",
    "date_range",
    "keyword",
    "news_article",
    "market_quote",
    # FinToolBench (equities, derivatives, crypto, macro, ...)
    "stock_symbol",
    "index_symbol",
    "bond_code",
    "futures_symbol",
    "option_symbol",
    "crypto_symbol",
    "currency_pair",
    "exchange",
    "company_id",
    "article_id",
    "region",
    "industry",
    "macro_indicator",
    "price_series",
    "page",
]

ENTITY_TYPES: tuple[str, ...] = get_args(EntityType)


def is_entity_type(value: str) -> TypeGuard[EntityType]:
    """True when ``value`` is one of the entity types."""
    return value in ENTITY_TYPES


# Entities a user supplies directly; they never create dependency edges.
SOURCE_ENTITIES: frozenset[str] = frozenset({"keyword", "date", "date_range", "page", "region"})

# Entities that name a tradable instrument or an issuer (what a "symbol"-like argument carries).
INSTRUMENT_ENTITIES: frozenset[str] = frozenset(
    {
        "stock_symbol",
        "index_symbol",
        "fund_code",
        "bond_code",
        "futures_symbol",
        "option_symbol",
        "crypto_symbol",
        "currency_pair",
        "company_id",
        "industry",
    }
)


INSTRUMENT_ARGUMENTS = frozenset(
    {
        "symbol",
        "symbols",
        "code",
        "stock",
        "ticker",
        "tickers",
        "fund",
        "bond_code",
        "coin",
        "crypto_name",
        "ticker_slug",
        "ticker_slugs",
    }
)
"""Argument names (lower case) that name a traded instrument: a symbol, ticker, code or coin."""
