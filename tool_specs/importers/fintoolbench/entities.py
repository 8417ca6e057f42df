"""Entity types that FinToolBench tools consume and produce (they drive the dependency graph).

The name rules are data: ``data/entity_rules.json`` and ``data/parameter_kinds.tsv``.

Rules, in short:

* **consumes** comes from parameter names, read in the tool's context. A symbol-like parameter
  (``symbol``, ``symbols``, ``code``) stands for the instrument type the tool is about: the leading
  name token first (``stock_`` -> stock, ``fund_`` -> fund, ``option_`` -> option, ...), then the
  regulatory domain. A parameter whose source lists fixed choices (``choice of {...}``) is a category
  selector, not an entity. ``start_date``/``end_date`` -> ``date_range``; ``date`` -> ``date``; upstream
  ids (``performanceid``, ``ticker_slug``, ``tickerid``, ``pair_id``, ...) -> ``company_id``; article,
  news and filing ids -> ``article_id``; ``region`` -> ``region``; paging -> ``page``; search text ->
  ``keyword``.
* **produces** comes from named output columns (code columns -> the symbol type, date columns ->
  ``date``, price columns -> ``price_series``) and from what an endpoint evidently returns: listings
  of constituents, codes and contracts produce symbols; RapidAPI search/auto-complete and ranking
  endpoints produce ``company_id``; article/news/filing lists produce ``article_id``; per-instrument
  history produces ``price_series``; quotes produce ``market_quote``; statements produce
  ``financial_statement``; news produce ``news_article``.
"""

from __future__ import annotations

import re

from finmcp.tool_specs.entities import INSTRUMENT_ENTITIES
from finmcp.tool_specs.importers.fintoolbench.facts import ToolFacts
from finmcp.tool_specs.importers.fintoolbench.outputs import OutputInfo
from finmcp.tool_specs.importers.fintoolbench.tables import json_table, tsv_map

# ----------------------------------------------------------------------------- instrument types


def _rules(section: str):
    return json_table("entity_rules.json", section)


_LEADING_TOKEN: dict[str, str] = _rules("leading_token")
_ANY_TOKEN: tuple[tuple[str, str], ...] = tuple(tuple(p) for p in _rules("any_token"))
"""(token, entity) in priority order, when the leading token says nothing."""
_BY_DOMAIN: dict[str, str] = _rules("by_domain")
_RAPIDAPI_DOMAIN_ORDER: tuple[str, ...] = tuple(_rules("rapidapi_domain_order"))
_BOARD_TOKENS = frozenset(_rules("board_tokens"))


def _name_tokens(facts: ToolFacts) -> tuple[str, ...]:
    return tuple(t for t in facts.tokens if t not in {"get", "rv", "from"})


def instrument_entity(facts: ToolFacts) -> str | None:
    """The instrument type a tool's symbol-like parameter stands for, or None if it names none."""
    tokens = _name_tokens(facts)
    if facts.tool_from == "rapidapi":
        if {"coin", "coins", "crypto", "cryptocurrency"} & set(tokens):
            return "crypto_symbol"
        for domain in _RAPIDAPI_DOMAIN_ORDER:
            if domain in facts.regulatory_domains:
                return _BY_DOMAIN[domain]
        return None
    if tokens and tokens[0] == "stock":
        if _BOARD_TOKENS & set(tokens):
            return "industry"
        return "index_symbol" if "index" in tokens else "stock_symbol"
    if tokens and tokens[0] in _LEADING_TOKEN:
        return _LEADING_TOKEN[tokens[0]]
    for token, entity in _ANY_TOKEN:
        if token in tokens:
            return entity
    for domain in facts.regulatory_domains:
        if domain in _BY_DOMAIN:
            return _BY_DOMAIN[domain]
    return None


_NOT_AN_INSTRUMENT = "-"
_TEXT_HINTS = tuple((re.compile(p), e) for p, e in _rules("symbol_text_hints"))
"""The first clause of an akshare ``:param symbol:`` text says what the symbol is (``-``: not an instrument)."""


def _symbol_text_hint(text: str) -> str | None:
    first_clause = re.split(r"[,;，；(（]", text, maxsplit=1)[0]
    names_a_code = re.search(r"代码|名称|简称", first_clause) is not None
    for pattern, entity in _TEXT_HINTS:
        if pattern.search(first_clause) and (names_a_code or entity in {_NOT_AN_INSTRUMENT, "region"}):
            return entity
    return None


# ----------------------------------------------------------------------------- consumes

_PARAMETER_KINDS: dict[str, str] = tsv_map("parameter_kinds.tsv")
"""What a parameter name stands for (``data/parameter_kinds.tsv``)."""
_ARTICLE_WORDS = re.compile(r"article|news|transcript|analysis|press|comment", re.I)


def _is_id_entity(facts: ToolFacts, text: str) -> str:
    if re.search(r"\bsymbol\b", text, re.I):
        return instrument_entity(facts) or "stock_symbol"
    if _ARTICLE_WORDS.search(text) or (not text.strip() and _ARTICLE_WORDS.search(facts.name)):
        return "article_id"
    return "company_id"


def parameter_entity(facts: ToolFacts, name: str) -> str | None:
    """The entity type parameter ``name`` of the tool consumes, or None."""
    text = facts.parameter_source_text(name)
    has_choices = facts.parameter_choices(name) is not None
    kind = _PARAMETER_KINDS.get(name)
    if kind in ("region", "date"):
        return kind
    if kind == "date_range":
        return "page" if re.search(r"offset|paging|next page", text, re.I) else "date_range"
    if kind in ("page", "keyword", "article_id", "company_id"):
        return kind
    if has_choices:
        return None  # a category selector, not an entity
    if name == "is_id":
        return _is_id_entity(facts, text)
    if kind == "symbol":
        hint = _symbol_text_hint(text)
        if hint == _NOT_AN_INSTRUMENT:
            return None
        return hint or instrument_entity(facts)
    if name in {"stock", "ticker"}:
        return "stock_symbol"
    if name == "fund":
        return "fund_code"
    if name == "bond_code":
        return "bond_code"
    if name == "contract":
        return "option_symbol" if "option" in facts.tokens else "futures_symbol"
    if name == "vars_list":
        return "futures_symbol"
    if name == "crypto_name":
        return "crypto_symbol"
    if kind == "currency" or (name == "base" and "forex" in facts.regulatory_domains):
        return "currency_pair"
    if kind == "exchange":
        return "exchange"
    return None


def infer_consumes(facts: ToolFacts) -> tuple[str, ...]:
    """Entity types the tool's parameters take, in parameter order, without repeats."""
    found: list[str] = []
    for name in facts.properties:
        entity = parameter_entity(facts, name)
        if entity and entity not in found:
            found.append(entity)
    return tuple(found)


# ----------------------------------------------------------------------------- produces

_CODE_COLUMN = re.compile(r"(代码|symbol|code|ticker)$", re.I)
_DATE_COLUMN = re.compile(r"(^|_)(date|time)$|日期|时间", re.I)
_PRICE_COLUMN = re.compile(r"(^|_)(price|close|open|high|low|sp)$|价", re.I)

_NOT_SPOT_LISTINGS: tuple[str, ...] = tuple(_rules("not_spot_listings"))
_HISTORY_TOKENS = frozenset(_rules("history_tokens"))
_QUOTE_TOKENS = frozenset(_rules("quote_tokens"))
_STATEMENT_PHRASES: tuple[str, ...] = tuple(_rules("statement_phrases"))
_SEARCH_PHRASES: tuple[str, ...] = tuple(_rules("search_phrases"))
_ARTICLE_TOKENS = frozenset(_rules("article_tokens"))
_NOT_A_LIST = frozenset(_rules("not_a_list"))
_RAPIDAPI_PRICE: tuple[str, ...] = tuple(_rules("rapidapi_price"))


def _has_phrase(name: str, phrases: tuple[str, ...]) -> bool:
    padded = f"_{name.lower()}_"
    return any(f"_{p}_" in padded for p in phrases)


def _takes_an_instrument(facts: ToolFacts) -> bool:
    return any(parameter_entity(facts, p) in INSTRUMENT_ENTITIES for p in facts.properties)


def _akshare_listing(facts: ToolFacts) -> str | None:
    """The symbol type an akshare listing endpoint returns, or None when it is not a listing."""
    tokens = set(_name_tokens(facts))
    if tokens & {"cons", "component"}:
        return "stock_symbol"  # index and board constituents are stocks
    if "name_code" in facts.name or tokens & {"codes", "classify"}:
        return instrument_entity(facts) or "stock_symbol"
    if "category" in tokens:
        return "industry" if "industry" in tokens else instrument_entity(facts)
    if "contract" in tokens and not _takes_an_instrument(facts):
        return instrument_entity(facts)
    if _has_phrase(facts.name, ("currencies", "pair_map")):
        return "currency_pair"
    spot_listing = tokens & {"spot", "realtime"} and not _has_phrase(facts.name, _NOT_SPOT_LISTINGS)
    if spot_listing and not _takes_an_instrument(facts):
        return instrument_entity(facts)
    return None


def _from_columns(facts: ToolFacts, output: OutputInfo) -> list[str]:
    found: list[str] = []
    names = [c.name for c in output.columns]
    if any(_CODE_COLUMN.search(n) for n in names):
        found.append(instrument_entity(facts) or "stock_symbol")
    if any(_DATE_COLUMN.search(n) for n in names):
        found.append("date")
    if any(_PRICE_COLUMN.search(n) for n in names):
        found.append("price_series")
    return found


def _akshare_produces(facts: ToolFacts) -> list[str]:
    tokens = set(_name_tokens(facts))
    found: list[str] = []
    listing = _akshare_listing(facts)
    if listing:
        found.append(listing)
    if tokens & _HISTORY_TOKENS and _takes_an_instrument(facts):
        found.append("price_series")
    if tokens & _QUOTE_TOKENS:
        found.append("market_quote")
    if _has_phrase(facts.name, _STATEMENT_PHRASES):
        found.append("financial_statement")
    if "news" in tokens or facts.name == "stock_info_global_cls":
        found.append("news_article")
    return found


def _rapidapi_produces(facts: ToolFacts) -> list[str]:
    tokens = set(facts.tokens)
    found: list[str] = []
    if _has_phrase(facts.name, _SEARCH_PHRASES) or facts.name == "market_get_common_ranking":
        found.append("company_id")
    if _has_phrase(facts.name, ("currencies", "available_pairs")):
        found.append("currency_pair")
    article_list = tokens & _ARTICLE_TOKENS and not tokens & _NOT_A_LIST
    if "analysis" in tokens and not ({"list"} & tokens or facts.name.startswith("symbols_")):
        article_list = False  # an analysis *result*, not a list of analysis articles
    if article_list:
        found.append("article_id")
        if "news" in tokens:
            found.append("news_article")
    if _has_phrase(facts.name, _RAPIDAPI_PRICE) or facts.name == "daily":
        found.append("price_series")
    if tokens & {"quote", "quotes", "realtime", "ticker", "price"}:
        found.append("market_quote")
    if _has_phrase(facts.name, _STATEMENT_PHRASES):
        found.append("financial_statement")
    return found


def infer_produces(facts: ToolFacts, output: OutputInfo) -> tuple[str, ...]:
    """Entity types the tool's result carries, without repeats."""
    found = _from_columns(facts, output)
    found += _rapidapi_produces(facts) if facts.tool_from == "rapidapi" else _akshare_produces(facts)
    unique: list[str] = []
    for entity in found:
        if entity and entity not in unique:
            unique.append(entity)
    return tuple(unique)
