"""Facts read from FinToolBench source text: docstring fields, option lists, examples, date formats.

The published manifest's descriptions are other people's prose; finmcp does not serve them (unless the
user asks for the published text). What it keeps are *facts* found in them: the akshare return type, the
RapidAPI API name before the first ``:``, the values a parameter accepts ("choice of {...}",
"One of the following : a|b", "Allowed values: ..."), example values and date formats.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from finmcp.tool_specs.tags import IntentType, RegulatoryDomain, Timeliness

_PARAM_LINE = re.compile(r"^:param\s+(\w+)\s*:\s?(.*)$")
_RTYPE_LINE = re.compile(r"^:rtype:\s*(.+?)\s*$", re.M)
_RETURN_TYPE_LINE = re.compile(r"^:return:\s*(pandas\.DataFrame|dict|list|str|tuple)\s*$", re.M)
_API_PREFIX = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_]*)\s*:")

ELLIPSIS_VALUES = frozenset({"...", "…", "***", "......", "etc", "etc."})
_OPEN_QUOTES = "\"'“‘"
_CLOSE_FOR = {'"': '"', "'": "'", "“": "”", "‘": "’"}
_QUOTE_CHARS = "\"'“”‘’`"


@dataclass(frozen=True)
class Choice:
    """One allowed value of a parameter, with the short label the source gives it (if any)."""

    value: str
    label: str | None = None


@dataclass(frozen=True)
class Choices:
    """The values a parameter accepts, as listed by the source."""

    options: tuple[Choice, ...]
    open_ended: bool = False
    """True when the source's list ends with "..." (more values are accepted than listed)."""
    default: str | None = None

    @property
    def values(self) -> tuple[str, ...]:
        """The bare values, in source order."""
        return tuple(c.value for c in self.options)


def akshare_param_texts(description: str) -> dict[str, str]:
    """The ``:param name: text`` blocks of an akshare docstring, continuation lines joined with newlines."""
    blocks: dict[str, str] = {}
    current: str | None = None
    for raw in description.splitlines():
        line = raw.strip()
        match = _PARAM_LINE.match(line)
        if match:
            current = match.group(1)
            blocks[current] = match.group(2)
        elif not line or line.startswith(":"):
            current = None
        elif current is not None:
            blocks[current] += "\n" + line
    return blocks


def akshare_return_type(description: str) -> str | None:
    """The declared return type (``:rtype:``, or a ``:return:`` line that names a type), if any."""
    match = _RTYPE_LINE.search(description) or _RETURN_TYPE_LINE.search(description)
    return match.group(1) if match else None


def rapidapi_api_name(description: str) -> str | None:
    """The RapidAPI API name that prefixes a rapidapi tool's description (``"morning_star: ..."``)."""
    match = _API_PREFIX.match(description)
    return match.group(1) if match else None


# --------------------------------------------------------------------------- option lists


def _split_outside_quotes(body: str, separators: str) -> list[str]:
    """Split ``body`` at ``separators`` that are not inside a quoted value.

    A quote character opens a quoted value only at the start of an item or after ``:`` (so stray quotes
    such as in ``{"a", b"}`` do not swallow the rest of the list).
    """
    items: list[str] = []
    current: list[str] = []
    closing: str | None = None
    for ch in body:
        if closing is not None:
            current.append(ch)
            if ch == closing or (closing == "”" and ch == '"'):
                closing = None
            continue
        stripped = "".join(current).strip()
        if ch in _OPEN_QUOTES and (not stripped or stripped.endswith(":")):
            closing = _CLOSE_FOR[ch]
            current.append(ch)
        elif ch in separators:
            items.append("".join(current))
            current = []
        else:
            current.append(ch)
    items.append("".join(current))
    return items


def _unquote(text: str) -> str:
    return text.strip().strip(_QUOTE_CHARS).strip()


def _key_and_label(item: str) -> tuple[str, str | None]:
    """``"qfq": "前复权"`` -> ("qfq", "前复权"); a bare item -> (item, None)."""
    parts = _split_outside_quotes(item, ":")
    if len(parts) >= 2 and parts[0].strip():
        return _unquote(parts[0]), _unquote(":".join(parts[1:])) or None
    return _unquote(item), None


def _from_items(items: list[tuple[str, str | None]], default: str | None = None) -> Choices | None:
    options: list[Choice] = []
    open_ended = False
    for value, label in items:
        if value in ELLIPSIS_VALUES:
            open_ended = True
        elif value not in {c.value for c in options}:
            options.append(Choice(value, label))
    if not options:
        return None
    return Choices(tuple(options), open_ended, default)


def _brace_choices(text: str) -> Choices | None:
    match = re.search(r"choice of(?:\s+choice of)?\s*\{", text)
    if not match:
        return None
    end = text.find("}", match.end())
    truncated = end < 0
    body = text[match.end() :] if truncated else text[match.end() : end]
    items = []
    for raw in _split_outside_quotes(body.replace("\n", " "), ",;"):
        if raw.strip():
            items.append(_key_and_label(raw))
    found = _from_items(items)
    if found and truncated:
        return Choices(found.options, True, found.default)
    return found


_LABELLED = (re.compile(r"^(\S+)\s+-\s+(.+)$"), re.compile(r"^(\S+?)\s*\((.+)\)$"))


def _labelled(item: str) -> tuple[str, str | None]:
    item = item.strip().strip("`").strip()
    for pattern in _LABELLED:
        match = pattern.match(item)
        if match:
            return match.group(1).strip("`"), match.group(2).strip()
    return item, None


def _first_clause(text: str) -> str:
    """Text up to the first line break or sentence end (a period followed by a space or the end)."""
    line = text.lstrip().split("\n", 1)[0]
    return re.split(r"\.(?:\s|$)", line, maxsplit=1)[0].strip()


def _one_of_choices(text: str) -> Choices | None:
    match = re.search(
        r"one of the followings?(?:\s+values)?(?:\s+is allowed)?(?:\s*\([^)]*\))?(?:\s*,[^:|\n]*)?\s*:?|"
        r"\bcan be one of\s*:?",
        text,
        re.I,
    )
    if not match:
        return None
    clause = _first_clause(text[match.end() :])
    if not clause:
        return None
    if "|" in clause and clause.count("|") >= clause.count(","):
        raw_items = clause.split("|")
    else:
        raw_items = re.split(r",|\band\b", clause)
    return _from_items([_labelled(i) for i in raw_items if i.strip()])


def _allowed_values(text: str) -> Choices | None:
    match = re.search(r"Allowed values\s*:\s*", text, re.I)
    if not match:
        return None
    chunk = re.split(r"\n\s*\n", text[match.end() :], maxsplit=1)[0].strip()
    chunk = re.split(r"\.(?:\s|$)", chunk, maxsplit=1)[0]
    raw_items = chunk.split(",") if "," in chunk else chunk.split()
    items: list[tuple[str, str | None]] = []
    default = None
    for raw in raw_items:
        value = raw.replace("(default)", "").strip().strip("`").strip()
        if "(default)" in raw:
            default = value
        if value:
            items.append((value, None))
    found = _from_items(items, default)
    if found and found.default is None:
        stated = re.search(r"Default value\s*:\s*(\S+)", text, re.I)
        if stated:
            return Choices(found.options, found.open_ended, stated.group(1))
    return found


def _either_or(text: str) -> Choices | None:
    match = re.search(
        r"\beither\s+(['\"]?)([A-Za-z0-9_\-]+)\1(?:\s*\([^)]*\))?\s+or\s+(['\"]?)([A-Za-z0-9_\-]+)\3",
        text,
        re.I,
    )
    if not match:
        return None
    first, second = match.group(2), match.group(4)
    quoted = bool(match.group(1) and match.group(3))
    if not quoted and not (first.isupper() and second.isupper()):
        return None
    return _from_items([(first, None), (second, None)])


def _bare_pipe_list(text: str) -> Choices | None:
    if re.fullmatch(r"\s*[\w.\-]+(?:\s*\|\s*[\w.\-]+)+\s*", text):
        return _from_items([(v.strip(), None) for v in text.split("|")])
    return None


def parse_choices(text: str) -> Choices | None:
    """The allowed values a source text lists for a parameter, or None when it lists none.

    Recognised forms: akshare's ``choice of {"a", "b"}`` / ``choice of {"qfq": "label", ...}``,
    RapidAPI's ``One of the following : a|b|c`` and ``Allowed values: a, b``, ``either 'a' or 'b'``,
    and a bare ``a|b`` description. HTML entities (``&#95;``) are decoded.
    """
    text = html.unescape(text or "")
    for parser in (_brace_choices, _one_of_choices, _allowed_values, _either_or, _bare_pipe_list):
        found = parser(text)
        if found is not None:
            return found
    return None


# --------------------------------------------------------------------------- examples and formats

_EXAMPLE_PATTERNS = (
    re.compile(r"e\.g\.,?\s*[\\\"“'‘\s]*([A-Za-z0-9][A-Za-z0-9._:\-/]*)"),
    re.compile(r"\bEx\b\s*[.:]?\s*:?\s*[\\\"“'‘\s]*([A-Za-z0-9][A-Za-z0-9._:\-/]*)"),
    re.compile(r"Example\s*:\s*[\\\"“'‘`\s]*([A-Za-z0-9][A-Za-z0-9._:\-/]*)"),
    re.compile(r"例如\s*[\\\"“'‘]*([A-Za-z0-9][A-Za-z0-9._:\-/]*)"),
)
_NOT_EXAMPLES = frozenset({"result", "https", "http", "the", "a", "an"})


def parse_example(text: str) -> str | None:
    """The first example value the source text gives (``e.g., "20240122"``, ``Ex : 2021-08-10``)."""
    text = html.unescape(text or "")
    for pattern in _EXAMPLE_PATTERNS:
        for match in pattern.finditer(text):
            value = match.group(1).rstrip(".:,")
            if value and value.lower() not in _NOT_EXAMPLES and not value.lower().startswith("http"):
                return value[:40]
    return None


def parse_date_format(text: str, example: str | None = None) -> str | None:
    """The date/time format a parameter expects, from the source text or its example."""
    text = text or ""
    if re.search(r"YYYYMMDD", text):
        return "YYYYMMDD"
    if re.search(r"%Y-%m-%dT%H", text):
        return "YYYY-MM-DDTHH:MM:SS"
    if re.search(r"YYYY-MM-DD|yyyy-MM-dd|%Y-%m-%d", text):
        return "YYYY-MM-DD"
    if re.search(r"epoch|unix", text, re.I):
        return "Unix timestamp"
    if example and re.fullmatch(r"(19|20)\d{6}", example):
        return "YYYYMMDD"
    if example and re.fullmatch(r"(19|20)\d{2}-\d{2}-\d{2}", example):
        return "YYYY-MM-DD"
    return None


# --------------------------------------------------------------------------- one tool's facts


@dataclass(frozen=True)
class ToolFacts:
    """Everything finmcp reads from one manifest line, before writing its own text."""

    name: str
    tool_from: str
    description: str
    properties: dict[str, dict]
    required: tuple[str, ...]
    timeliness: Timeliness
    intent_type: IntentType
    regulatory_domains: tuple[RegulatoryDomain, ...]

    @property
    def tokens(self) -> tuple[str, ...]:
        """The tool name split at underscores, lower-cased, empty parts dropped."""
        return tuple(t for t in self.name.lower().split("_") if t)

    @property
    def api_name(self) -> str | None:
        """The RapidAPI API name (rapidapi tools only)."""
        return rapidapi_api_name(self.description) if self.tool_from == "rapidapi" else None

    @property
    def return_type(self) -> str | None:
        """The akshare return type (akshare tools only)."""
        return akshare_return_type(self.description) if self.tool_from == "akshare" else None

    def parameter_source_text(self, name: str) -> str:
        """The fullest source text about a parameter: the akshare ``:param`` block, else its schema text."""
        if self.tool_from == "akshare":
            block = akshare_param_texts(self.description).get(name)
            if block:
                return block
        return str(self.properties.get(name, {}).get("description") or "")

    def parameter_choices(self, name: str) -> Choices | None:
        """The values the source lists for a parameter, if any."""
        return parse_choices(self.parameter_source_text(name))
