"""finmcp's own English text for FinToolBench tools: titles, tool descriptions, parameter descriptions.

Everything here is built from facts: the tool name (expanded through the curated glossary in
:mod:`tool_specs.importers.fintoolbench.glossary`), the source (akshare or a RapidAPI API), the finance tags, the
parameter names/types/required list, the values the source lists for a parameter, example values,
date formats, and the output columns. No published prose is reused.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from finmcp.tool_specs.entities import INSTRUMENT_ENTITIES
from finmcp.tool_specs.importers.fintoolbench.entities import parameter_entity
from finmcp.tool_specs.importers.fintoolbench.facts import (
    Choices,
    ToolFacts,
    parse_date_format,
    parse_example,
)
from finmcp.tool_specs.importers.fintoolbench.glossary import (
    DOMAIN_WORDS,
    DROP_TOKENS,
    INTENT_PHRASES,
    PARAMETERS,
    PHRASES,
    PROVIDER_OVERRIDES,
    PROVIDERS,
    RAPIDAPI_APIS,
    SYMBOL_PARAMETER_TEXT,
    TIMELINESS_PHRASES,
    VALUE_LABELS,
    VENUES,
    WORDS,
)
from finmcp.tool_specs.importers.fintoolbench.outputs import OutputInfo

MAX_LISTED_VALUES = 25
"""Parameter descriptions list at most this many allowed values, then say how many more there are."""
MAX_INLINE_VALUES = 6
"""Tool descriptions show a parameter's options inline only when there are at most this many."""
_MAX_PHRASE = max(len(k) for k in PHRASES)
_DATE_RANGE_NAMES = frozenset({"start", "end", "since", "until"})


# ----------------------------------------------------------------------------- names


def expand_tokens(tokens: list[str]) -> list[str]:
    """Glossary expansion of name tokens: longest phrase first, then single words, else the token."""
    words: list[str] = []
    i = 0
    while i < len(tokens):
        for size in range(min(_MAX_PHRASE, len(tokens) - i), 0, -1):
            chunk = tuple(tokens[i : i + size])
            if chunk in PHRASES:
                words.append(PHRASES[chunk])
                i += size
                break
        else:
            token = tokens[i]
            words.append(WORDS.get(token, VENUES.get(token, token)))
            i += 1
    return words


def _join_words(words: list[str]) -> str:
    """Join words, moving parenthesised markers such as "(v2)" or "(deprecated)" to the end."""
    plain = [w for w in words if not (w.startswith("(") and w.endswith(")"))]
    marks = [w for w in words if w.startswith("(") and w.endswith(")")]
    return " ".join(plain + marks).strip()


def _capitalize(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text


def split_name(name: str) -> tuple[list[str], list[str]]:
    """(subject tokens, data providers) of an akshare-style name.

    Trailing tokens that name a data site or an exchange (``_em``, ``_sina``, ``_sse``) become providers;
    ``qhkc``/``amac`` are providers wherever they appear; ``get`` is dropped.
    """
    tokens = [t for t in name.lower().split("_") if t and t not in DROP_TOKENS]
    providers: list[str] = []
    if name in PROVIDER_OVERRIDES:
        providers = list(PROVIDER_OVERRIDES[name])
        while tokens and (tokens[-1] in PROVIDERS or tokens[-1] in VENUES or tokens[-1] == "sh"):
            tokens.pop()
        return tokens, providers
    for token in ("qhkc", "amac"):
        if token in tokens:
            tokens.remove(token)
            providers.append(PROVIDERS[token])
    trailing: list[str] = []
    while len(tokens) > 1 and len(trailing) < 2 and (tokens[-1] in PROVIDERS or tokens[-1] in VENUES):
        token = tokens.pop()
        trailing.insert(0, PROVIDERS.get(token) or VENUES[token])
    return tokens, providers + trailing


def humanize_name(name: str) -> str:
    """A readable title for a tool name (providers in parentheses), e.g. ``stock_zh_a_hist_em`` ->
    "Stock China A-share history (East Money)"."""
    tokens, providers = split_name(name)
    text = _capitalize(_join_words(expand_tokens(tokens)))
    return f"{text} ({', '.join(providers)})" if providers else text


def humanize_parameter(name: str) -> str:
    """A readable phrase for a parameter name, e.g. ``time_utc_offset`` -> "Time UTC offset"."""
    parts = re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower().split("_")
    return _capitalize(_join_words(expand_tokens([p for p in parts if p])))


def api_display_name(api: str) -> str:
    """Display name of a RapidAPI API from its prefix (``morning_star`` -> "Morningstar")."""
    if api in RAPIDAPI_APIS:
        return RAPIDAPI_APIS[api]
    words = [w for w in re.sub(r"\d+$", "", api).split("_") if w]
    return " ".join(w.upper() if len(w) <= 3 else w.capitalize() for w in words) or api


def _rapidapi_subject(facts: ToolFacts) -> str:
    return _capitalize(_join_words(expand_tokens([t for t in facts.tokens if t not in DROP_TOKENS])))


def tool_title(facts: ToolFacts) -> str:
    """The tool's title: its humanized name, with the data provider (or RapidAPI API) in parentheses."""
    if facts.tool_from == "rapidapi":
        api = facts.api_name
        subject = _rapidapi_subject(facts)
        return f"{subject} ({api_display_name(api)})" if api else subject
    return humanize_name(facts.name)


# ----------------------------------------------------------------------------- values


def _render_value(value: str) -> str:
    return '""' if value == "" else value


def render_choices(name: str, choices: Choices, limit: int = MAX_LISTED_VALUES) -> str:
    """``"a, b (label), c"``; finmcp's own labels for well-known values, else the source's short label."""
    own = VALUE_LABELS.get(name, {})
    shown = []
    for choice in choices.options[:limit]:
        label = own.get(choice.value) or (choice.label if choice.label and len(choice.label) <= 16 else None)
        shown.append(f"{_render_value(choice.value)} ({label})" if label else _render_value(choice.value))
    text = ", ".join(shown)
    hidden = len(choices.options) - len(shown)
    if hidden > 0:
        text += f", and {hidden} more"
    if choices.open_ended:
        text += ", ..."
    return text


# ----------------------------------------------------------------------------- parameters


def _type_phrase(schema_type: object) -> str:
    return {
        "string": "a string",
        "number": "a number",
        "integer": "an integer",
        "boolean": "true or false",
    }.get(str(schema_type), "a value")


def parameter_description(facts: ToolFacts, name: str) -> str:
    """finmcp's description of one parameter: what it is, then the facts the source gives about it."""
    schema = facts.properties.get(name, {})
    source = html.unescape(facts.parameter_source_text(name))
    choices = facts.parameter_choices(name)
    entity = parameter_entity(facts, name)
    if name in {"symbol", "symbols", "code"} and choices is not None:
        base = "Which category, market or list to return"
    elif name in _DATE_RANGE_NAMES and entity == "page":
        base = "Offset of the first record to return (paging)"
    elif name in {"symbol", "symbols", "code", "is_id"} and entity == "region":
        base = "Country or region name"
    elif name in {"symbol", "symbols", "code", "is_id"} and entity in SYMBOL_PARAMETER_TEXT:
        base = SYMBOL_PARAMETER_TEXT[entity]
        if name == "symbols":
            base += "; several may be comma-separated"
    elif name == "is_id" and entity == "article_id":
        base = "ID of the article, news item or transcript"
    elif name in PARAMETERS:
        base = PARAMETERS[name]
    else:
        base = f"{humanize_parameter(name)}, {_type_phrase(schema.get('type'))}"
    parts = [base.rstrip(".") + "."]
    if choices is not None:
        kind = "Options" if choices.open_ended else "One of"
        parts.append(f"{kind}: {render_choices(name, choices)}.")
        if choices.default is not None:
            parts.append(f"Default: {_render_value(choices.default)}.")
    else:
        example = parse_example(source)
        date_format = parse_date_format(source, example)
        if date_format:
            parts.append(f"Format: {date_format}.")
        if example:
            parts.append(f"Example: {example}.")
    return " ".join(parts)


def input_schema(facts: ToolFacts, *, keep_text: bool) -> dict:
    """The tool's input schema: the manifest's names, types and required list; descriptions per mode."""
    properties: dict[str, dict] = {}
    for name, schema in facts.properties.items():
        copied = dict(schema)
        if not keep_text:
            copied["description"] = parameter_description(facts, name)
        properties[name] = copied
    return {"type": "object", "properties": properties, "required": list(facts.required)}


# ----------------------------------------------------------------------------- tool description


def _join_list(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _parameter_summary(facts: ToolFacts) -> str:
    def item(name: str) -> str:
        choices = facts.parameter_choices(name)
        if choices is not None and 0 < len(choices.options) <= MAX_INLINE_VALUES and not choices.open_ended:
            return f"{name} ({' | '.join(_render_value(v) for v in choices.values)})"
        return name

    required = [item(n) for n in facts.properties if n in facts.required]
    optional = [item(n) for n in facts.properties if n not in facts.required]
    if not required and not optional:
        return "Takes no parameters."
    if not required:
        return f"Parameters (all optional): {', '.join(optional)}."
    text = f"Required: {', '.join(required)}."
    return text + (f" Optional: {', '.join(optional)}." if optional else "")


def _output_summary(output: OutputInfo, planned_columns: Sequence[str] = ()) -> str:
    if output.kind == "rows":
        if output.columns:
            names = ", ".join(c.name for c in output.columns)
            more = " among others" if output.partial else ""
            return f"Returns table rows (under `result`) with columns {names}{more}."
        if planned_columns:
            shown = ", ".join(planned_columns[:8])
            more = ", ..." if len(planned_columns) > 8 else ""
            return f"Returns table rows (under `result`), typically with columns {shown}{more}."
        return "Returns table rows (under `result`); the source does not list the columns."
    if output.kind == "object":
        return "Returns one JSON object (under `result`)."
    if output.kind == "array":
        return "Returns a JSON array (under `result`)."
    if output.kind == "text":
        return "Returns a text value (under `result`)."
    return "Returns the API's JSON response (under `result`)."


def _subject_and_source(facts: ToolFacts) -> str:
    if facts.tool_from == "rapidapi":
        subject = _rapidapi_subject(facts)
        api = facts.api_name
        if not api:
            return f"{subject}."
        display = api_display_name(api)
        return f"{subject}, from the {display}{'' if display.endswith('API') else ' API'} on RapidAPI."
    tokens, providers = split_name(facts.name)
    subject = _capitalize(_join_words(expand_tokens(tokens)))
    via = f" from {_join_list(providers)}" if providers else ""
    library = " via akshare" if facts.tool_from == "akshare" else f" via {facts.tool_from}"
    return f"{subject}{via}{library}."


def _domain_and_timeliness(facts: ToolFacts) -> str:
    domains = _join_list([DOMAIN_WORDS.get(d, d) for d in facts.regulatory_domains])
    timing = TIMELINESS_PHRASES.get(facts.timeliness, facts.timeliness)
    return f"{_capitalize(domains)} data; {timing}."


def tool_description(facts: ToolFacts, output: OutputInfo, planned_columns: Sequence[str] = ()) -> str:
    """finmcp's description of a tool: subject and source, domain and timing, intent, inputs, output."""
    parts = [_subject_and_source(facts), _domain_and_timeliness(facts)]
    intent = INTENT_PHRASES.get(facts.intent_type, "")
    if intent:
        parts.append(intent)
    for name in facts.properties:
        entity = parameter_entity(facts, name)
        if entity in INSTRUMENT_ENTITIES:
            parts.append(f"Identifies the instrument by {SYMBOL_PARAMETER_TEXT[entity].lower()} ({name}).")
            break
    parts.append(_parameter_summary(facts))
    parts.append(_output_summary(output, planned_columns))
    return " ".join(parts)
