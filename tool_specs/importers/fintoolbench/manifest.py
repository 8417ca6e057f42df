"""Import the published FinToolBench tool manifest (``tools_all_annotated.jsonl``) as ToolSpecs.

One JSON object per line with keys ``name``, ``tool_from``, ``description``, ``parameters`` (a JSON
Schema object) and ``financial_tags`` (``timeliness``, ``intent_type``, ``regulatory_domains``); the
original file also carries ``python_code``, which is ignored, and older versions name ``timeliness``
``update_frequency``.

Two modes:

* ``keep_text=True`` serves the published text unchanged (tool and parameter descriptions), for users
  who pass their own copy of the manifest.
* ``keep_text=False`` writes finmcp's own text (:mod:`tool_specs.importers.fintoolbench.text`); this
  builds the shipped ``fintool760`` inventory.

In both modes names, parameter names, types and ``required`` are exactly the manifest's, tags are the
manifest's ``financial_tags``, ``source`` is ``tool_from``, and the output schema, ``consumes`` and
``produces`` are derived from the source facts. A bad line raises :class:`ManifestError` naming the
line, the tool and the field.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from finmcp.tool_specs.entities import EntityType, is_entity_type
from finmcp.tool_specs.errors import InventoryError
from finmcp.tool_specs.importers.fintoolbench.columns import plan_output
from finmcp.tool_specs.importers.fintoolbench.entities import infer_consumes, infer_produces
from finmcp.tool_specs.importers.fintoolbench.facts import ToolFacts
from finmcp.tool_specs.importers.fintoolbench.outputs import describe_output, output_meta, output_schema
from finmcp.tool_specs.importers.fintoolbench.text import input_schema, tool_description, tool_title
from finmcp.tool_specs.jsonlines import JsonLineError, json_lines
from finmcp.tool_specs.model import FinanceTags, ToolSpec, is_valid_tool_name
from finmcp.tool_specs.tags import (
    INTENT_TYPES,
    REGULATORY_DOMAINS,
    TIMELINESS,
    IntentType,
    RegulatoryDomain,
    Timeliness,
)

REQUIRED_KEYS = ("name", "tool_from", "description", "parameters", "financial_tags")
JSON_TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object", "null"})


class ManifestError(InventoryError):
    """A manifest line is malformed; the message names the file, line, tool and field."""


class _LineError(Exception):
    def __init__(self, field: str, problem: str) -> None:
        super().__init__(problem)
        self.field = field
        self.problem = problem


# ----------------------------------------------------------------------------- checks


def _check_parameters(parameters: Any) -> tuple[dict[str, dict], tuple[str, ...]]:
    if not isinstance(parameters, dict):
        raise _LineError("parameters", f"must be a JSON Schema object, got {type(parameters).__name__}")
    if parameters.get("type") != "object":
        raise _LineError("parameters.type", f'must be "object", got {parameters.get("type")!r}')
    properties = parameters.get("properties", {})
    if not isinstance(properties, dict):
        raise _LineError("parameters.properties", f"must be an object, got {type(properties).__name__}")
    for pname, pschema in properties.items():
        where = f"parameters.properties.{pname}"
        if not isinstance(pschema, dict):
            raise _LineError(where, f"parameter schema must be an object, got {type(pschema).__name__}")
        ptype = pschema.get("type")
        types = ptype if isinstance(ptype, list) else [ptype]
        if not types or any(t not in JSON_TYPES for t in types):
            raise _LineError(f"{where}.type", f"unknown JSON type {ptype!r}")
        if "description" in pschema and not isinstance(pschema["description"], str):
            raise _LineError(f"{where}.description", "must be a string")
    required = parameters.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise _LineError("parameters.required", "must be a list of parameter names")
    missing = [r for r in required if r not in properties]
    if missing:
        raise _LineError("parameters.required", f"names parameters not in properties: {missing}")
    return properties, tuple(required)


def _check_tags(tags: Any) -> tuple[Timeliness, IntentType, tuple[RegulatoryDomain, ...]]:
    if not isinstance(tags, dict):
        raise _LineError("financial_tags", f"must be an object, got {type(tags).__name__}")
    timeliness = tags.get("timeliness", tags.get("update_frequency"))
    if timeliness not in TIMELINESS:
        raise _LineError(
            "financial_tags.timeliness", f"unknown value {timeliness!r} (allowed: {', '.join(TIMELINESS)})"
        )
    intent = tags.get("intent_type")
    if intent not in INTENT_TYPES:
        raise _LineError(
            "financial_tags.intent_type", f"unknown value {intent!r} (allowed: {', '.join(INTENT_TYPES)})"
        )
    domains = tags.get("regulatory_domains")
    if not isinstance(domains, list) or not domains:
        raise _LineError("financial_tags.regulatory_domains", "must be a non-empty list")
    unknown = [d for d in domains if d not in REGULATORY_DOMAINS]
    if unknown:
        raise _LineError(
            "financial_tags.regulatory_domains",
            f"unknown values {unknown} (allowed: {', '.join(REGULATORY_DOMAINS)})",
        )
    return timeliness, intent, tuple(domains)


def record_facts(record: Any) -> ToolFacts:
    """Check one manifest record and return its facts; raises ``_LineError`` naming the field."""
    if not isinstance(record, dict):
        raise _LineError("<line>", f"expected a JSON object, got {type(record).__name__}")
    for key in REQUIRED_KEYS:
        if key not in record:
            raise _LineError(key, "missing")
    name = record["name"]
    if not isinstance(name, str) or not is_valid_tool_name(name):
        raise _LineError("name", f"{name!r} is not a valid MCP tool name")
    tool_from = record["tool_from"]
    if not isinstance(tool_from, str) or not tool_from.strip():
        raise _LineError("tool_from", "must be a non-empty string")
    description = record["description"]
    if not isinstance(description, str):
        raise _LineError("description", f"must be a string, got {type(description).__name__}")
    properties, required = _check_parameters(record["parameters"])
    timeliness, intent, domains = _check_tags(record["financial_tags"])
    return ToolFacts(name, tool_from, description, properties, required, timeliness, intent, domains)


# ----------------------------------------------------------------------------- conversion


def facts_to_spec(facts: ToolFacts, *, keep_text: bool) -> ToolSpec:
    """Build the ToolSpec of one manifest tool."""
    output = describe_output(facts)
    plan = plan_output(facts, output)
    if keep_text:
        if not facts.description.strip():
            raise _LineError("description", "is empty (MCP tools need a description)")
        description = facts.description
        schema = facts_parameters_copy(facts)
    else:
        description = tool_description(facts, output, [c.name for c in plan.columns])
        schema = input_schema(facts, keep_text=False)
    meta: dict[str, Any] = {"tool_from": facts.tool_from}
    if facts.api_name:
        meta["rapidapi_api"] = facts.api_name
    if facts.return_type:
        meta["akshare_return_type"] = facts.return_type
    meta.update(output_meta(output, plan))
    meta["text"] = "published" if keep_text else "finmcp"
    return ToolSpec(
        name=facts.name,
        title=tool_title(facts),
        description=description,
        input_schema=schema,
        output_schema=output_schema(output, plan),
        tags=FinanceTags(
            timeliness=facts.timeliness,
            intent_type=facts.intent_type,
            regulatory_domains=facts.regulatory_domains,
        ),
        source=facts.tool_from,
        consumes=_entities("consumes", infer_consumes(facts)),
        produces=_entities("produces", infer_produces(facts, output)),
        meta=meta,
    )


def _entities(field: str, found: tuple[str, ...]) -> tuple[EntityType, ...]:
    entities = tuple(e for e in found if is_entity_type(e))
    if len(entities) != len(found):
        raise _LineError(field, f"unknown entity types {[e for e in found if not is_entity_type(e)]}")
    return entities


def facts_parameters_copy(facts: ToolFacts) -> dict[str, Any]:
    """The manifest's parameter schema, unchanged (deep enough that the spec owns its dicts)."""
    return {
        "type": "object",
        "properties": {name: dict(schema) for name, schema in facts.properties.items()},
        "required": list(facts.required),
    }


def load_manifest_lines(
    lines: Iterable[str], *, keep_text: bool, origin: str = "<manifest>"
) -> list[ToolSpec]:
    """Parse manifest lines (blank lines skipped) into ToolSpecs, in order.

    Raises :class:`ManifestError` naming ``origin``, the 1-based line number, the tool and the field.
    """
    specs: list[ToolSpec] = []
    first_line: dict[str, int] = {}
    try:
        for number, record in json_lines(lines):
            tool = record.get("name") if isinstance(record, dict) else None
            where = f"{origin}: line {number}: tool {tool!r}" if tool else f"{origin}: line {number}"
            try:
                facts = record_facts(record)
                spec = facts_to_spec(facts, keep_text=keep_text)
            except _LineError as exc:
                raise ManifestError(f"{where}: field {exc.field}: {exc.problem}") from None
            except ValidationError as exc:
                first = exc.errors()[0]
                loc = ".".join(str(p) for p in first["loc"]) or "<root>"
                raise ManifestError(f"{where}: field {loc}: {first['msg']}") from None
            if facts.name in first_line:
                raise ManifestError(
                    f"{where}: field name: duplicate tool name (first on line {first_line[facts.name]})"
                )
            first_line[facts.name] = number
            specs.append(spec)
    except JsonLineError as exc:
        raise ManifestError(f"{origin}: line {exc.number}: not valid JSON: {exc.error.msg}") from None
    if not specs:
        raise ManifestError(f"{origin}: no tools found")
    return specs


def load_manifest_text(text: str, *, keep_text: bool, origin: str = "<manifest>") -> list[ToolSpec]:
    """Parse the text of a manifest file into ToolSpecs (see :func:`load_manifest_lines`)."""
    return load_manifest_lines(text.splitlines(), keep_text=keep_text, origin=origin)


def load_manifest(path: str | Path, *, keep_text: bool) -> list[ToolSpec]:
    """Read a manifest file (``tools.jsonl`` / ``tools_all_annotated.jsonl``) into ToolSpecs."""
    path = Path(path)
    if not path.is_file():
        raise ManifestError(f"manifest not found: {path}")
    return load_manifest_text(path.read_text("utf-8"), keep_text=keep_text, origin=str(path))
