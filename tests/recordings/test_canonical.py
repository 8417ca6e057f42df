"""Canonical arguments, canonical JSON and argument keys."""

from __future__ import annotations

import json
import math
import random

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from finmcp.recordings.canonical import (
    ARGS_KEY_HEX_CHARS,
    args_key,
    canonical_arguments,
    canonical_json,
    canonicalize,
    format_number,
)
from finmcp.recordings.errors import InvalidValueError
from tests.support import strategies

SAFE_INT = 2**53

json_values = strategies.json_values(strategies.json_scalars(10**20, 8), key_size=6)
json_objects = st.dictionaries(st.text(max_size=6), json_values, max_size=6)


def shuffled(value, rng: random.Random):
    """The same JSON value with every object's keys in a random order."""
    if isinstance(value, dict):
        keys = list(value)
        rng.shuffle(keys)
        return {key: shuffled(value[key], rng) for key in keys}
    if isinstance(value, list):
        return [shuffled(item, rng) for item in value]
    return value


def ints_as_floats(value):
    """The same value with every int (that a float holds exactly) written as a float."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return float(value) if abs(value) < SAFE_INT else value
    if isinstance(value, dict):
        return {key: ints_as_floats(item) for key, item in value.items()}
    if isinstance(value, list):
        return [ints_as_floats(item) for item in value]
    return value


@given(json_objects, st.randoms(use_true_random=False))
def test_key_order_does_not_change_the_key(args, rng):
    assert args_key(shuffled(args, rng)) == args_key(args)


@given(json_objects)
def test_integral_floats_equal_ints(args):
    assert args_key(ints_as_floats(args)) == args_key(args)


@given(st.lists(json_values, min_size=2, max_size=5), st.randoms(use_true_random=False))
def test_array_order_changes_the_key(items, rng):
    reordered = list(items)
    rng.shuffle(reordered)
    canonical_before = [canonical_json(canonical_arguments({"x": v})["x"]) for v in items]
    canonical_after = [canonical_json(canonical_arguments({"x": v})["x"]) for v in reordered]
    assume(canonical_before != canonical_after)
    assert args_key({"items": reordered}) != args_key({"items": items})


@st.composite
def schema_with_defaults(draw):
    names = draw(st.lists(st.text(min_size=1, max_size=5), min_size=1, max_size=5, unique=True))
    properties = {}
    for name in names:
        prop = {"type": "string"}
        if draw(st.booleans()):
            prop["default"] = draw(json_values)
        properties[name] = prop
    return {"type": "object", "properties": properties}


@given(schema_with_defaults(), st.data())
def test_default_applied_equals_explicit_default(schema, data):
    with_defaults = {n: p["default"] for n, p in schema["properties"].items() if "default" in p}
    given_args = {n: data.draw(json_values) for n, p in schema["properties"].items() if "default" not in p}
    omitted = dict(given_args)
    explicit = {**given_args, **with_defaults}
    assert args_key(omitted, schema) == args_key(explicit, schema)
    assert args_key(explicit, schema) == args_key(explicit)
    if with_defaults:
        assert args_key(omitted, schema) != args_key(omitted)


def test_nested_and_ref_defaults_are_applied():
    schema = {
        "type": "object",
        "$defs": {"page": {"type": "object", "properties": {"size": {"type": "integer", "default": 10}}}},
        "properties": {
            "page": {"$ref": "#/$defs/page"},
            "holdings": {
                "type": "array",
                "items": {"type": "object", "properties": {"weight": {"type": "number", "default": 1.0}}},
            },
            "sort": {"type": "string", "default": "desc"},
        },
    }
    args = {"page": {}, "holdings": [{"fundCode": "000001"}, {"fundCode": "000002", "weight": 0.5}]}
    assert canonical_arguments(args, schema) == {
        "holdings": [{"fundCode": "000001", "weight": 1}, {"fundCode": "000002", "weight": 0.5}],
        "page": {"size": 10},
        "sort": "desc",
    }
    assert args == {"page": {}, "holdings": [{"fundCode": "000001"}, {"fundCode": "000002", "weight": 0.5}]}


def test_absent_parent_object_gets_no_nested_defaults():
    schema = {
        "type": "object",
        "properties": {"opt": {"type": "object", "properties": {"a": {"default": 1}}}},
    }
    assert canonical_arguments({}, schema) == {}


def test_explicit_null_is_not_replaced_by_default():
    schema = {"type": "object", "properties": {"size": {"default": 10}}}
    assert canonical_arguments({"size": None}, schema) == {"size": None}


def test_bools_stay_distinct_from_numbers():
    assert args_key({"a": True}) != args_key({"a": 1})
    assert args_key({"a": False}) != args_key({"a": 0})


def test_strings_are_untouched():
    composed, decomposed = "\u00e9", "e\u0301"
    assert args_key({"q": composed}) != args_key({"q": decomposed})
    assert args_key({"q": "a"}) != args_key({"q": "a "})


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_and_infinity_are_rejected_with_the_path(bad):
    with pytest.raises(InvalidValueError, match=r"arguments\.holdings\[1\]\.weight"):
        canonical_arguments({"holdings": [{"weight": 1}, {"weight": bad}]})


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ([1, 2], "expected a JSON object"),
        ("x", "expected a JSON object"),
        ({"a": {1: "x"}}, "not a string"),
        ({"a": {1, 2}}, "set is not a JSON value"),
        ({"a": b"raw"}, "bytes is not a JSON value"),
        ({"a": "\ud800"}, "lone surrogate"),
    ],
)
def test_non_json_arguments_are_rejected(args, fragment):
    with pytest.raises(InvalidValueError, match=fragment):
        canonical_arguments(args)


def test_none_means_no_arguments():
    assert canonical_arguments(None) == {}
    assert args_key(None) == args_key({})


def test_canonical_json_rfc8785_shape():
    value = {"b": [1, 2.5, None, True, False], "a": '中文\n"', "\U0001f600": 1, "\uffff": 2}
    # UTF-16 code-unit order puts the astral character (a surrogate pair, 0xD83D) before U+FFFF.
    assert canonical_json(value) == '{"a":"中文\\n\\"","b":[1,2.5,null,true,false],"😀":1,"\uffff":2}'


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (1.0, "1"),
        (-0.0, "0"),
        (1e-7, "1e-7"),
        (0.000001, "0.000001"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (1.2345678901234568e20, "123456789012345680000"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (-1.5, "-1.5"),
        (333333333.3333333, "333333333.3333333"),
        (0.000001234, "0.000001234"),
    ],
)
def test_number_form_matches_ecmascript(number, text):
    assert format_number(number) == text


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_number_form_round_trips(number):
    text = format_number(number)
    assert float(text) == number
    assert float(json.loads(text)) == number  # big integral floats print as integers, as ES6 does


@settings(max_examples=200)
@given(json_objects)
def test_canonical_json_is_stable_and_parses_back(args):
    canon = canonical_arguments(args)
    text = canonical_json(canon)
    assert json.loads(text) == canon
    assert canonical_json(json.loads(text)) == text
    assert canonical_arguments(canon) == canon


def test_key_is_truncated_sha256_hex():
    key = args_key({"fundCode": "000001"})
    assert len(key) == ARGS_KEY_HEX_CHARS
    int(key, 16)


@settings(max_examples=300)
@given(
    json_objects
    | st.dictionaries(st.text(max_size=3), st.floats(min_value=-1e-3, max_value=1e-3), max_size=4)
)
def test_fast_path_text_equals_the_exact_writer(args):
    canon = canonicalize(args)
    assert canon.json == canonical_json(canon.arguments)
    assert canon.key == args_key(args)


def test_credentials_are_redacted_and_do_not_change_the_key():
    schema = {"type": "object", "properties": {"api_key": {"type": "string", "default": "demo"}}}
    one = canonicalize({"q": "AAPL", "api_key": "k-1", "opts": [{"Cookie": "c=1", "n": 2}]}, schema)
    two = canonicalize({"q": "AAPL", "api_key": "k-2", "opts": [{"Cookie": "c=9", "n": 2}]}, schema)
    assert one.key == two.key
    assert one.arguments == {"api_key": "[REDACTED]", "opts": [{"Cookie": "[REDACTED]", "n": 2}], "q": "AAPL"}
    assert canonicalize({"q": "AAPL"}, schema).arguments["api_key"] == "[REDACTED]"  # the default too
    assert canonicalize({"token": 5}).arguments == {"token": 5}  # only strings are credentials
