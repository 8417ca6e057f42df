"""Turn raw tool records into validated ToolSpecs, with errors that name the tool and the field."""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import ValidationError

from finmcp.tool_specs.errors import InventoryError
from finmcp.tool_specs.model import ToolSpec
from finmcp.tool_specs.taxonomy import load_taxonomy


def _field_path(parts: Iterable[Any]) -> str:
    return ".".join(str(p) for p in parts) or "<root>"


@lru_cache(maxsize=4096)
def _meta_schema_error(schema_json: str) -> tuple[tuple[Any, ...], str] | None:
    """Meta-schema check of one schema (as canonical JSON), cached: many tools share schemas."""
    try:
        Draft202012Validator.check_schema(json.loads(schema_json))
    except SchemaError as exc:
        return tuple(exc.path), exc.message
    return None


def fit_length(text: str, schema: dict[str, Any]) -> str:
    """``text`` padded with ``0`` up to the schema's ``minLength`` and cut at its ``maxLength``."""
    min_len, max_len = schema.get("minLength"), schema.get("maxLength")
    if isinstance(min_len, int) and len(text) < min_len:
        text = text.ljust(min_len, "0")
    if isinstance(max_len, int):
        text = text[:max_len]
    return text


def clear_cache() -> None:
    """Forget which schemas passed the meta-schema check (as in a fresh process)."""
    _meta_schema_error.cache_clear()


def check_json_schema(tool: str, field: str, schema: dict[str, Any]) -> None:
    """Check ``schema`` against the JSON Schema 2020-12 meta-schema; raise naming tool and field."""
    error = _meta_schema_error(json.dumps(schema, sort_keys=True))
    if error is not None:
        path, message = error
        raise InventoryError(
            f"tool {tool!r}: field {_field_path([field, *path])}: invalid JSON Schema: {message}"
        )
    properties = schema.get("properties") or {}
    for required in schema.get("required") or []:
        if field == "inputSchema" and required not in properties:
            raise InventoryError(
                f"tool {tool!r}: field {field}.required: {required!r} is required but not in properties"
            )


def validate_record(record: Any, position: int, inventory: str, meta_check: bool = True) -> ToolSpec:
    """Validate one raw record into a ToolSpec; errors name the inventory, tool and field.

    ``meta_check=False`` skips checking the schemas against the JSON Schema meta-schema (about 20 ms
    per schema, nearly all of a load): only for the shipped inventories, which a test checks in full.
    """
    name = record.get("name", f"#{position}") if isinstance(record, dict) else f"#{position}"
    if not isinstance(record, dict):
        raise InventoryError(f"{inventory}: tool {name}: expected an object, got {type(record).__name__}")
    try:
        spec = ToolSpec.model_validate(record)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InventoryError(
            f"{inventory}: tool {name!r}: field {_field_path(first['loc'])}: {first['msg']}"
            + (f" ({len(exc.errors()) - 1} more errors)" if len(exc.errors()) > 1 else "")
        ) from None
    if meta_check:
        try:
            check_json_schema(spec.name, "inputSchema", spec.input_schema)
            if spec.output_schema is not None:
                check_json_schema(spec.name, "outputSchema", spec.output_schema)
        except InventoryError as exc:
            raise InventoryError(f"{inventory}: {exc}") from None
    _check_taxonomy(spec, inventory)
    return spec


def _check_taxonomy(spec: ToolSpec, inventory: str) -> None:
    if spec.scenario is None and spec.sub_scenario is None:
        return
    taxonomy = load_taxonomy()
    if spec.scenario not in taxonomy.scenarios:
        raise InventoryError(
            f"{inventory}: tool {spec.name!r}: field scenario: unknown scenario {spec.scenario!r}"
        )
    if (
        spec.sub_scenario is not None
        and spec.sub_scenario not in taxonomy.scenarios[spec.scenario].sub_scenarios
    ):
        raise InventoryError(
            f"{inventory}: tool {spec.name!r}: field sub_scenario: {spec.sub_scenario!r} "
            f"is not a sub-scenario of {spec.scenario!r}"
        )


def validate_records(records: Iterable[Any], inventory: str, meta_check: bool = True) -> tuple[ToolSpec, ...]:
    """Validate every record and check that tool names are unique (``meta_check``: see
    :func:`validate_record`)."""
    specs: list[ToolSpec] = []
    seen: set[str] = set()
    for position, record in enumerate(records):
        spec = validate_record(record, position, inventory, meta_check)
        if spec.name in seen:
            raise InventoryError(f"{inventory}: tool {spec.name!r}: field name: duplicate tool name")
        seen.add(spec.name)
        specs.append(spec)
    return tuple(specs)
