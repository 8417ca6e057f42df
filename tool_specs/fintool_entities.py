"""Entity types that FinToolBench tools consume and produce (they drive the dependency graph).

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

from tool_specs.entities import INSTRUMENT_ENTITIES
from tool_specs.fintool_facts import ToolFacts
from tool_specs.fintool_outputs import OutputInfo

# ----------------------------------------------------------------------------- instrument types

_LEADING_TOKEN = {
    "fund": "fund_code",
    "bond": "bond_code",
    "futures": "futures_symbol",
    "option": "option_symbol",
    "index": "index_symbol",
    "currency": "currency_pair",
    "fx": "currency_pair",
    "crypto": "crypto_symbol",
}
_ANY_TOKEN = (  # priority order when the leading token says nothing
    ("option", "option_symbol"),
    ("futures", "futures_symbol"),
    ("index", "index_symbol"),
    ("fund", "fund_code"),
    ("bond", "bond_code"),
    ("crypto", "crypto_symbol"),
    ("coin", "crypto_symbol"),
    ("coins", "crypto_symbol"),
    ("currency", "currency_pair"),
    ("currencies", "currency_pair"),
    ("fx", "currency_pair"),
    ("stock", "stock_symbol"),
)
_BY_DOMAIN = {
    "equity": "stock_symbol",
    "fund": "fund_code",
    "bond": "bond_code",
    "derivatives": "futures_symbol",
    "crypto": "crypto_symbol",
    "forex": "currency_pair",
}
"""Entity types that identify an instrument (as opposed to dates, pages, keywords)."""
_RAPIDAPI_DOMAIN_ORDER = ("crypto", "forex", "equity", "fund", "bond", "derivatives")
_BOARD_TOKENS = frozenset({"board", "sector", "concept"})


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
_TEXT_HINTS = (  # the first clause of an akshare ``:param symbol:`` text says what the symbol is
    (re.compile(r"提问者|营业部|指标|季报|年开始"), _NOT_AN_INSTRUMENT),
    (re.compile(r"国家"), "region"),
    (re.compile(r"板块|行业"), "industry"),
    (re.compile(r"基金指数"), "index_symbol"),
    (re.compile(r"基金"), "fund_code"),
    (re.compile(r"期权"), "option_symbol"),
    (re.compile(r"转债|债券|回购"), "bond_code"),
    (re.compile(r"指数"), "index_symbol"),
    (re.compile(r"股票|证券代码|个股|港股代码"), "stock_symbol"),
)


def _symbol_text_hint(text: str) -> str | None:
    first_clause = re.split(r"[,;，；(（]", text, maxsplit=1)[0]
    names_a_code = re.search(r"代码|名称|简称", first_clause) is not None
    for pattern, entity in _TEXT_HINTS:
        if pattern.search(first_clause) and (names_a_code or entity in {_NOT_AN_INSTRUMENT, "region"}):
            return entity
    return None


# ----------------------------------------------------------------------------- consumes

_DATE_RANGE = frozenset(
    {
        "start_date",
        "end_date",
        "date_start",
        "date_end",
        "datestart",
        "dateend",
        "start_day",
        "end_day",
        "start_year",
        "end_year",
        "start_time",
        "end_time",
        "start",
        "end",
        "since",
        "until",
        "startdate",
        "creation_from_date",
        "creation_to_date",
    }
)
_DATE = frozenset({"date", "trade_date", "delivery_date", "requested_execution_date"})
_COMPANY_IDS = frozenset(
    {
        "performanceid",
        "securityid",
        "tickerid",
        "ticker_id",
        "ticker_ids",
        "ticker_slug",
        "ticker_slugs",
        "symbol_ids",
        "ids",
        "issueid",
        "assetid",
        "pair_id",
        "uuid",
    }
)
_ARTICLE_IDS = frozenset({"article_id", "news_id", "filing_id", "press_releases_id"})
_PAGES = frozenset(
    {"page", "page_number", "pageindex", "number", "start_page", "end_page", "from_page", "to_page", "begin"}
)
_KEYWORDS = frozenset({"keyword", "q", "query", "text", "search", "string"})
_REGIONS = frozenset({"region", "regionid"})
_EXCHANGES = frozenset({"exchange", "market_venue", "exchange_slugs"})
_CURRENCIES = frozenset(
    {"from_currency", "to_currency", "fromcurrency", "tocurrency", "base_code", "from_to"}
)
_SYMBOLISH = frozenset({"symbol", "symbols", "code"})
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
    if name in _REGIONS:
        return "region"
    if name in _DATE:
        return "date"
    if name in _DATE_RANGE:
        return "page" if re.search(r"offset|paging|next page", text, re.I) else "date_range"
    if name in _PAGES:
        return "page"
    if name in _KEYWORDS:
        return "keyword"
    if name in _ARTICLE_IDS:
        return "article_id"
    if name in _COMPANY_IDS:
        return "company_id"
    if has_choices:
        return None  # a category selector, not an entity
    if name == "is_id":
        return _is_id_entity(facts, text)
    if name in _SYMBOLISH:
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
    if name in _CURRENCIES or (name == "base" and "forex" in facts.regulatory_domains):
        return "currency_pair"
    if name in _EXCHANGES:
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

_NOT_SPOT_LISTINGS = ("to_spot", "spot_stock", "spot_price", "spot_sys")
_HISTORY_TOKENS = frozenset({"hist", "daily", "min", "minute", "intraday", "tick", "history"})
_QUOTE_TOKENS = frozenset({"spot", "realtime", "quote", "quotes", "ticker", "price"})
_STATEMENT_PHRASES = (
    "balance_sheet",
    "profit_sheet",
    "cash_flow",
    "income_statement",
    "financial_report",
    "financial_stmts",
    "financials",
    "zcfz",
    "lrb",
    "xjll",
    "financial_benefit",
    "financial_debt",
    "financial_cash",
)
_SEARCH_PHRASES = ("auto_complete", "search", "suggestions", "suggested", "peers", "list_pairs", "web_pairs")
_ARTICLE_TOKENS = frozenset(
    {"article", "articles", "news", "analysis", "transcripts", "press", "filings", "instablog", "discussions"}
)
_NOT_A_LIST = frozenset({"details", "detail", "data", "maps", "summary", "comments", "comment", "tooltips"})
_RAPIDAPI_PRICE = ("historical_prices", "chart", "charts", "candles", "ohlcv", "time_series", "sparks")


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
