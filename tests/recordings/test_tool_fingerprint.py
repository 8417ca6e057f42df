"""Tool-definition fingerprints: stable under key order, number spelling and listing order; sensitive
to every field a client sees."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from finmcp.recordings.tool_fingerprint import (
    fingerprints_by_name,
    tool_fingerprint,
    tools_fingerprint,
)

TOOL: dict[str, Any] = {
    "name": "get_current_time",
    "description": "Current time in a time zone.",
    "inputSchema": {
        "type": "object",
        "properties": {"timezone": {"type": "string", "maxLength": 64}},
        "required": ["timezone"],
    },
    "outputSchema": {"type": "object", "properties": {"datetime": {"type": "string"}}},
    "annotations": {"readOnlyHint": True},
}


def test_fingerprint_ignores_key_order_number_spelling_meta_and_icons() -> None:
    shuffled = dict(reversed(list(copy.deepcopy(TOOL).items())))
    shuffled["inputSchema"]["properties"]["timezone"]["maxLength"] = 64.0
    shuffled["_meta"] = {"seen": "2026-12-04T12:00:00Z"}
    shuffled["icons"] = [{"src": "https://example.invalid/i.png"}]
    assert tool_fingerprint(shuffled) == tool_fingerprint(TOOL)
    assert tool_fingerprint(TOOL).startswith("sha256:") and len(tool_fingerprint(TOOL)) == 71


@pytest.mark.parametrize(
    "change",
    [
        lambda t: t.__setitem__("description", "Current time."),
        lambda t: t["inputSchema"]["required"].append("format"),
        lambda t: t["inputSchema"]["properties"]["timezone"].__setitem__("type", "integer"),
        lambda t: t["outputSchema"]["properties"].__setitem__("dst", {"type": "boolean"}),
        lambda t: t.__setitem__("annotations", {"readOnlyHint": False, "destructiveHint": True}),
        lambda t: t.__setitem__("title", "Time"),
    ],
    ids=["description", "required", "type", "output-schema", "annotations", "title"],
)
def test_fingerprint_changes_with_every_declared_field(change) -> None:
    changed = copy.deepcopy(TOOL)
    change(changed)
    assert tool_fingerprint(changed) != tool_fingerprint(TOOL)


def test_list_fingerprint_ignores_listing_order() -> None:
    other = {"name": "convert_time", "inputSchema": {"type": "object"}}
    assert tools_fingerprint([TOOL, other]) == tools_fingerprint([other, TOOL])
    assert tools_fingerprint([TOOL]) != tools_fingerprint([TOOL, other])
    assert fingerprints_by_name([TOOL, other])["convert_time"] == tool_fingerprint(other)
