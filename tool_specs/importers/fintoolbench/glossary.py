"""The curated glossary behind finmcp's own FinToolBench text (data in ``data/glossary*.{json,tsv}``).

FinToolBench tool names are akshare function names (pinyin abbreviations plus a data-source suffix,
e.g. ``stock_gdfx_top_10_em``) and RapidAPI endpoint names. These tables expand the abbreviations into
plain English. They were written for finmcp; they hold no text copied from the published manifest.
"""

from __future__ import annotations

from finmcp.tool_specs.importers.fintoolbench.tables import json_table, tsv_map


def _section(name: str) -> dict:
    return dict(json_table("glossary.json", name))


PROVIDERS: dict[str, str] = _section("providers")
"""Data sites behind akshare functions, keyed by the name token that marks them."""
VENUES: dict[str, str] = _section("venues")
"""Exchanges; a trailing exchange token names where the data comes from."""
PROVIDER_OVERRIDES: dict[str, tuple[str, ...]] = {
    k: tuple(v) for k, v in _section("provider_overrides").items()
}
"""Tools whose name tokens mislead (``stock_zh_a_tick_tx_js`` reads Tencent, not Jin10)."""
DROP_TOKENS = frozenset({"get"})
PHRASES: dict[tuple[str, ...], str] = {
    tuple(p["tokens"]): p["text"] for p in json_table("glossary.json", "phrases")
}
"""Multi-token phrases, matched longest first before single tokens."""
WORDS: dict[str, str] = tsv_map("glossary_words.tsv")
"""Single tokens of tool and parameter names."""
RAPIDAPI_APIS: dict[str, str] = _section("rapidapi_apis")
"""Display names of the RapidAPI APIs named before the ``:`` of rapidapi descriptions."""
DOMAIN_WORDS: dict[str, str] = _section("domain_words")
TIMELINESS_PHRASES: dict[str, str] = _section("timeliness_phrases")
INTENT_PHRASES: dict[str, str] = _section("intent_phrases")
PARAMETERS: dict[str, str] = tsv_map("glossary_parameters.tsv")
"""Descriptions of common parameter names (the symbol-like names are handled by entity type)."""
SYMBOL_PARAMETER_TEXT: dict[str, str] = _section("symbol_parameter_text")
VALUE_LABELS: dict[str, dict[str, str]] = {k: dict(v) for k, v in _section("value_labels").items()}
"""finmcp's own labels for well-known parameter values."""
