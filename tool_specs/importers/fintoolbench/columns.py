"""Concrete output shapes for every FinToolBench tool: source columns where the source names them,
otherwise a family template chosen from the tool's name, source, domain and parameters.

The simulator contract
======================

Every fintool760 tool's ``outputSchema`` is ``{"type": "object", "properties": {"result": R},
"required": ["result"]}`` (``meta["output_wrapped"] = True``). Its ``meta`` says how to fill ``R``:

``output_columns``
    The record's column names, in order (JSON object keys get sorted on the wire; this list does not).
``output_columns_source``
    ``description-table`` / ``description-typed-list`` / ``description-text`` when the names come from
    the source's docstring, ``family:<name>`` for a template below, ``special:<name>`` for a one-off.
``output_shape``
    Where the records sit in ``R``: ``rows`` (``R`` is an array of records: an akshare DataFrame),
    ``rows_object`` (``R`` is an object whose ``output_rows_path`` property holds the array of records:
    finmcp's normalised RapidAPI list bodies), ``record`` (``R`` is one record), ``keyed_rows`` (``R``
    maps a key, named by ``output_keyed_by``, to an array of records: an akshare dict of DataFrames),
    ``values`` (``R`` is an array of scalars described by the single column), ``tuple`` (``R`` is a
    fixed-length array, one item per column) or ``text`` (``R`` is a string).
``output_rows_by``
    How many records to make: ``date_range`` (one per ``output_time_step`` - minute, day, week, month,
    quarter, year; trading days for daily market data - inside the range given by the tool's
    ``date_range`` arguments such as ``start_date``/``end_date``, or a recent window when the call gives
    none), ``list`` (a list of N records) or ``single`` (one record).
``output_entity_columns``
    ``{column: entity type}`` (types from :mod:`tool_specs.entities`) for columns that carry world
    entities. The simulator fills them from the world, consistently with the call: a column whose
    type the tool consumes takes the argument's value (``stock_zh_a_hist(symbol="600519")`` returns
    rows whose ``代码`` is ``600519``); a ``date`` column takes dates inside the argument range (or on
    the argument date); other entity columns take entities of that type from the world, so ids a
    search or list endpoint returns (``company_id``, ``article_id``, symbols) are ones that detail
    endpoints accept.

Column schemas carry a JSON type, a short English description and, for dates, ``format`` (``date`` or
``date-time``; an annotation in JSON Schema 2020-12). Schemas stay permissive: no
``additionalProperties: false``; ``required`` lists only key columns of akshare families whose names
are the library's own, and nothing for RapidAPI records, whose normalised shapes are finmcp's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from finmcp.tool_specs.entities import ENTITY_TYPES, INSTRUMENT_ENTITIES
from finmcp.tool_specs.importers.fintoolbench.entities import (
    infer_consumes,
    infer_produces,
    instrument_entity,
)
from finmcp.tool_specs.importers.fintoolbench.facts import ToolFacts
from finmcp.tool_specs.importers.fintoolbench.outputs import Column, OutputInfo, OutputPlan, PlanColumn
from finmcp.tool_specs.importers.fintoolbench.tables import json_table, tsv, tsv_map, tsv_pairs


def _vocab_entry(json_type: str, fmt: str, description: str) -> tuple[str | tuple[str, ...], str, str | None]:
    types = tuple(json_type.split("|"))
    return (types[0] if len(types) == 1 else types), description, fmt or None


VOCAB: dict[str, tuple[str | tuple[str, ...], str, str | None]] = {
    name: _vocab_entry(json_type, fmt, description)
    for name, json_type, fmt, description in tsv("column_vocab.tsv")
}
"""Column name -> (JSON type or types, English description, format) from ``data/column_vocab.tsv``."""
SOURCE_COLUMNS: dict[str, str] = tsv_map("source_columns.tsv")
"""English descriptions for column names that akshare docstrings print (and the vocabulary lacks)."""


def vocab_column(name: str) -> PlanColumn:
    """The column ``name`` as the vocabulary defines it; raises KeyError naming an unknown column."""
    try:
        json_type, description, fmt = VOCAB[name]
    except KeyError:
        raise KeyError(f"column {name!r} is not in the fintool column vocabulary") from None
    return PlanColumn(name, json_type, description, fmt)


# ============================================================================ families


@dataclass(frozen=True)
class Family:
    """A template: record columns, how records are sized, key columns and entity columns.

    Entity values may be placeholders resolved per tool: ``@code`` (the tool's instrument type),
    ``@contract`` (futures or option contract), ``@id`` (the RapidAPI's id field, a ``company_id``).
    """

    name: str
    columns: tuple[str, ...]
    rows_by: str
    key: tuple[str, ...] = ()
    entities: dict[str, str] = field(default_factory=dict)
    shape: str = "rows"
    rows_path: str | None = None
    time_step: str | None = None


_DEFAULT_ENTITIES: dict[str, str] = json_table("families.json", "default_entities")
_TIME_COLUMNS = frozenset(json_table("families.json", "time_columns"))


def _family(record: dict) -> Family:
    """A family from its ``data/families.json`` record: default entity columns, minute-step time columns
    and the record's own entities, in that order of precedence (later wins)."""
    cols = tuple(record["columns"])
    step = record.get("time_step")
    ents = {c: _DEFAULT_ENTITIES[c] for c in cols if c in _DEFAULT_ENTITIES}
    if record["rows_by"] == "date_range" and step == "minute":
        ents.update({c: "date" for c in cols if c in _TIME_COLUMNS})
    ents.update(record.get("entities") or {})
    return Family(
        record["name"],
        cols,
        record["rows_by"],
        tuple(record.get("key") or ()),
        ents,
        record.get("shape", "rows"),
        record.get("rows_path"),
        step,
    )


_R = "date_range"
_L = "list"
_S = "single"

AKSHARE_FAMILIES: dict[str, Family] = {r["name"]: _family(r) for r in json_table("families.json", "akshare")}
_GENERIC_BY_DOMAIN: tuple[tuple[str, str], ...] = tsv_pairs("generic_by_domain.tsv")
AKSHARE_BY_NAME: dict[str, str] = tsv_map("akshare_by_name.tsv")
"""Akshare tools whose name alone decides the family (checked before the patterns)."""
AKSHARE_PATTERNS: tuple[tuple[str, str], ...] = tsv_pairs("akshare_patterns.tsv")
"""Ordered name patterns; the first that matches decides."""
RAPIDAPI_FAMILIES: dict[str, Family] = {
    r["name"]: _family(r) for r in json_table("families.json", "rapidapi")
}
RAPIDAPI_BY_NAME: dict[str, str] = tsv_map("rapidapi_by_name.tsv")

_YH_STRING_METRICS = frozenset({"currency", "stock_exchange"})
_YH_METRIC = re.compile(r"^stock_get_(.+)$")
_API_ID_FIELD: dict[str, str] = tsv_map("rapidapi_id_fields.tsv")
_TOKENS_DIVIDENDS = frozenset({"dividend", "dividends", "splits", "split"})
_TOKENS_STATEMENTS = frozenset(
    {"financials", "financial", "fundamentals", "balance", "income", "cashflow", "statements", "stmts"}
)
_TOKENS_SERIES = frozenset(
    {"chart", "charts", "candles", "ohlcv", "historical", "series", "daily", "histories"}
)
_TOKENS_QUOTE = frozenset({"quote", "quotes", "realtime", "price", "ticker", "summary"})


# ============================================================================ selection


def akshare_family(facts: ToolFacts) -> str:
    """The akshare family of a DataFrame tool whose source names no columns."""
    if facts.name in AKSHARE_BY_NAME:
        return AKSHARE_BY_NAME[facts.name]
    for pattern, family in AKSHARE_PATTERNS:
        if re.search(pattern, facts.name):
            return family
    for domain, family in _GENERIC_BY_DOMAIN:
        if domain in facts.regulatory_domains:
            return family
    return "generic_other"


def rapidapi_family(facts: ToolFacts, produces: tuple[str, ...]) -> str:
    """The RapidAPI family of a tool, from its name and what it produces (so ids line up)."""
    name = facts.name
    tokens = set(facts.tokens)
    if name in RAPIDAPI_BY_NAME:
        return RAPIDAPI_BY_NAME[name]
    if "comment" in tokens or "comments" in tokens:
        return "comments"
    if "company_id" in produces:
        return "market_list" if "ranking" in tokens else "search"
    if "currency_pair" in produces:
        return "currency_list"
    if "article_id" in produces:
        return "article_list"
    if tokens & {"details", "data", "summary"} and (
        tokens & {"article", "news", "analysis", "transcripts", "filings"}
    ):
        return "article_detail"
    if facts.api_name == "yh_finance8" and _YH_METRIC.match(name):
        return "yh_metric"
    if "price_series" in produces or tokens & _TOKENS_SERIES:
        return "time_series"
    if "financial_statement" in produces or tokens & _TOKENS_STATEMENTS:
        return "statements"
    if tokens & _TOKENS_DIVIDENDS:
        return "dividends_splits"
    if tokens & {"profile"}:
        return "profile"
    if tokens & _TOKENS_QUOTE:
        return "quote"
    if tokens & {"estimates", "earnings", "target", "recommendations", "recommendation"}:
        return "estimates"
    return "metrics"


# ============================================================================ specials

_SPECIAL_RECORDS: dict[str, dict] = {r["tool"]: r for r in json_table("special_records.json", "records")}
"""One-off record shapes of RapidAPI and akshare tools (calculators, wallet utilities)."""


_SPECIAL_SHAPES: tuple[dict, ...] = tuple(json_table("special_records.json", "shapes"))
"""One-off akshare dict/list/tuple shapes (keyed rows, values, tuples), matched by tool name or prefix."""


def _shape_plan(shape: dict) -> OutputPlan:
    """The plan of a ``data/special_records.json`` shape; a column is a vocabulary name or a full column."""
    columns = tuple(
        vocab_column(c)
        if isinstance(c, str)
        else PlanColumn(c["name"], c["type"], c["description"], c.get("format"), item_type=c.get("item_type"))
        for c in shape["columns"]
    )
    return OutputPlan(
        shape["source"],
        shape["shape"],
        columns,
        shape["rows_by"],
        entities=tuple((shape.get("entities") or {}).items()),
        time_step=shape.get("time_step"),
        keyed_by=shape.get("keyed_by"),
    )


def _special_plan(facts: ToolFacts) -> OutputPlan | None:
    """One-off shapes: calculators, wallet utilities, and akshare dict/list/tuple/str returns."""
    name = facts.name
    if name in _SPECIAL_RECORDS:
        record = _SPECIAL_RECORDS[name]
        rows_by = record["rows_by"]
        cols = tuple(vocab_column(c) for c in record["columns"])
        entities = tuple((record.get("entities") or {}).items())
        if rows_by == _S:
            return OutputPlan(f"special:{name}", "record", cols, _S, entities=entities)
        if facts.tool_from == "rapidapi":
            return OutputPlan(f"special:{name}", "rows_object", cols, _L, entities=entities, rows_path="data")
        return OutputPlan(f"special:{name}", "rows", cols, _L, entities=entities)
    for shape in _SPECIAL_SHAPES:
        if name in shape["tools"] or ("tool_prefix" in shape and name.startswith(shape["tool_prefix"])):
            return _shape_plan(shape)
    if facts.tool_from == "akshare" and facts.return_type == "str":
        cols = (PlanColumn("text", "string", _TEXT_RETURNS.get(name, "Text returned by the source")),)
        return OutputPlan("special:text", "text", cols, _S)
    return None


_TEXT_RETURNS: dict[str, str] = tsv_map("text_returns.tsv")
"""What the akshare tools that return a string return."""


# ============================================================================ plans


def _camel(words: str) -> str:
    parts = [p for p in words.split("_") if p]
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:]) if parts else words


def _yh_metric_plan(facts: ToolFacts) -> OutputPlan:
    found = _YH_METRIC.match(facts.name)
    assert found is not None  # rapidapi_family names yh_metric only for names that match
    metric = found.group(1)
    json_type = "string" if metric in _YH_STRING_METRICS else "number"
    readable = metric.replace("_", " ").replace("avg", "average").replace("num ", "number of ")
    columns = [
        vocab_column("symbol"),
        PlanColumn(_camel(metric), json_type, f"{readable[:1].upper()}{readable[1:]} of the stock"),
    ]
    if metric != "currency":
        columns.append(vocab_column("currency"))
    columns.append(vocab_column("timestamp"))
    return OutputPlan(
        "family:yh_metric",
        "record",
        tuple(columns),
        _S,
        entities=(("symbol", instrument_entity(facts) or "stock_symbol"),),
    )


def _code_entity(facts: ToolFacts, consumes: tuple[str, ...], produces: tuple[str, ...]) -> str:
    """The instrument type of a tool's generic code column: what it lists, else what it takes."""
    for entity in (*produces, *consumes):
        if entity in _CODE_ENTITIES:
            return entity
    return instrument_entity(facts) or "stock_symbol"


_CODE_ENTITIES = INSTRUMENT_ENTITIES - {"company_id"}


def _resolve(entity: str, facts: ToolFacts, consumes: tuple[str, ...], produces: tuple[str, ...]) -> str:
    if entity == "@code":
        return _code_entity(facts, consumes, produces)
    if entity == "@contract":
        return "option_symbol" if "option" in facts.tokens else "futures_symbol"
    return entity


def _family_plan(
    family: Family, facts: ToolFacts, consumes: tuple[str, ...], produces: tuple[str, ...]
) -> OutputPlan:
    id_field = _API_ID_FIELD.get(facts.api_name or "", "id")
    keep_id = "company_id" in consumes or "company_id" in produces
    columns: list[PlanColumn] = []
    entities: list[tuple[str, str]] = []
    for name in family.columns:
        entity = family.entities.get(name)
        if name == "@id":
            if not keep_id:
                continue
            name = id_field
            column = vocab_column(name)
        else:
            column = vocab_column(name)
        columns.append(column)
        if entity:
            entities.append((name, _resolve(entity, facts, consumes, produces)))
    return OutputPlan(
        f"family:{family.name}",
        family.shape,
        tuple(columns),
        family.rows_by,
        key=family.key,
        entities=tuple(entities),
        rows_path=family.rows_path,
        time_step=family.time_step,
    )


_SOURCE_CODE_COLUMN = re.compile(r"(代码|symbol|code|ticker)$", re.I)
_SOURCE_DATE_COLUMN = re.compile(r"(^|_)(date|time|datetime)$|日期|时间", re.I)
_SOURCE_FORMATS = {"YYYY-MM-DD": "date", "YYYY-MM-DD HH:MM:SS": "date-time"}


def _words(name: str) -> str:
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", name).replace("_", " ").strip().lower()
    return text[:1].upper() + text[1:]


def _source_column(column: Column) -> PlanColumn:
    known = VOCAB.get(column.name) or VOCAB.get(column.name.lower())
    base = vocab_column(column.name if column.name in VOCAB else column.name.lower()) if known else None
    is_date = column.date_format is not None or bool(_SOURCE_DATE_COLUMN.search(column.name))
    json_type = column.type or (base.type if base else "string")
    description = SOURCE_COLUMNS.get(column.name) or (base.description if base else _words(column.name))
    fmt = (
        _SOURCE_FORMATS.get(column.date_format or "")
        if column.date_format
        else (base.format if base else None)
    )
    hint = column.date_format if column.date_format and column.date_format not in _SOURCE_FORMATS else None
    if is_date and json_type != "string":
        json_type = "string"
    return PlanColumn(column.name, json_type, description, fmt, hint)


def _source_plan(
    facts: ToolFacts, info: OutputInfo, consumes: tuple[str, ...], produces: tuple[str, ...]
) -> OutputPlan:
    columns = tuple(_source_column(c) for c in info.columns)
    entities: list[tuple[str, str]] = []
    date_column = next((c.name for c in columns if _SOURCE_DATE_COLUMN.search(c.name)), None)
    for column in columns:
        if column.name == date_column:
            entities.append((column.name, "date"))
        elif _SOURCE_CODE_COLUMN.search(column.name):
            entities.append((column.name, _code_entity(facts, consumes, produces)))
    rows_by = "date_range" if date_column and "date_range" in consumes else "list"
    return OutputPlan(
        info.columns_source,
        "rows",
        columns,
        rows_by,
        entities=tuple(entities),
        time_step=("minute" if {"min", "minute"} & set(facts.tokens) else "day")
        if rows_by == "date_range"
        else None,
    )


def plan_output(facts: ToolFacts, info: OutputInfo) -> OutputPlan:
    """The concrete output of one tool (see the module docstring for the contract)."""
    consumes = infer_consumes(facts)
    produces = infer_produces(facts, info)
    special = _special_plan(facts)
    if special is not None:
        plan = special
    elif info.kind == "rows" and info.columns:
        plan = _source_plan(facts, info, consumes, produces)
    elif facts.tool_from == "rapidapi":
        name = rapidapi_family(facts, produces)
        plan = (
            _yh_metric_plan(facts)
            if name == "yh_metric"
            else _family_plan(RAPIDAPI_FAMILIES[name], facts, consumes, produces)
        )
    else:
        plan = _family_plan(AKSHARE_FAMILIES[akshare_family(facts)], facts, consumes, produces)
    unknown = [e for _, e in plan.entities if e not in ENTITY_TYPES]
    if unknown:
        raise ValueError(f"tool {facts.name!r}: output entity types {unknown} are not known entity types")
    return plan
