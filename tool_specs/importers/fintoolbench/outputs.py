"""Output schemas for FinToolBench tools, built from what the source says a tool returns.

Real FinToolBench tools return a pandas DataFrame serialised as a JSON list of row records. MCP's
``structuredContent`` must be an object, so finmcp wraps the rows: ``{"result": [row, ...]}`` and marks
the tool with ``meta["output_wrapped"] = True``.

Column names are facts when the source prints them: some akshare docstrings end with a sample table
under ``:rtype: pandas.DataFrame`` (a header line of column names, then rows), or with a typed column
listing (``name  label  float``). Types are inferred from the sample rows: dates, numbers, strings.

Every other tool gets a concrete shape from a family template (:mod:`tool_specs.importers.fintoolbench.columns`),
carried here as an :class:`OutputPlan`; :func:`output_schema` and :func:`output_meta` turn a plan into
the MCP ``outputSchema`` and the ``meta`` keys the simulator reads (the contract is documented in
:mod:`tool_specs.importers.fintoolbench.columns`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from finmcp.tool_specs.importers.fintoolbench.facts import ToolFacts

_NUMBER = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?%?$")
_DATE_DASHED = re.compile(r"^(19|20)\d\d-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$")
_DATE_COMPACT = re.compile(r"^(19|20)\d\d(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])$")
_DATETIME = re.compile(r"^(19|20)\d\d-\d\d-\d\d[ T]\d\d:\d\d(:\d\d)?$")
_TYPE_WORDS = {
    "string": "string",
    "str": "string",
    "object": "string",
    "float": "number",
    "float64": "number",
    "int": "number",
    "int64": "number",
    "integer": "number",
    "bool": "boolean",
    "datetime": "string",
}
_TYPED_LINE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s+\S+\s+(" + "|".join(_TYPE_WORDS) + r")\b\s*(.*)$")
_ELLIPSIS = {"...", "…"}
_MISSING = {"NaN", "nan", "None", "NaT", "-", "--"}
_COLUMNS_IN_TEXT = re.compile(r"包含\s*([A-Za-z0-9_,()（）索引\s]+?)\s*列")
_DATE_NAME = re.compile(r"(^|_)(date|time|datetime)$|日期|时间", re.I)
_NUMBER_NAME = re.compile(r"^(open|high|low|close|volume|amount|price)$", re.I)


@dataclass(frozen=True)
class Column:
    """One output column: its name, JSON type (None when unknown) and date format (if a date)."""

    name: str
    type: str | None = None
    date_format: str | None = None

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of this column's values."""
        if self.date_format == "YYYY-MM-DD":
            return {"type": "string", "format": "date"}
        if self.date_format:
            return {"type": "string", "description": f"date/time as {self.date_format}"}
        return {"type": self.type} if self.type else {}


@dataclass(frozen=True)
class OutputInfo:
    """What a tool returns: its kind, its columns (for tables) and where the columns came from."""

    kind: str
    """``rows`` (a table), ``object``, ``array``, ``text`` or ``json`` (a RapidAPI response)."""
    columns: tuple[Column, ...] = ()
    columns_source: str = "unknown"
    """``description-table``, ``description-typed-list``, ``description-text`` or ``unknown``."""
    partial: bool = False
    """True when the source elided some columns (``...`` in the header)."""
    shape_hint: str | None = None
    """For RapidAPI tools: ``object`` or ``array``, guessed from the endpoint name."""


# --------------------------------------------------------------------------- column parsing


def _value_kind(token: str) -> str | None:
    if token in _ELLIPSIS or token in _MISSING:
        return None
    if _DATE_COMPACT.match(token):
        return "date:YYYYMMDD"
    if _DATE_DASHED.match(token):
        return "date:YYYY-MM-DD"
    if _DATETIME.match(token):
        return "date:YYYY-MM-DD HH:MM:SS"
    if _NUMBER.match(token):
        return "number"
    return "string"


def _column_from_values(name: str, values: list[str]) -> Column:
    kinds = [k for k in (_value_kind(v) for v in values) if k is not None]
    if not kinds:
        return _column_from_name(name)
    dates = [k for k in kinds if k.startswith("date:")]
    if len(dates) == len(kinds):
        return Column(name, "string", max(set(dates), key=dates.count)[5:])
    numbers = sum(1 for k in kinds if k == "number" or k == "date:YYYYMMDD")
    if numbers / len(kinds) >= 0.8:  # a truncated last sample value must not flip the type
        return Column(name, "number")
    return Column(name, "string")


def _column_from_name(name: str) -> Column:
    if _DATE_NAME.search(name):
        return Column(name, "string")
    if _NUMBER_NAME.match(name):
        return Column(name, "number")
    return Column(name)


def _region_after_return_type(description: str) -> list[str] | None:
    lines = description.splitlines()
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith(":rtype:") or re.fullmatch(r":return:\s*pandas\.DataFrame", stripped):
            return lines[i + 1 :]
    return None


def _typed_listing(lines: list[str]) -> tuple[Column, ...]:
    columns = []
    for line in lines:
        match = _TYPED_LINE.match(line)
        if not match:
            continue
        json_type = _TYPE_WORDS[match.group(2)]
        rest = match.group(3).strip()
        date_format = rest if re.fullmatch(r"[YMDHhms:\-/ ]{6,}", rest) else None
        columns.append(Column(match.group(1), json_type, date_format))
    return tuple(columns) if len(columns) >= 2 else ()


def _sample_table(lines: list[str]) -> tuple[tuple[Column, ...], bool]:
    """Columns of the first printed sample table in ``lines`` (header, then rows)."""
    header: list[str] | None = None
    rows: list[list[str]] = []
    for line in lines:
        stripped = line.strip()
        if header is None:
            if not stripped or stripped.startswith(":") or len(stripped.split()) < 2:
                continue  # blank, a docstring field, or a one-word caption such as "symbol_df"
            header = stripped.split()
            continue
        if not stripped or len(stripped.split()) < 2:
            break
        rows.append(stripped.split())
    if not header or not rows:
        return (), False
    partial = any(h in _ELLIPSIS for h in header)
    per_column: dict[int, list[str]] = {i: [] for i in range(len(header))}
    matched = 0
    for row in rows:
        if all(v in _ELLIPSIS for v in row):
            continue
        if len(row) == len(header) + 1 and row[0].isdigit():
            row = row[1:]  # a printed index column
        if len(row) != len(header):
            continue
        matched += 1
        for i, value in enumerate(row):
            per_column[i].append(value)
    if matched == 0 or not any(_value_kind(v) in {"number", "date:YYYYMMDD"} for r in rows for v in r):
        return (), False  # prose, not a table
    columns = tuple(
        _column_from_values(name, per_column[i]) for i, name in enumerate(header) if name not in _ELLIPSIS
    )
    return columns, partial


def _columns_named_in_text(description: str) -> tuple[Column, ...]:
    match = _COLUMNS_IN_TEXT.search(description)
    if not match:
        return ()
    names = [re.sub(r"[(（].*?[)）]", "", n).strip() for n in match.group(1).split(",")]
    names = [n for n in names if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n)]
    return tuple(_column_from_name(n) for n in names) if len(names) >= 2 else ()


def parse_description_columns(description: str) -> tuple[tuple[Column, ...], str, bool]:
    """Columns a description names, where they were found, and whether the list is partial.

    Returns ``((), "unknown", False)`` when the description names no columns.
    """
    region = _region_after_return_type(description)
    if region:
        typed = _typed_listing(region)
        if typed:
            return typed, "description-typed-list", False
        table, partial = _sample_table(region)
        if table:
            return table, "description-table", partial
    named = _columns_named_in_text(description)
    if named:
        return named, "description-text", False
    return (), "unknown", False


# --------------------------------------------------------------------------- output info and schema

_ARRAY_ENDPOINT_TOKENS = frozenset(
    {"list", "search", "suggestions", "suggested", "peers", "pairs", "candles"}
)


def _akshare_kind(return_type: str | None) -> str:
    if return_type is None or "DataFrame" in return_type:
        return "rows"
    lowered = return_type.lower()
    if lowered.startswith(("dict", "pandas.series")):
        return "object"
    if lowered.startswith(("list", "tuple")):
        return "array"
    if lowered == "str":
        return "text"
    return "rows"


def describe_output(facts: ToolFacts) -> OutputInfo:
    """What ``facts``' tool returns, from its source text."""
    if facts.tool_from == "rapidapi":
        tokens = set(facts.tokens)
        hint = "array" if tokens & _ARRAY_ENDPOINT_TOKENS or "auto" in tokens else "object"
        return OutputInfo("json", shape_hint=hint)
    kind = _akshare_kind(facts.return_type)
    if kind != "rows":
        return OutputInfo(kind)
    columns, source, partial = parse_description_columns(facts.description)
    return OutputInfo("rows", columns, source, partial)


# --------------------------------------------------------------------------- planned (concrete) outputs

ROWS_BY = ("date_range", "list", "single")
"""How the simulator sizes a result: one row per time step in a range, a list of rows, one record."""
SHAPES = ("rows", "rows_object", "record", "keyed_rows", "values", "tuple", "text")
"""Where the records sit inside ``result`` (see :mod:`tool_specs.importers.fintoolbench.columns`)."""
_JSON_COLUMN_TYPES = frozenset({"string", "number", "integer", "boolean", "array"})


@dataclass(frozen=True)
class PlanColumn:
    """One column of a planned output: name, JSON type(s), short English description, date format."""

    name: str
    type: str | tuple[str, ...]
    description: str
    format: str | None = None
    """``date`` or ``date-time`` (JSON Schema annotations), or None."""
    pattern_hint: str | None = None
    """A source date layout such as ``YYYYMMDD`` when it is not ISO, else None."""
    item_type: str | None = None
    """For an ``array`` column: the JSON type of its items."""

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of this column's values."""
        types = (self.type,) if isinstance(self.type, str) else self.type
        if not types or any(t not in _JSON_COLUMN_TYPES for t in types):
            raise ValueError(f"column {self.name!r}: unknown JSON type {self.type!r}")
        schema: dict[str, Any] = {"type": types[0] if len(types) == 1 else list(types)}
        description = self.description
        if self.pattern_hint:
            description = f"{description} ({self.pattern_hint})"
        schema["description"] = description
        if self.format:
            schema["format"] = self.format
        if "array" in types:
            schema["items"] = {"type": self.item_type or "string"}
        return schema


@dataclass(frozen=True)
class OutputPlan:
    """The concrete output of one tool: its record columns and how the records are laid out."""

    source: str
    """``description-table`` / ``description-typed-list`` / ``description-text`` (column names are the
    source's) or ``family:<name>`` (a finmcp template) or ``special:<name>`` (a one-off shape)."""
    shape: str
    columns: tuple[PlanColumn, ...]
    rows_by: str
    key: tuple[str, ...] = ()
    """Columns every record must carry (``required``); empty where the upstream body may differ."""
    entities: tuple[tuple[str, str], ...] = ()
    """(column, entity type) pairs for columns whose values are world entities."""
    rows_path: str | None = None
    """For ``rows_object``: the property of ``result`` that holds the rows."""
    time_step: str | None = None
    """For ``date_range`` outputs: ``minute``, ``day``, ``week``, ``month``, ``quarter`` or ``year``."""
    keyed_by: str | None = None
    """For ``keyed_rows``: what the keys of ``result`` name (e.g. a commodity)."""

    def __post_init__(self) -> None:
        if self.shape not in SHAPES:
            raise ValueError(f"output plan {self.source!r}: unknown shape {self.shape!r}")
        if self.rows_by not in ROWS_BY:
            raise ValueError(f"output plan {self.source!r}: unknown rows_by {self.rows_by!r}")
        names = [c.name for c in self.columns]
        if len(set(names)) != len(names):
            raise ValueError(f"output plan {self.source!r}: duplicate column names in {names}")
        for column in (*self.key, *(c for c, _ in self.entities)):
            if column not in names:
                raise ValueError(f"output plan {self.source!r}: {column!r} is not one of its columns")
        if (self.shape == "rows_object") != bool(self.rows_path):
            raise ValueError(f"output plan {self.source!r}: rows_path goes with shape rows_object only")

    def row_schema(self) -> dict[str, Any]:
        """The JSON Schema of one record (permissive: extra properties allowed)."""
        row: dict[str, Any] = {"type": "object", "properties": {c.name: c.schema() for c in self.columns}}
        if self.key:
            row["required"] = list(self.key)
        return row

    def result_schema(self) -> dict[str, Any]:
        """The JSON Schema of ``result``."""
        if self.shape == "rows":
            return {"type": "array", "items": self.row_schema()}
        if self.shape == "rows_object":
            return {
                "type": "object",
                "properties": {self.rows_path: {"type": "array", "items": self.row_schema()}},
            }
        if self.shape == "record":
            return self.row_schema()
        if self.shape == "keyed_rows":
            return {
                "type": "object",
                "description": f"One table per {self.keyed_by}",
                "additionalProperties": {"type": "array", "items": self.row_schema()},
            }
        if self.shape == "values":
            return {"type": "array", "items": self.columns[0].schema()}
        if self.shape == "tuple":
            return {"type": "array", "prefixItems": [c.schema() for c in self.columns]}
        return {"type": "string", "description": self.columns[0].description if self.columns else "Text"}


def output_schema(info: OutputInfo, plan: OutputPlan | None = None) -> dict[str, Any]:
    """The MCP ``outputSchema``: the tool's result wrapped as ``{"result": ...}``.

    With a ``plan`` the result has the plan's concrete shape; without one, the shape the source states.
    """
    if plan is not None:
        return {"type": "object", "properties": {"result": plan.result_schema()}, "required": ["result"]}
    if info.kind == "rows":
        row: dict[str, Any] = {"type": "object"}
        if info.columns:
            row["properties"] = {c.name: c.schema() for c in info.columns}
        result: dict[str, Any] = {"type": "array", "items": row}
    elif info.kind == "object":
        result = {"type": "object"}
    elif info.kind == "array":
        result = {"type": "array"}
    elif info.kind == "text":
        result = {"type": "string"}
    else:  # a RapidAPI JSON body: an object for most endpoints, an array for some list endpoints
        result = {"type": ["object", "array"]}
    return {"type": "object", "properties": {"result": result}, "required": ["result"]}


def output_meta(info: OutputInfo, plan: OutputPlan | None = None) -> dict[str, Any]:
    """Provenance of the output schema and, with a plan, the simulator contract, for ``ToolSpec.meta``."""
    meta: dict[str, Any] = {
        "output_wrapped": True,
        "output_kind": info.kind,
        "output_columns_source": plan.source if plan is not None else info.columns_source,
    }
    if plan is not None:
        if plan.columns:
            meta["output_columns"] = [c.name for c in plan.columns]  # record order (schema keys get sorted)
        meta["output_shape"] = plan.shape
        meta["output_rows_by"] = plan.rows_by
        meta["output_entity_columns"] = dict(plan.entities)
        if plan.rows_path:
            meta["output_rows_path"] = plan.rows_path
        if plan.time_step:
            meta["output_time_step"] = plan.time_step
        if plan.keyed_by:
            meta["output_keyed_by"] = plan.keyed_by
    elif info.columns:
        meta["output_columns"] = [c.name for c in info.columns]  # source order (schema keys get sorted)
    if info.partial:
        meta["output_columns_partial"] = True
    if info.shape_hint:
        meta["output_shape_hint"] = info.shape_hint
    return meta
