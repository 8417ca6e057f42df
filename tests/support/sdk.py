"""The SDK client's types in tests: the text of a tool result, a request ``_meta`` with finmcp keys."""

from __future__ import annotations

from typing import Any

from mcp_types import CallToolResult, RequestParamsMeta, TextContent


def first_text(result: CallToolResult) -> str:
    """The text of a result's first content block; the test fails when that block is not text."""
    block = result.content[0]
    assert isinstance(block, TextContent), f"first content block is {type(block).__name__}, not text"
    return block.text


def request_meta(values: dict[str, Any]) -> RequestParamsMeta:
    """``values`` (e.g. ``{"io.finmcp/group": "a"}``) as the ``meta`` of ``Client.call_tool``."""
    return values  # type: ignore[return-value]  # an open TypedDict (PEP 728 extra_items), which mypy does not read yet
