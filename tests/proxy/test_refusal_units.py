"""The refusal rules in process: which stdio lines the proxy answers itself, and what a cut body holds."""

from __future__ import annotations

import json

import pytest

from finmcp.proxy.body_refusal import PREFIX_BYTES, Drain, read_prefix
from finmcp.proxy.jsonrpc import parse_body
from finmcp.proxy.stdio_refusals import INVALID_REQUEST, PARSE_ERROR, refusal


def _answer(line: bytes):
    answer = refusal(line, parse_body(line))
    return None if answer is None else json.loads(answer)


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        b'{"jsonrpc":"2.0","id":1,"result":{}}',  # the client answering a server request
        b'[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]',
        b'{"jsonrpc":"2.0","id":1,"method":"x","params":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    ],
    ids=["request", "notification", "response", "batch", "too deep to parse"],
)
def test_messages_are_forwarded(line):
    assert _answer(line) is None


def test_a_batch_with_a_bad_member_is_refused_whole_and_every_request_in_it_answered():
    line = b'[{"jsonrpc":"2.0","id":1,"method":"ping"},7,{"jsonrpc":"2.0","method":"notifications/x"}]'
    answers = _answer(line)
    assert [(a["id"], a["error"]["code"]) for a in answers] == [(1, INVALID_REQUEST), (None, INVALID_REQUEST)]
    assert "batch member 1 is a number" in answers[1]["error"]["message"]


def test_invalid_utf8_without_a_readable_id_is_answered_with_null():
    answer = _answer(b'{"jsonrpc":"2.0","id":\xff1,"method":"ping"}')
    assert answer["id"] is None and answer["error"]["code"] == PARSE_ERROR
    assert "byte 0xff at offset 22" in answer["error"]["message"]


def test_null_and_scalars_are_invalid_requests():
    for line in (b"null", b"true", b"1.5", b'"s"', b"{}"):
        answer = _answer(line)
        assert answer["error"]["code"] == INVALID_REQUEST and answer["id"] is None, line


def test_the_prefix_reader_keeps_only_whole_members():
    head = b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"T","_meta":{"k":[1,2]},"arguments":{"a":"'
    assert read_prefix(head + b"x" * 100) == {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "T", "_meta": {"k": [1, 2]}},
    }
    assert read_prefix(b'{"id":"cut') == {}
    assert read_prefix(b"not json") == {}


def test_a_drain_keeps_its_prefix_counts_every_byte_and_drops_what_follows():
    drain = Drain(b"/mcp", {}, total=PREFIX_BYTES * 3, remaining=PREFIX_BYTES * 3)
    drain.feed(b"a" * PREFIX_BYTES * 2)
    assert not drain.done and len(drain.prefix) == PREFIX_BYTES
    drain.feed(b"b" * (PREFIX_BYTES + 10))  # 10 bytes past the body: the next request's, dropped
    assert drain.done and drain.remaining == 0
