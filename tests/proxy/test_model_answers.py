"""Reading model answers (``proxy/model_answers.py``): streams assembled, usage only as reported, errors named."""

from __future__ import annotations

import json
from typing import Any

from finmcp.proxy.cli import main
from finmcp.proxy.model_answers import api_of, summarize


def _sse(*events: Any) -> bytes:
    return b"".join(
        b"data: " + (e if isinstance(e, bytes) else json.dumps(e).encode()) + b"\n\n" for e in events
    )


def test_chat_stream_with_parallel_tool_calls_is_assembled():
    base = {"id": "c", "model": "m"}
    body = _sse(
        {
            **base,
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {"index": 0, "id": "a", "function": {"name": "f", "arguments": '{"x"'}}
                        ]
                    },
                }
            ],
        },
        {
            **base,
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [{"index": 1, "id": "b", "function": {"name": "g", "arguments": "{}"}}]
                    },
                }
            ],
        },
        {
            **base,
            "choices": [
                {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]}}
            ],
        },
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        b"[DONE]",
    )
    s = summarize("chat", body, True, True)
    assert s.tool_calls == [
        {"id": "a", "name": "f", "arguments": '{"x": 1}'},
        {"id": "b", "name": "g", "arguments": "{}"},
    ]
    assert s.text is None and s.finish_reason == "tool_calls" and s.model == "m"
    assert s.input_tokens is None and "include_usage" in (s.usage_note or "")
    assert s.answer["choices"][0]["message"]["tool_calls"][1]["function"]["name"] == "g"


def test_a_cut_stream_says_so_and_keeps_what_arrived():
    s = summarize(
        "messages",
        _sse(
            {"type": "message_start", "message": {"model": "claude", "usage": {"input_tokens": 5}}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hal"}},
        ),
        True,
        False,
    )
    assert s.text == "Hal" and s.input_tokens == 5 and s.output_tokens is None and s.model == "claude"
    r = summarize("responses", _sse({"type": "response.output_text.delta", "delta": "He"}), True, False)
    assert r.text == "He" and r.usage_note == "stream cut before the upstream reported usage"


def test_errors_and_malformed_answers_are_named_never_counted():
    e = summarize(
        "chat",
        json.dumps({"error": {"message": "rate limited", "type": "rate_limit_error"}}).encode(),
        False,
        True,
    )
    assert e.error == "rate limited" and e.input_tokens is None and e.usage_note
    m = summarize("responses", b'{"id": ', False, True)
    assert m.raw == '{"id": ' and m.error and m.error.startswith("malformed model answer")
    a = summarize(
        "messages",
        _sse({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        True,
        True,
    )
    assert a.error == "Overloaded" and a.text is None
    assert api_of("/v1/chat/completions/") == "chat" and api_of("/v1/embeddings") == "other"


def test_flags_that_cannot_work_are_refused_at_start(capsys):
    assert (
        main(
            [
                "--upstream-cmd",
                "true",
                "--transport",
                "stdio",
                "--db",
                "x.sqlite",
                "--llm-upstream",
                "http://127.0.0.1:1",
            ]
        )
        == 2
    )
    assert "--llm-upstream needs --transport http" in capsys.readouterr().err
    assert (
        main(["--upstream", "http://127.0.0.1:9/mcp", "--db", "x.sqlite", "--llm-upstream", "ftp://host"])
        == 2
    )
    assert "expected http(s)://HOST" in capsys.readouterr().err
