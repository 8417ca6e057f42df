"""Stable fingerprints of MCP tool definitions (what a server declares in ``tools/list``).

A tool's fingerprint is the SHA-256 of the RFC 8785 (JCS) canonical JSON of the parts of its
definition that change what a client or a benchmark sees: ``name``, ``title``, ``description``,
``inputSchema``, ``outputSchema``, ``annotations`` and ``execution``. ``_meta`` and ``icons`` are left
out (servers put volatile or cosmetic data there), and so is any field this module does not know,
so a server that adds an unrelated field keeps its fingerprints. Key order and whitespace never
matter; ``1`` and ``1.0`` are the same number.

The fingerprint of a tool list is the SHA-256 over its tools' names and fingerprints, sorted by name:
the order a server lists its tools in does not change it.

Used by the proxy's tool-definition baselines, the drift audit and run fingerprints.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from finmcp.recordings.canonical import canonical_json

FINGERPRINT_FIELDS = (
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
    "execution",
)
"""The definition fields a fingerprint covers, in the order :func:`definition_view` keeps them."""

FINGERPRINT_PREFIX = "sha256:"


def definition_view(tool: Mapping[str, Any]) -> dict[str, Any]:
    """The fingerprinted part of a tool definition (fields of :data:`FINGERPRINT_FIELDS` present)."""
    return {field: tool[field] for field in FINGERPRINT_FIELDS if field in tool}


def tool_fingerprint(tool: Mapping[str, Any]) -> str:
    """``sha256:<64 hex>`` of one tool definition's canonical JSON (see the module docstring)."""
    return _sha256(canonical_json(definition_view(tool)))


def tools_fingerprint(tools: Iterable[Mapping[str, Any]]) -> str:
    """``sha256:<64 hex>`` of a whole tool list, independent of the order the tools are listed in."""
    pairs = sorted((str(tool.get("name")), tool_fingerprint(tool)) for tool in tools)
    return _sha256(canonical_json([list(pair) for pair in pairs]))


def fingerprints_by_name(tools: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Each tool's fingerprint, keyed by its name."""
    return {str(tool.get("name")): tool_fingerprint(tool) for tool in tools}


def _sha256(text: str) -> str:
    return FINGERPRINT_PREFIX + hashlib.sha256(text.encode("utf-8")).hexdigest()
