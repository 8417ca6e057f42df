"""The ToolSpec model: one financial tool, wire-compatible with an MCP ``Tool``."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from finmcp.tool_specs.entities import EntityType
from finmcp.tool_specs.tags import IntentType, RegulatoryDomain, Timeliness

# MCP tool names: 1-128 chars of ASCII letters, digits, '_', '-', '.' (SEP-986).
TOOL_NAME_PATTERN = r"^[A-Za-z0-9_.\-]{1,128}$"
_TOOL_NAME_RE = re.compile(TOOL_NAME_PATTERN)

META_KEY = "io.finmcp/tags"
"""Key under which a tool's finance tags travel in the MCP ``_meta`` object."""


class FinanceTags(BaseModel):
    """FinToolBench's three finance attributes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    timeliness: Timeliness
    intent_type: IntentType
    regulatory_domains: tuple[RegulatoryDomain, ...] = Field(min_length=1)


class ToolSpec(BaseModel):
    """A tool of an inventory: MCP fields plus finance tags, taxonomy place and data-flow types."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    name: str = Field(pattern=TOOL_NAME_PATTERN)
    title: str | None = None
    description: str = Field(min_length=1)
    input_schema: dict[str, Any] = Field(alias="inputSchema")
    output_schema: dict[str, Any] | None = Field(default=None, alias="outputSchema")
    tags: FinanceTags
    scenario: str | None = None
    sub_scenario: str | None = None
    source: str = Field(min_length=1)
    consumes: tuple[EntityType, ...] = ()
    produces: tuple[EntityType, ...] = ()
    meta: dict[str, Any] = Field(default_factory=dict)
    """Free-form provenance (param source, evidence, upstream route); served under ``_meta`` too."""

    @field_validator("input_schema")
    @classmethod
    def _object_root(cls, schema: dict[str, Any]) -> dict[str, Any]:
        if schema.get("type") != "object":
            raise ValueError('inputSchema must have type "object" at the root')
        return schema

    @property
    def read_only(self) -> bool:
        """Informational and advisory tools only read; transactional tools change state."""
        return self.tags.intent_type != "transactional"

    def annotations(self) -> dict[str, Any]:
        """MCP tool annotations derived from the finance tags.

        - ``readOnlyHint``: not transactional.
        - ``destructiveHint``: False for everything here (transactional tools place, not delete).
        - ``idempotentHint``: read-only tools are idempotent; transactional ones are not.
        - ``openWorldHint``: the answer depends on a changing outside world unless timeliness is static.
        """
        return {
            "title": self.title or self.name,
            "readOnlyHint": self.read_only,
            "destructiveHint": False,
            "idempotentHint": self.read_only,
            "openWorldHint": self.tags.timeliness != "static",
        }

    def finance_meta(self) -> dict[str, Any]:
        """The ``_meta`` payload: tags, taxonomy place, source and entity types."""
        return {
            "timeliness": self.tags.timeliness,
            "intent_type": self.tags.intent_type,
            "regulatory_domains": list(self.tags.regulatory_domains),
            "scenario": self.scenario,
            "sub_scenario": self.sub_scenario,
            "source": self.source,
            "consumes": list(self.consumes),
            "produces": list(self.produces),
            **({"extra": self.meta} if self.meta else {}),
        }

    def to_mcp_tool(self) -> dict[str, Any]:
        """The wire form of this tool as served by ``tools/list``."""
        tool: dict[str, Any] = {"name": self.name}
        if self.title:
            tool["title"] = self.title
        tool["description"] = self.description
        tool["inputSchema"] = self.input_schema
        if self.output_schema is not None:
            tool["outputSchema"] = self.output_schema
        tool["annotations"] = self.annotations()
        tool["_meta"] = {META_KEY: self.finance_meta()}
        return tool

    @classmethod
    def from_mcp_tool(cls, tool: dict[str, Any]) -> ToolSpec:
        """Rebuild a ToolSpec from the wire form produced by :meth:`to_mcp_tool`."""
        meta = dict((tool.get("_meta") or {}).get(META_KEY) or {})
        if not meta:
            raise ValueError(f"tool {tool.get('name')!r}: _meta[{META_KEY!r}] is missing")
        return cls(
            name=tool["name"],
            title=tool.get("title"),
            description=tool.get("description") or "",
            input_schema=tool["inputSchema"],
            output_schema=tool.get("outputSchema"),
            tags=FinanceTags(
                timeliness=meta["timeliness"],
                intent_type=meta["intent_type"],
                regulatory_domains=tuple(meta["regulatory_domains"]),
            ),
            scenario=meta.get("scenario"),
            sub_scenario=meta.get("sub_scenario"),
            source=meta["source"],
            consumes=tuple(meta.get("consumes") or ()),
            produces=tuple(meta.get("produces") or ()),
            meta=meta.get("extra") or {},
        )

    def to_record(self) -> dict[str, Any]:
        """The inventory data-file form (aliases, no defaults), the inverse of ``model_validate``."""
        return self.model_dump(mode="json", by_alias=True, exclude_defaults=True)


def is_valid_tool_name(name: str) -> bool:
    """True when ``name`` is a valid MCP tool name."""
    return bool(_TOOL_NAME_RE.match(name))
