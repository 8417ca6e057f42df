"""Numbered JSON lines: blank lines skipped but counted, the first bad line named."""

from __future__ import annotations

import pytest

from finmcp.tool_specs.jsonlines import JsonLineError, json_lines


def test_values_with_their_line_numbers_blank_lines_counted() -> None:
    assert list(json_lines(['{"a": 1}', "", "  ", "[2]"])) == [(1, {"a": 1}), (4, [2])]


def test_the_first_bad_line_is_named() -> None:
    with pytest.raises(JsonLineError) as raised:
        list(json_lines(["1", "", "{oops"]))
    assert raised.value.number == 3 and raised.value.error.msg.startswith("Expecting property name")
