"""Hypothesis strategies for JSON values (the two rooms that fuzz with them tune their sizes)."""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy


def json_scalars(int_bound: int, text_size: int, *extra: SearchStrategy) -> SearchStrategy:
    """null, booleans, integers within ±``int_bound``, finite floats, short texts (and ``extra``)."""
    strategy = (
        st.none()
        | st.booleans()
        | st.integers(min_value=-int_bound, max_value=int_bound)
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=text_size)
    )
    for more in extra:
        strategy |= more
    return strategy


def json_values(scalars: SearchStrategy, key_size: int, max_leaves: int = 20) -> SearchStrategy:
    """Nested lists and objects (up to 4 items each, keys up to ``key_size`` characters) of ``scalars``."""
    return st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=key_size), inner, max_size=4)
        ),
        max_leaves=max_leaves,
    )
