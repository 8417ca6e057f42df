"""The schema compiler of the schema-driven builder: a JSON Schema becomes a generator ``(call, row) -> value``.

Objects follow ``meta.output_columns`` order, arrays become rows, leaves are chosen by the column's
name (dates, the row's instrument code/name, bar fields, changes, ratios, amounts, ...); ``enum``,
``const``, ``pattern``, ``format``, bounds and ``minItems``/``maxItems`` are honoured, so the output
validates against the tool's ``outputSchema``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from finmcp.recordings.plumbing.seeding import derive_seed
from finmcp.server.sim.regex_strings import sample_pattern
from finmcp.server.sim.schema_calls import Call, Gen, Row, ToolPlan
from finmcp.server.sim.schema_values import column_kind, format_date, is_chinese
from finmcp.server.sim.sim_entities import INSTRUMENT_TYPES, Entity, universe
from finmcp.server.world import vocab as v
from finmcp.tool_specs.model import ToolSpec
from finmcp.tool_specs.param_text import date_format_named

_NUMERIC_KINDS = frozenset(
    {
        "rank",
        "open",
        "high",
        "low",
        "close",
        "prev_close",
        "acc_close",
        "change_pct",
        "change",
        "amplitude",
        "turnover_rate",
        "amount",
        "volume",
        "pe",
        "pb",
        "market_cap",
        "count",
        "ratio",
        "rate",
        "money",
        "year",
    }
)


_WORDS_EN = ("alpha", "beta", "gamma", "delta", "sigma", "omega", "kappa", "theta")


_HEADLINES_CN = (
    "发布年度报告",
    "召开业绩说明会",
    "获机构调研",
    "披露回购进展",
    "公告分红方案",
    "发布经营数据",
)


_HEADLINES_EN = ("reports quarterly results", "announces dividend", "raises guidance", "expands buyback")


def _num_bounds(schema: dict[str, Any], x: float, integer: bool) -> float | int:
    lo, hi = schema.get("minimum"), schema.get("maximum")
    xlo, xhi = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    step = 1 if integer else 0.01
    if isinstance(xlo, (int, float)) and not isinstance(xlo, bool) and x <= xlo:
        x = xlo + step
    if isinstance(xhi, (int, float)) and not isinstance(xhi, bool) and x >= xhi:
        x = xhi - step
    if isinstance(lo, (int, float)) and x < lo:
        x = lo
    if isinstance(hi, (int, float)) and x > hi:
        x = hi
    mult = schema.get("multipleOf")
    if isinstance(mult, (int, float)) and mult > 0:
        x = round(x / mult) * mult
    if integer:
        return int(round(x))
    return round(x, 6) if isinstance(x, float) else x


class SchemaCompiler:
    """Turns a JSON Schema into a generator function ``(call, row) -> value``."""

    def __init__(self, plan: ToolPlan, root: dict[str, Any]) -> None:
        self.plan = plan
        self.root = root
        self.rows_claimed = False

    def resolve(self, schema: Any, hops: int = 0) -> dict[str, Any]:
        if not isinstance(schema, dict):
            return {}
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/") and hops < 16:
            node: Any = self.root
            for key in ref[2:].split("/"):
                node = node.get(key, {}) if isinstance(node, dict) else {}
            merged = {**node, **{k: val for k, val in schema.items() if k != "$ref"}}
            return self.resolve(merged, hops + 1)
        if "allOf" in schema and isinstance(schema["allOf"], list):
            merged = {k: val for k, val in schema.items() if k != "allOf"}
            for part in schema["allOf"]:
                part = self.resolve(part, hops + 1)
                props = {**merged.get("properties", {}), **part.get("properties", {})}
                req = list(dict.fromkeys([*merged.get("required", []), *part.get("required", [])]))
                merged = {**merged, **part, "properties": props, "required": req}
            return merged
        return schema

    def _type(self, schema: dict[str, Any], name: str, depth: int) -> str:
        t = schema.get("type")
        if isinstance(t, list):
            choices = [x for x in t if x != "null"] or ["null"]
            if depth == 0 and len(choices) > 1:
                hint = self.plan.spec.meta.get("output_shape_hint")
                if isinstance(hint, str) and hint in choices:
                    return hint
            return choices[0]
        if isinstance(t, str):
            return t
        if "properties" in schema:
            return "object"
        if "items" in schema:
            return "array"
        kind = column_kind(name)
        return "number" if kind in _NUMERIC_KINDS else "string"

    def compile(self, schema: Any, name: str, depth: int) -> Gen:
        schema = self.resolve(schema)
        if "const" in schema:
            const = schema["const"]
            return lambda call, row: const
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            options = schema["enum"]
            return lambda call, row: options[call.rng.randrange(len(options))]
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list) and schema[key]:
                subs = [self.resolve(s) for s in schema[key]]
                non_null = [s for s in subs if s.get("type") != "null"] or subs
                base = {k: val for k, val in schema.items() if k != key}
                return self.compile({**base, **non_null[0]}, name, depth)
        t = self._type(schema, name, depth)
        if t == "object":
            return self._object(schema, name, depth)
        if t == "array":
            return self._array(schema, name, depth)
        if t in ("number", "integer"):
            return self._number(schema, name, t == "integer")
        if t == "boolean":
            return lambda call, row: call.rng.random() < 0.5
        if t == "null":
            return lambda call, row: None
        return self._string(schema, name, depth)

    # -- objects and arrays

    def _default_columns(self, depth: int) -> dict[str, dict[str, Any]]:
        plan = self.plan
        if plan.column_order:
            return {c: {} for c in plan.column_order}
        chinese = plan.spec.source == "akshare"
        cols: tuple[str, ...]
        if plan.history_like:
            cols = (
                ("日期", "开盘", "收盘", "最高", "最低", "成交量", "成交额", "涨跌幅")
                if chinese
                else ("date", "open", "high", "low", "close", "volume")
            )
        else:
            cols = (
                ("代码", "名称", "最新价", "涨跌幅", "成交量")
                if chinese
                else ("symbol", "name", "price", "changePercent", "volume")
            )
        return {c: {} for c in cols}

    def _keyed(self, schema: dict[str, Any], name: str, depth: int) -> Gen:
        """An object mapping entity names (``meta.output_keyed_by``) to values, e.g. one table each."""
        value_gen = self.compile(schema["additionalProperties"], name, depth + 1)
        lo = schema.get("minProperties", 1) if isinstance(schema.get("minProperties"), int) else 1

        def gen(call: Call, row: Row) -> dict[str, Any]:
            pool = universe(call.world, call.plan.entity_type, call.plan.western)
            start = call.rng.randrange(len(pool))
            ents = [pool[(start + k) % len(pool)] for k in range(max(lo, 3))]
            ents = call.entities[:1] + [
                e for e in ents if not call.entities or e.code != call.entities[0].code
            ]
            out: dict[str, Any] = {}
            for ent in ents[: max(lo, 3)]:
                out[ent.name or ent.code] = value_gen(
                    call, Row(row.i, ent, row.g, summary=row.summary, keyed=True)
                )
            return out

        return gen

    def _object(self, schema: dict[str, Any], name: str, depth: int) -> Gen:
        props = schema.get("properties")
        if (not isinstance(props, dict) or not props) and isinstance(
            schema.get("additionalProperties"), dict
        ):
            return self._keyed(schema, name, depth)
        if not isinstance(props, dict) or not props:
            if schema.get("additionalProperties") is False:
                return lambda call, row: {}
            props = self._default_columns(depth) if depth <= 2 else {"value": {"type": "number"}}
        order = [c for c in self.plan.column_order if c in props] + [
            c for c in props if c not in self.plan.column_order
        ]
        kinds = {column_kind(c) for c in order}
        if depth <= 2 and "date" in kinds:
            self.plan.row_has_date = True
        if depth <= 2 and kinds & {"code", "name"}:
            self.plan.row_has_code = True
        gens = [(key, self.compile(props[key], key, depth + 1)) for key in order]

        def gen(call: Call, row: Row) -> dict[str, Any]:
            return {key: g(call, row) for key, g in gens}

        return gen

    def _tuple(self, schema: dict[str, Any], depth: int) -> Gen:
        names = self.plan.column_order
        gens = [
            self.compile(sub, names[i] if i < len(names) else f"item{i}", depth + 1)
            for i, sub in enumerate(schema["prefixItems"])
        ]

        def gen(call: Call, row: Row) -> list[Any]:
            return [g(call, row) for g in gens]

        return gen

    def _array(self, schema: dict[str, Any], name: str, depth: int) -> Gen:
        if isinstance(schema.get("prefixItems"), list) and schema["prefixItems"]:
            return self._tuple(schema, depth)
        items = schema.get("items")
        if not isinstance(items, dict):
            items = {"type": "object"} if depth == 0 or not items else {}
        lo = schema.get("minItems", 0) if isinstance(schema.get("minItems"), int) else 0
        hi = schema.get("maxItems") if isinstance(schema.get("maxItems"), int) else None
        item_name = _singular(name)
        if depth == 0 and items.get("type") not in ("object", None) and len(self.plan.column_order) == 1:
            item_name = self.plan.column_order[0]
        item_gen = self.compile(items, item_name, depth + 1)

        def fit(values: list[Any], call: Call, row: Row) -> list[Any]:
            while len(values) < lo:
                values.append(item_gen(call, Row(len(values), row.entity, row.g)))
            return values if hi is None else values[:hi]

        def rows_gen(call: Call, row: Row) -> list[Any]:
            if not row.summary:
                return fit([item_gen(call, row) for _ in range(2)], call, row)
            if row.keyed:
                return fit(
                    [item_gen(call, Row(r.i, row.entity, r.g, minute=r.minute)) for r in call.rows()],
                    call,
                    row,
                )
            return fit([item_gen(call, r) for r in call.rows()], call, row)

        return rows_gen

    # -- leaves

    def _entity_for(self, call: Call, row: Row, column: str) -> Entity:
        wanted = self.plan.entity_columns.get(column)
        if wanted is None:
            if re.search(r"基金", column):
                wanted = "fund_code"
            elif re.search(r"指数", column):
                wanted = "index_symbol"
            elif re.search(r"债", column):
                wanted = "bond_code"
        same = {wanted, row.entity.type} <= {"stock_symbol", "company_id"}
        if wanted is None or wanted == row.entity.type or same or wanted not in INSTRUMENT_TYPES:
            return row.entity
        pool = universe(call.world, wanted, self.plan.western)
        return pool[derive_seed(call.world.seed, "column_entity", row.entity.code, wanted) % len(pool)]

    def _number(self, schema: dict[str, Any], name: str, integer: bool) -> Gen:
        kind = column_kind(name)
        entity_kind = self.plan.entity_columns.get(name)
        if entity_kind and kind not in ("code", "name"):
            kind = "date" if entity_kind == "date" else "code"
        chinese = is_chinese(name)
        value = self._number_value(kind, name, chinese)

        constrained = any(
            k in schema for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
        )
        if constrained:
            return lambda call, row: _num_bounds(schema, value(call, row), integer)
        if integer:
            return lambda call, row: int(round(value(call, row)))
        return value

    def _number_value(self, kind: str, name: str, chinese: bool) -> Callable[[Call, Row], float]:
        def bar_field(attr: str) -> Callable[[Call, Row], float]:
            def get(call: Call, row: Row) -> float:
                bar = call.bar(row)
                return getattr(bar, attr) if bar else 0.0

            return get

        if kind in ("open", "high", "low", "close", "prev_close", "acc_close", "volume"):
            return bar_field({"prev_close": "prev_close", "acc_close": "acc_close"}.get(kind, kind))

        def derived(call: Call, row: Row) -> float:
            bar = call.bar(row)
            r = call.rng.random()
            if kind == "rank":
                return row.i + 1
            if kind == "amount":
                return round(bar.volume * bar.close, 2) if bar else round(r * 1e8, 2)
            if kind == "change_pct":
                return round((bar.close / bar.prev_close - 1) * 100, 2) if bar and bar.prev_close else 0.0
            if kind == "change":
                return round(bar.close - bar.prev_close, 4) if bar else 0.0
            if kind == "amplitude":
                return (
                    round((bar.high - bar.low) / bar.prev_close * 100, 2) if bar and bar.prev_close else 0.0
                )
            if kind == "turnover_rate":
                return round(0.2 + (bar.volume % 9973) / 9973 * 8, 2) if bar else round(0.2 + r * 8, 2)
            stock = call.world.stock(row.entity.code) if row.entity.type == "stock_symbol" else None
            if kind == "pe":
                return stock["pe_ttm"] if stock else round(6 + r * 50, 2)
            if kind == "pb":
                return stock["pb"] if stock else round(0.6 + r * 7, 2)
            if kind == "market_cap":
                return (
                    round(stock["market_value_yi"] * 1e8, 2) if stock else round((20 + r * r * 8000) * 1e8, 2)
                )
            if kind == "count":
                return int(1 + r * r * 100000)
            if kind == "ratio":
                return round(r * 100, 2) if chinese else round(r, 4)
            if kind == "rate":
                return round((r - 0.4) * 40, 2)
            if kind == "money":
                return round((1 + r * r * 5000) * 1e6, 2)
            if kind == "year":
                return call.world.as_of.year - int(r * 3)
            if kind == "date":
                day = call.row_day(row)
                if chinese or re.search(r"date|日期", name, re.I):
                    return int(day.strftime("%Y%m%d"))
                return format_date(day, "unix_ms" if "ms" in name.lower() else "unix")
            if kind == "code":
                code = row.entity.code
                return int(code) if code.isdigit() else derive_seed(call.world.seed, "num_id", code) % 10**8
            return round(r * 1000, 2)

        return derived

    def _string(self, schema: dict[str, Any], name: str, depth: int) -> Gen:
        kind = column_kind(name)
        entity_kind = self.plan.entity_columns.get(name)
        if entity_kind == "date":
            kind = "date"
        elif entity_kind in INSTRUMENT_TYPES and kind != "name":
            kind = "code"
        fmt = schema.get("format")
        label = None
        if fmt == "date":
            kind, label = "date", "YYYY-MM-DD"
        elif fmt == "date-time":
            kind, label = "date", "iso-datetime"
        elif kind == "date":
            label = date_format_named(str(schema.get("description") or ""))
        pattern = raw_pattern if isinstance(raw_pattern := schema.get("pattern"), str) else ""
        compiled = re.compile(pattern) if pattern else None
        min_len = raw_min if isinstance(raw_min := schema.get("minLength"), int) else 0
        max_len = raw_max if isinstance(raw_max := schema.get("maxLength"), int) else None
        base = self._string_value(kind, name, label, fmt, depth)
        if name == self.plan.spec.meta.get("output_keyed_by"):
            base = lambda call, row: row.entity.name or row.entity.code  # noqa: E731
        echo = _echo_arg(self.plan.spec, name) if depth > 0 and kind not in ("date", "code") else None

        def gen(call: Call, row: Row) -> str:
            text = str(call.args[echo]) if echo and isinstance(call.args.get(echo), str) else base(call, row)
            if compiled is not None and not compiled.search(text):
                text = sample_pattern(pattern, call.rng) or text
            if len(text) < min_len:
                text = text + "0" * (min_len - len(text))
            if max_len is not None and len(text) > max_len:
                text = text[:max_len]
            return text

        return gen

    def _string_value(
        self, kind: str, name: str, label: str | None, fmt: Any, depth: int
    ) -> Callable[[Call, Row], str]:
        plan = self.plan
        chinese = is_chinese(name) or plan.spec.source == "akshare"
        if depth == 0:  # a bare text result

            def text_result(call: Call, row: Row) -> str:
                ent = call.rows()[0].entity if call.rows() else row.entity
                day = call.row_day(row).isoformat()
                return (
                    f"{ent.name}（{ent.code}）截至{day}的数据摘要。"
                    if chinese
                    else (f"Summary for {ent.name} ({ent.code}) as of {day}.")
                )

            return text_result
        if fmt == "uri" or kind == "url":
            return lambda call, row: f"https://example.com/{plan.spec.name}/{row.entity.code}"
        if fmt == "email":
            return lambda call, row: "info@example.com"
        if kind == "date":

            def date_text(call: Call, row: Row) -> str:
                use = label or call.date_label
                if row.minute is not None and use in ("YYYY-MM-DD", "YYYYMMDD", "YYYY/MM/DD", "YYYY.MM.DD"):
                    use = "YYYY-MM-DD HH:MM:SS"
                return str(format_date(call.row_day(row), use, row.minute or "15:00:00"))

            return date_text
        if kind == "code":
            return lambda call, row: self._entity_for(call, row, name).code
        if kind == "name":
            return lambda call, row: self._entity_for(call, row, name).name
        if kind == "industry":

            def industry(call: Call, row: Row) -> str:
                stock = call.world.stock(row.entity.code) if row.entity.type == "stock_symbol" else None
                return stock["industry"] if stock else v.INDUSTRIES[call.rng.randrange(len(v.INDUSTRIES))]

            return industry
        if kind == "exchange":

            def exchange(call: Call, row: Row) -> str:
                stock = call.world.stock(row.entity.code) if row.entity.type == "stock_symbol" else None
                return stock["exchange"] if stock else ("NASDAQ" if plan.western else "SH")

            return exchange
        if kind == "status":
            if chinese:
                word = "开放赎回" if "赎回" in name else "开放申购" if "申购" in name else "正常"
                return lambda call, row: word
            return lambda call, row: "active"
        if kind == "currency":
            return lambda call, row: "USD" if plan.western else "CNY"
        if kind == "title":
            words = _HEADLINES_CN if chinese else _HEADLINES_EN
            sep = "" if chinese else " "
            return lambda call, row: f"{row.entity.name}{sep}{words[call.rng.randrange(len(words))]}"
        if kind == "text":
            if chinese:
                return lambda call, row: (
                    f"{row.entity.name}相关信息，数据截至{call.row_day(row).isoformat()}。"
                )
            return lambda call, row: (
                f"Information about {row.entity.name} as of {call.row_day(row).isoformat()}."
            )
        if kind in _NUMERIC_KINDS:
            number = self._number_value(kind, name, is_chinese(name))
            return lambda call, row: str(number(call, row))
        if chinese:
            return lambda call, row: f"{name}{row.i + 1}"
        return lambda call, row: f"{_WORDS_EN[call.rng.randrange(len(_WORDS_EN))]}-{row.i + 1}"


def _echo_arg(spec: ToolSpec, column: str) -> str | None:
    """The argument a column repeats (same name, case-insensitive), e.g. ``from``/``to`` of a conversion."""
    for arg in spec.input_schema.get("properties") or {}:
        if arg.lower() == column.lower():
            return arg
    return None


def _singular(name: str) -> str:
    return name[:-1] if name.endswith("s") and len(name) > 3 else name
