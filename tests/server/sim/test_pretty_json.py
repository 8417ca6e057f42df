"""``dumps_indent2`` writes exactly what ``json.dumps(value, ensure_ascii=False, indent=2)`` writes."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from finmcp.server.sim.pretty_json import dumps_indent2

# strings that look like the structure the fast path writes (raw newlines, braces, separators)
_TRICKY = st.sampled_from(["}", "},\n  {", "{", "\n", "],", "[{", "}]", '"', "\\", "中文", "\u2028", ""])
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=6)
    | _TRICKY
)
_KEYS = st.text(max_size=4) | _TRICKY | st.integers() | st.floats(allow_nan=False) | st.booleans() | st.none()
_ROWS = st.lists(st.dictionaries(_KEYS, _SCALARS, min_size=1, max_size=4), min_size=1, max_size=4)
_VALUES = st.recursive(
    _SCALARS | _ROWS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.tuples(inner, inner) | st.dictionaries(_KEYS, inner, max_size=4)
    ),
    max_leaves=30,
)


def _reference(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


@settings(max_examples=200, deadline=None)
@given(_VALUES)
def test_same_text_as_json_dumps(value: object) -> None:
    assert dumps_indent2(value) == _reference(value)


def test_rows_and_empty_containers() -> None:
    value = {"rows": [{"a": 1, "b": "},\n    {"}, {"a": 2.5, "b": None}], "e": [], "d": {}, "t": (1, [])}
    assert dumps_indent2(value) == _reference(value)


@pytest.mark.parametrize("bad", [{"a": object()}, [{"a": 1}, object()], {(1,): 2}, {1: {2: {3: object()}}}])
def test_unserialisable_values_raise_type_error(bad: object) -> None:
    with pytest.raises(TypeError):
        _reference(bad)
    with pytest.raises(TypeError):
        dumps_indent2(bad)
