"""Redaction of secrets from stored copies."""

from __future__ import annotations

from recordings.redact import REDACTED, redact_headers, redact_text, redact_value


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
