"""Valid arguments for a tool the reference names without them (FinToolBench's ``select_tools``).

FinToolBench questions say which tools answer them but give no arguments. The oracle still has to
make calls the server accepts, and it may use only what any agent could know: the tool's
``tools/list`` entry (input schema, parameter descriptions, the ``source`` in its finance ``_meta``),
the question text, and deterministic defaults. It never imports the server or its world.

:func:`tool_arguments` fills every required property, and an optional one only when the question
names what it asks for (an instrument, or dates). Values, in order of preference:

- ``const``, else an ``enum`` member (the one the question mentions, else the first);
- a choice from the description's ``One of:`` / ``Options:`` list (mentioned, else ``Default:``,
  else the first; ``XXXX`` placeholders become a year);
- dates, for parameters whose name or description says date / time window / ``Format: YYYY...`` /
  Unix timestamp: the question's dates (``2023年11月8日``, ``2023-11-08``, ``20231108``, a
  ``11月9日`` after a dated one) or years (``FY2017``, ``2016年``), else :data:`DEFAULT_END`;
  written in the format the description states (default ``YYYYMMDD`` for akshare tools,
  ``YYYY-MM-DD`` otherwise); a start never follows its end;
- instruments, by what the description calls them: six-digit codes in the question (A-shares,
  funds, indices), US tickers (``(AMZN)``, ``NYSE: NKE``, ``$AAPL``, or a well-known company name in
  :data:`US_COMPANIES`), cryptocurrencies; else the description's ``Example:``, else a default of
  :data:`DEFAULTS`;
- numbers by parameter name (page 1, size 10, year/month/day of the question's date, ...), kept
  within ``minimum``/``maximum``;
- any other string: the ``Example:`` of its description, else a default by name.

Every value has the schema's type, so the arguments validate against the input schema.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from typing import Any

from finmcp.tool_specs import param_text
from finmcp.tool_specs.entities import INSTRUMENT_ARGUMENTS
from finmcp.tool_specs.model import META_KEY
from finmcp.tool_specs.validation import fit_length

DEFAULT_END = date(2024, 12, 31)
"""The date used when the question names none (a window ends on it)."""

DEFAULT_WINDOW_DAYS = 30
"""Length of a date range around a single date (it ends on that date)."""

DEFAULTS = {
    "a_share": "600519",
    "fund": "000001",
    "index": "000300",
    "bond": "019547",
    "futures": "AU0",
    "option": "510050",
    "board": "银行",
    "crypto": "BTC",
    "currency_pair": "USDCNY",
    "us_ticker": "AAPL",
}
"""Instrument codes used when the question names no instrument of the kind a parameter wants."""

US_COMPANIES = {
    "3m": "MMM",
    "activision": "ATVI",
    "adobe": "ADBE",
    "alibaba": "BABA",
    "alphabet": "GOOGL",
    "amazon": "AMZN",
    "amcor": "AMCR",
    "american express": "AXP",
    "apple": "AAPL",
    "at&t": "T",
    "bank of america": "BAC",
    "best buy": "BBY",
    "boeing": "BA",
    "cisco": "CSCO",
    "coca-cola": "KO",
    "coca cola": "KO",
    "corning": "GLW",
    "costco": "COST",
    "cvs": "CVS",
    "disney": "DIS",
    "ebay": "EBAY",
    "exxon": "XOM",
    "general mills": "GIS",
    "google": "GOOGL",
    "ibm": "IBM",
    "intel": "INTC",
    "johnson & johnson": "JNJ",
    "jpmorgan": "JPM",
    "kraft heinz": "KHC",
    "lockheed martin": "LMT",
    "mcdonald's": "MCD",
    "meta": "META",
    "microsoft": "MSFT",
    "netflix": "NFLX",
    "nike": "NKE",
    "nvidia": "NVDA",
    "oracle": "ORCL",
    "paypal": "PYPL",
    "pepsico": "PEP",
    "pfizer": "PFE",
    "procter & gamble": "PG",
    "starbucks": "SBUX",
    "tesla": "TSLA",
    "verizon": "VZ",
    "visa": "V",
    "walmart": "WMT",
}
"""Well-known US company names (lower case) and their tickers: what any LLM agent knows."""

SEARCH_PARAMETERS = frozenset({"q", "query", "search", "text", "string", "keyword", "keywords", "name"})
"""String parameters that take a search text: the question's ticker, else a well-known name."""

STRING_DEFAULTS: tuple[tuple[frozenset[str], str], ...] = (
    (frozenset({"base", "from_currency", "base_code", "currency", "fromcurrency", "is_from"}), "USD"),
    (frozenset({"to_currency", "tocurrency", "target_currency", "to"}), "CNY"),
    (frozenset({"region", "countrycode", "country"}), "US"),
    (frozenset({"lang", "language"}), "en"),
    (frozenset({"api_key", "apikey", "token", "cookie"}), "demo"),
    (frozenset({"url"}), "https://example.com"),
)
"""Values of string parameters by (lower-case) name, before any ``Example:`` of the description."""

CRYPTO_NAMES = {"bitcoin": "BTC", "比特币": "BTC", "ethereum": "ETH", "以太坊": "ETH", "solana": "SOL"}

_FULL_DATE = re.compile(r"(?<!\d)((?:19|20)\d\d)\s*(?:[-/.年])\s*(\d{1,2})\s*(?:[-/.月])\s*(\d{1,2})(?!\d)")
_COMPACT_DATE = re.compile(r"(?<!\d)((?:19|20)\d\d)(\d\d)(\d\d)(?!\d)")
_MONTH_DAY = re.compile(r"(?<![\d年/.-])(\d{1,2})月(\d{1,2})日")
_YEAR = re.compile(r"(?:\bFY\s?|(?<![\d.]))((?:19|20)\d\d)(?:\s*年|\b)(?![-/.]\d)")
_SIX_DIGITS = re.compile(r"(?<![\d.,])(\d{6})(?![\d.,%])")
_MARKED_TICKER = re.compile(r"\$([A-Z]{1,5})\b|\b(?:NYSE|NASDAQ|Nasdaq|AMEX)\s*:\s*([A-Z]{1,5})\b")
_PAREN_TICKER = re.compile(r"\(([A-Z]{1,5})\)")
_NOT_A_DATE = re.compile(r"offset|paging|record|page", re.I)
_DATE_TEXT = re.compile(
    r"\bdates?\b|date range|time window|time of the window|\b(?:first|last) day\b|trading date|timestamp|"
    r"Format:\s*(?:YYYY|yyyy|Unix)",
    re.I,
)
_START_NAME = re.compile(
    r"^(?:start|begin|from|since|is_from)|(?:start|from|begin)(?:_?date|_?day|_?time)?$", re.I
)
_END_NAME = re.compile(r"^(?:end|to|until)|(?:end|to)(?:_?date|_?day|_?time)?$", re.I)


@dataclass
class QuestionEntities:
    """What a question names: dates, years, six-digit codes, US tickers and cryptocurrencies."""

    text: str = ""
    dates: list[date] = field(default_factory=list)
    years: list[int] = field(default_factory=list)
    codes: list[str] = field(default_factory=list)
    tickers: list[str] = field(default_factory=list)
    cryptos: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, text: str) -> QuestionEntities:
        """The entities of ``text`` in order of appearance (duplicates removed)."""
        found = cls(text=text or "")
        text = found.text
        spans: list[tuple[int, int]] = []
        dated: list[tuple[int, date]] = []  # (position, date) of full dates
        for rx in (_FULL_DATE, _COMPACT_DATE):
            for m in rx.finditer(text):
                d = _date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
                if d is not None:
                    dated.append((m.start(), d))
                    spans.append(m.span())
        for m in _MONTH_DAY.finditer(text):  # "11月9日" takes the year of the last full date before it
            before = [d for pos, d in sorted(dated, key=lambda x: x[0]) if pos < m.start()]
            d = _date(before[-1].year, int(m.group(1)), int(m.group(2))) if before else None
            if d is not None:
                dated.append((m.start(), d))
        for _, d in sorted(dated, key=lambda x: x[0]):
            _add(found.dates, d)
        for m in _YEAR.finditer(text):
            if not any(a <= m.start(1) < b for a, b in spans):
                _add(found.years, int(m.group(1)))
        for m in _SIX_DIGITS.finditer(text):
            if not any(a <= m.start() < b for a, b in spans) and not _looks_like_year_month(m.group(1)):
                _add(found.codes, m.group(1))
        for m in _MARKED_TICKER.finditer(text):  # $AAPL, NYSE: NKE
            _add(found.tickers, next(g for g in m.groups() if g))
        lower = text.lower()
        hits = sorted(
            (pos, ticker)
            for name, ticker in US_COMPANIES.items()
            for pos in [_word_at(lower, name)]
            if pos >= 0
        )
        for _, ticker in hits:  # Amazon, Nike
            _add(found.tickers, ticker)
        for m in _PAREN_TICKER.finditer(text):  # (AMZN), unless it abbreviates the words before it
            if not _abbreviates(text[: m.start()], m.group(1)):
                _add(found.tickers, m.group(1))
        for name, symbol in CRYPTO_NAMES.items():
            if name in lower:
                _add(found.cryptos, symbol)
        for m in re.finditer(r"\b(BTC|ETH|USDT|SOL|XRP|DOGE)\b", text):
            _add(found.cryptos, m.group(1))
        return found

    def window(self) -> tuple[date, date]:
        """The (start, end) dates the question is about; a single date ends a 30-day window."""
        if len(self.dates) >= 2:
            return min(self.dates), max(self.dates)
        if self.dates:
            return self.dates[0] - timedelta(days=DEFAULT_WINDOW_DAYS), self.dates[0]
        if self.years:
            return date(min(self.years), 1, 1), date(max(self.years), 12, 31)
        return DEFAULT_END - timedelta(days=DEFAULT_WINDOW_DAYS), DEFAULT_END

    def has_dates(self) -> bool:
        """True when the question names a date or a year."""
        return bool(self.dates or self.years)


def _add(items: list[Any], value: Any) -> None:
    if value not in items:
        items.append(value)


def _date(year: int | None, month: int, day: int) -> date | None:
    try:
        return date(year, month, day) if year else None
    except ValueError:
        return None


def _looks_like_year_month(code: str) -> bool:
    return code[:2] in ("19", "20") and 1 <= int(code[4:]) <= 12 and code[2] in "0129"


def _abbreviates(before: str, acronym: str) -> bool:
    """True when ``acronym`` is the initials of the words just before it (days payable outstanding (DPO))."""
    words = re.findall(r"[A-Za-z]+", before)[-len(acronym) :]
    return len(words) == len(acronym) and "".join(w[0] for w in words).upper() == acronym


def _word_at(text: str, word: str) -> int:
    m = re.search(rf"(?<![a-z]){re.escape(word)}(?![a-z])", text)
    return m.start() if m else -1


def tool_arguments(tool: dict[str, Any] | None, entities: QuestionEntities) -> dict[str, Any]:
    """Arguments for ``tool`` (its ``tools/list`` entry) that its input schema accepts, informed by the
    question's ``entities``; ``{}`` for an unknown tool."""
    if not isinstance(tool, dict):
        return {}
    schema = tool.get("inputSchema") or {}
    meta = (tool.get("_meta") or {}).get(META_KEY) or {}
    filler = _Filler(entities, str(meta.get("source") or ""))
    return filler.object(schema, top=True)


class _Filler:
    """Values for one tool's parameters."""

    def __init__(self, entities: QuestionEntities, source: str) -> None:
        self.q = entities
        self.source = source
        self.start, self.end = entities.window()

    # ------------------------------------------------------------ structure
    def object(self, schema: dict[str, Any], top: bool = False) -> dict[str, Any]:
        props = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        out: dict[str, Any] = {}
        for name, prop in props.items():
            if not isinstance(prop, dict):
                continue
            if name in required or (top and self.informed(name, prop)):
                out[name] = self.value(name, prop)
        return out

    def informed(self, name: str, prop: dict[str, Any]) -> bool:
        """An optional parameter the question answers: an instrument it names, or its dates."""
        desc = str(prop.get("description") or "")
        if self.is_date(name, prop):
            return self.q.has_dates()
        kind = self.instrument(name, desc)
        if kind in ("a_share", "fund", "index"):
            return bool(self.q.codes)
        if kind == "us_ticker":
            return bool(self.q.tickers)
        if kind == "crypto":
            return bool(self.q.cryptos)
        return False

    def value(self, name: str, schema: dict[str, Any]) -> Any:
        if "const" in schema:
            return schema["const"]
        kind = _type(schema)
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return self.mentioned(schema["enum"]) or schema["enum"][0]
        if kind == "object":
            return self.object(schema)
        if kind == "array":
            items = schema.get("items")
            item_schema: dict[str, Any] = items if isinstance(items, dict) else {"type": "string"}
            least = schema.get("minItems")
            n = least if isinstance(least, int) else 1
            return [self.value(name, item_schema) for _ in range(max(n, 1))]
        if kind == "boolean":
            default = schema.get("default")
            return default if isinstance(default, bool) else False
        if kind == "null":
            return None
        raw = self.raw(name, schema)
        return _coerce(raw, kind, schema)

    # ------------------------------------------------------------ leaves
    def raw(self, name: str, schema: dict[str, Any]) -> Any:
        desc = str(schema.get("description") or "")
        choices = param_text.choices(desc, year=self.end.year)
        default = param_text.default(desc)
        if choices:
            pick = self.mentioned(choices) or default
            return pick if pick in choices else choices[0]
        if "default" in schema and schema["default"] is not None:
            return schema["default"]
        if default is not None:
            return default
        if self.is_date(name, schema):
            return self.date_value(name, schema, desc)
        lname = name.lower()
        year = self.year_of(lname, desc)
        if year is not None:
            return year
        kind = self.instrument(name, desc)
        if kind:
            return self.instrument_value(kind, lname, desc)
        if _type(schema) in ("number", "integer"):
            return self.number(lname, desc)
        return self.string(lname, desc)

    def mentioned(self, options: list[Any]) -> Any:
        """The first option (a string of 2+ characters) the question mentions, or None."""
        for option in options:
            if isinstance(option, str) and len(option) > 1 and option in self.q.text:
                return option
        return None

    def is_date(self, name: str, schema: dict[str, Any]) -> bool:
        desc = str(schema.get("description") or "")
        if _NOT_A_DATE.search(desc) or _type(schema) not in ("string", "number", "integer"):
            return False
        lname = name.lower()
        if lname in ("day", "month", "year") or "year" in lname:
            return False
        return bool(_DATE_TEXT.search(desc)) or bool(re.search(r"date", lname))

    def year_of(self, lname: str, desc: str) -> int | None:
        if lname in ("year", "start_year", "end_year", "issue_year", "fiscalyear") or re.match(
            r"(?:first |last )?year\b", desc, re.I
        ):
            if lname.startswith("start") or desc.lower().startswith("first"):
                return self.start.year
            return self.end.year
        return None

    def date_value(self, name: str, schema: dict[str, Any], desc: str) -> Any:
        start = bool(_START_NAME.search(name.lower()))
        d = self.start if start else self.end  # an end, or a single date: the day the question is about
        label = param_text.stated_date_format(desc) or ""
        example = param_text.example(desc)
        if not label and example:
            label = param_text.date_format_of_value(example)
        if not label and _type(schema) in ("number", "integer"):
            label = "Unix timestamp"
        if not label:
            label = "YYYYMMDD" if self.source == "akshare" else "YYYY-MM-DD"
        return _format_date(d, label, end=not start)

    def instrument(self, name: str, desc: str) -> str | None:
        """The kind of instrument a parameter names (``a_share``, ``us_ticker``, ...), or None."""
        lname = name.lower()
        text = desc.lower()
        symbolish = lname in INSTRUMENT_ARGUMENTS or (lname == "is_id" and "ticker" in text)
        if lname in ("fundcode", "fundcodes", "fundcodelist", "fundnameorcode"):
            return "fund"
        if not symbolish:
            return None
        for words, kind in (
            (("crypto",), "crypto"),
            (("currency",), "currency_pair"),
            (("fund code",), "fund"),
            (("index code",), "index"),
            (("bond code",), "bond"),
            (("futures", "commodity"), "futures"),
            (("option",), "option"),
            (("board", "sector", "industry"), "board"),
        ):
            if any(w in text for w in words):
                return kind
        if lname in ("coin", "crypto_name"):
            return "crypto"
        if lname.startswith("ticker") or self.source == "rapidapi":
            return "us_ticker"
        example = param_text.example(desc)
        if example and re.fullmatch(r"[A-Z]{1,5}", example):
            return "us_ticker"
        return "a_share"

    def instrument_value(self, kind: str, lname: str, desc: str) -> str:
        example = param_text.example(desc)
        value: str | None = None
        if kind in ("a_share", "fund", "index") and self.q.codes:
            value = self.q.codes[0]
        elif kind in ("a_share", "us_ticker") and self.q.tickers:  # a_share: a question on a US company
            value = self.q.tickers[0]
        elif kind == "crypto" and self.q.cryptos:
            value = self.q.cryptos[0]
        if value is None:
            value = example or DEFAULTS[kind]
        if kind == "a_share" and example and re.fullmatch(r"(sh|sz)\d{6}", example):
            value = ("sh" if value.startswith("6") else "sz") + value if value.isdigit() else value
        if "slug" in lname:
            value = value.lower()
        return value

    def number(self, lname: str, desc: str) -> float:
        example = param_text.example(desc)
        if re.search(r"page|begin", lname) and "size" not in lname:
            return 1
        if re.search(r"size|limit|count|^n$|^top$|outputsize", lname):
            return 10
        if lname == "month":
            return self.end.month
        if lname == "day":
            return self.end.day
        if lname == "timeout":
            return 10
        if lname == "time_utc_offset":
            return 28800
        if example and re.fullmatch(r"-?\d+(?:\.\d+)?", example):
            return float(example)
        if re.search(r"rate|ratio|return", lname):
            return 0.05
        if re.search(r"amount|value|price|income|payment", lname):
            return 10000
        return 1

    def string(self, lname: str, desc: str) -> str:
        if lname in SEARCH_PARAMETERS:
            if self.q.tickers:
                return self.q.tickers[0]
            return "Apple" if self.source == "rapidapi" else "贵州茅台"
        for names, value in STRING_DEFAULTS:
            if lname in names:
                return value
        example = param_text.example(desc)
        if example:
            return example
        if re.search(r"period|interval|gran|bucket", lname):
            return "daily"
        if "page" in lname or lname.endswith("id") or lname.endswith("ids"):
            return "1"
        return "default"


# ---------------------------------------------------------------- helpers


def _type(schema: dict[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        return "object" if "properties" in schema else "array" if "items" in schema else "string"
    return str(kind)


def _format_date(d: date, label: str, end: bool = False) -> str | int:
    """``d`` written as ``label`` says (``YYYYMMDD``, ``YYYY-MM-DD HH:MM:SS``, ``Unix timestamp``, ...)."""
    if "unix" in label.lower():
        moment = datetime(d.year, d.month, d.day, 23 if end else 0, 0, 0, tzinfo=timezone(timedelta(hours=8)))
        seconds = int(moment.timestamp())
        return seconds * 1000 if "milli" in label.lower() else seconds
    pattern = label
    for token, code in (("HH:MM:SS", "%H:%M:%S"), ("HH:mm:ss", "%H:%M:%S"), ("HH:MM", "%H:%M")):
        pattern = pattern.replace(token, code)
    for token, code in (("YYYY", "%Y"), ("yyyy", "%Y"), ("MM", "%m"), ("DD", "%d"), ("dd", "%d")):
        pattern = pattern.replace(token, code)
    if "%" not in pattern:
        return d.strftime("%Y-%m-%d")
    return datetime(d.year, d.month, d.day).strftime(pattern)


def _coerce(value: Any, kind: str, schema: dict[str, Any]) -> Any:
    """``value`` as the schema's type, kept within its bounds and lengths."""
    if kind in ("number", "integer"):
        try:
            x = float(value)
        except (TypeError, ValueError):
            x = 1.0
        lo, hi = schema.get("minimum"), schema.get("maximum")
        if isinstance(lo, (int, float)) and x < lo:
            x = lo
        if isinstance(hi, (int, float)) and x > hi:
            x = hi
        xlo, xhi = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
        step = 1 if kind == "integer" else 0.5
        if isinstance(xlo, (int, float)) and x <= xlo:
            x = xlo + step
        if isinstance(xhi, (int, float)) and x >= xhi:
            x = xhi - step
        return int(x) if kind == "integer" or float(x).is_integer() else x
    return fit_length(str(value), schema)
