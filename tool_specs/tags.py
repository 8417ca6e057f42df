"""Finance tag vocabulary, exactly as the FinToolBench manifest uses it."""

from __future__ import annotations

from typing import Literal, get_args

Timeliness = Literal["realtime", "daily", "weekly", "monthly", "periodic", "as_filed", "static"]
IntentType = Literal["informational", "advisory", "transactional"]
RegulatoryDomain = Literal[
    "equity",
    "fund",
    "bond",
    "derivatives",
    "forex",
    "crypto",
    "macro",
    "economic_policy",
    "esg",
    "sentiment_trading",
]

TIMELINESS: tuple[str, ...] = get_args(Timeliness)
INTENT_TYPES: tuple[str, ...] = get_args(IntentType)
REGULATORY_DOMAINS: tuple[str, ...] = get_args(RegulatoryDomain)
