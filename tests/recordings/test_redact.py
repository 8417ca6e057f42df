"""Redaction of secrets from stored copies."""

from __future__ import annotations

import json

import pytest

from finmcp.recordings.redact import (
    REDACTED,
    SECRET_KEYS,
    might_hold_secrets,
    redact_headers,
    redact_text,
    redact_value,
)


def test_secret_members_are_redacted_in_place():
    body = '{"params": {"arguments": {"symbol": "AAPL", "apikey": "AB12CD34", "Token" :  "t\\"x"}}}'
    assert redact_text(body) == (
        '{"params": {"arguments": {"symbol": "AAPL", "apikey": "[REDACTED]", "Token" :  "[REDACTED]"}}}'
    )


def test_bodies_without_secrets_are_unchanged():
    body = '{"_meta": {"progressToken": "abc"}, "text": "Bearer bonds and bearer instruments", "tokens": 5}'
    assert redact_text(body) == body


def test_bearer_credentials_are_redacted_anywhere():
    text = "header was Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig123 end"
    assert redact_text(text) == f"header was Authorization: Bearer {REDACTED} end"


def test_headers_keep_order_and_duplicates():
    headers = [
        (b"Cookie", b"a=1"),
        (b"Accept", b"*/*"),
        (b"X-Api-Key", b"k"),
        (b"Accept", b"text/event-stream"),
    ]
    assert redact_headers(headers) == [
        ["Cookie", REDACTED],
        ["Accept", "*/*"],
        ["X-Api-Key", REDACTED],
        ["Accept", "text/event-stream"],
    ]
    assert redact_headers({"authorization": "Bearer x", "mcp-session-id": "s1"}) == [
        ["authorization", REDACTED],
        ["mcp-session-id", "s1"],
    ]


def test_argument_values_under_secret_keys_are_replaced():
    args = {"symbol": "600000", "api_key": "k", "nested": [{"cookie": "c", "x": 1}]}
    assert redact_value(args) == {
        "symbol": "600000",
        "api_key": REDACTED,
        "nested": [{"cookie": REDACTED, "x": 1}],
    }
    assert args["api_key"] == "k"


@pytest.mark.parametrize("key", sorted(SECRET_KEYS))
@pytest.mark.parametrize("spelling", [str.lower, str.upper, str.title])
def test_the_fast_precheck_lets_every_secret_key_through(key, spelling):
    body = '{"params":{"arguments":{"' + spelling(key) + '" : "s3cret-value"}}}'
    assert might_hold_secrets(body)
    assert "s3cret-value" not in redact_text(body)


def test_the_fast_precheck_skips_ordinary_bodies():
    body = '{"jsonrpc":"2.0","id":1,"params":{"name":"SearchFunds","arguments":{"keyword":"红利"}}}'
    assert not might_hold_secrets(body)
    assert might_hold_secrets('{"note":"Authorization: BEARER abcdefgh12345678"}')


def test_keys_that_merely_end_like_a_secret_skip_the_expressions():
    body = '{"_meta":{"io.finmcp/args_key":"93753ae8","progressToken":"p1"},"sortKey":"nav"}'
    assert not might_hold_secrets(body)


@pytest.mark.parametrize(
    "headers",
    [
        [(b":path", b"/r/x/mcp"), (b"Authorization", b"Bearer t0ken-123456789"), (b"x-n", "é".encode())],
        [("Cookie", "a=b"), ("accept", "application/json")],
        {"X-Api-Key": "k", "user-agent": "ua"},
        [(b"x-list", ["not", "hashable"])],
        [],
    ],
)
def test_stored_header_json_is_the_redacted_list(headers):
    from finmcp.recordings.results import dumps
    from finmcp.recordings.trace_rows import headers_json

    assert headers_json(headers) == dumps(redact_headers(headers))


@pytest.mark.parametrize(
    "body",
    [
        '{"params":{"arguments":{"\\u0061piKey":"s3cret-value","q":"x"}}}',
        '{"params":{"arguments":{"api\\u005fkey" : "s3cret-value"}}}',
        '{"params":{"arguments":{"Token":"s3cr\\u0065t-value"}}}',
        '{"params":{"arguments":{"note":"\\u0042earer s3cret-value-123456789"}}}',
        '{"params":{"arguments":{"note":"Bearer\\u0020s3cret-value-123456789"}}}',
    ],
)
def test_secrets_spelled_with_json_escapes_are_redacted_on_the_parsed_message(body):
    stored = redact_text(body)
    assert "s3cret" not in stored and "s3cr" not in stored
    assert "s3cret" not in json.dumps(json.loads(stored), ensure_ascii=False)
    original, cleaned = json.loads(body), json.loads(stored)
    assert cleaned["params"]["arguments"].keys() == original["params"]["arguments"].keys()


@pytest.mark.parametrize(
    "body",
    [
        '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"\\u7ea2\\u5229 \\u0041BC"}]}}',
        '{"params":{"arguments":{"keyword":"\\u0061pple","tokens":5}}}',
        '{"text": "\\\\u0061piKey is not an escape here",   "x": 1}',
        '{"broken json \\u0061piKey',
    ],
)
def test_escaped_bodies_without_secrets_are_stored_byte_for_byte(body):
    assert redact_text(body) == body


def test_escaped_secret_with_a_lone_surrogate_stays_encodable():
    stored = redact_text('{"\\u0061piKey":"k","s":"\\ud800"}')
    assert "[REDACTED]" in stored
    stored.encode("utf-8")
    assert json.loads(stored)["s"] == "\ud800"
