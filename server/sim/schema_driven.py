"""The schema-driven builder: answers any non-Qieman tool from its output schema and ``meta`` hints.

``build_from_schema(ctx, args)`` returns the tool's *unwrapped* value (the rows that go under ``result``
for ``meta.output_wrapped`` tools). How it decides:

- **Schema**: the result schema is compiled once per tool into value generators (objects -> their
  properties in ``meta.output_columns`` order, arrays -> rows, leaves -> values chosen by the column's
  name: dates, the row's instrument code/name, bar fields, changes, ratios, amounts, ...). ``enum``,
  ``const``, ``pattern``, ``format``, bounds and ``minItems``/``maxItems`` are honoured, so the output
  validates against the tool's ``outputSchema``.
- **Rows** (``meta.output_rows_by``, else inferred): ``date_range`` -> one row per trading day (Shanghai
  /Shenzhen calendar) of the argument range, ascending, at most :data:`MAX_ROWS` (the most recent ones
  are kept), default the last :data:`DEFAULT_HISTORY_DAYS` trading days up to ``world.as_of``;
  ``list`` -> a deterministic sample of world entities (stocks, funds, indices, bonds, ...; size from a
  size/limit argument, default :data:`DEFAULT_LIST_ROWS`); ``single`` -> one row per argument symbol.
- **Entities**: a symbol/fund code/ticker argument is the row entity, so its code appears in the entity
  columns; a symbol's bars are the same in every tool (``server.sim.sim_entities``).
- **Determinism**: every random draw comes from ``derive_seed(seed, "schema_driven", tool, canonical
  args)``; no wall clock, no ``hash()``.

A date argument that does not parse, or a range that ends before it starts, raises
:class:`ToolInputError` naming the tool and argument.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

from finmcp.recordings.canonical import canonical_json
from finmcp.recordings.plumbing.seeding import derive_seed
from finmcp.server.sim.registry import BuildContext, ToolInputError
from finmcp.server.sim.schema_calls import (
    HISTORY_TOKENS,
    Call,
    Row,
    ToolPlan,
    default_entity,
    name_tokens,
    parse_args,
    tool_entity_type,
)
from finmcp.server.sim.schema_compiler import SchemaCompiler
from finmcp.tool_specs.model import ToolSpec

_PLANS: dict[int, ToolPlan] = {}


def _result_schema(spec: ToolSpec) -> dict[str, Any]:
    schema = spec.output_schema or {}
    if spec.meta.get("output_wrapped"):
        return ((schema.get("properties") or {}).get("result")) or {}
    return schema


def _plan(spec: ToolSpec) -> ToolPlan:
    plan = _PLANS.get(id(spec))
    if plan is not None and plan.spec is spec:
        return plan
    meta = spec.meta
    entity_columns = dict(meta.get("output_entity_columns") or {})
    plan = ToolPlan(
        spec=spec,
        entity_type=tool_entity_type(spec, entity_columns),
        western=spec.source == "rapidapi",
        rows_by=meta.get("output_rows_by"),
        entity_columns=entity_columns,
        column_order=list(meta.get("output_columns") or []),
        history_like=bool(name_tokens(spec.name) & HISTORY_TOKENS),
        time_step=meta.get("output_time_step"),
    )
    plan.gen = SchemaCompiler(plan, _result_schema(spec)).compile(_result_schema(spec), "result", 0)
    if len(_PLANS) > 4096:
        _PLANS.clear()
    _PLANS[id(spec)] = plan
    return plan


def compile_plans(specs: Iterable[ToolSpec]) -> None:
    """Compile the answer plans of ``specs`` now (start-up work: a tool's first call compiled its own)."""
    for spec in specs:
        _plan(spec)


def build_from_schema(ctx: BuildContext, args: dict[str, Any]) -> Any:
    """The tool's answer (unwrapped), generated from its output schema; deterministic per seed and args."""
    plan = _plan(ctx.spec)
    key = canonical_json(args)
    call = Call(
        ctx.world, plan, dict(args), random.Random(derive_seed(ctx.seed, "schema_driven", ctx.spec.name, key))
    )
    parse_args(call)
    summary_g = None
    rows = None
    try:
        rows = call.rows()
    except ToolInputError:
        raise
    if rows:
        summary_g = rows[-1].g
    entity = call.entities[0] if call.entities else (rows[0].entity if rows else default_entity(call))
    summary = Row(0, entity, summary_g, summary=True)
    assert plan.gen is not None  # _plan compiles it before it hands the plan out
    return plan.gen(call, summary)
