"""The one OpenAI-compatible chat client (agent, judge, synthesis) against a loopback server: Retry-After,
backoff with deterministic jitter, bounded retries, no failure cached as an answer, concurrency."""

from __future__ import annotations

import json
import socket
import sqlite3
import threading
from email.utils import formatdate
from typing import Any

import pytest

from finmcp.evaluator.inputs.fintoolbench_jsonl import result_prediction
from finmcp.evaluator.inputs.model import PredictionSet
from finmcp.evaluator.inputs.pairing import pair_up
from finmcp.evaluator.inputs.references import parse_references
from finmcp.evaluator.llm import ChatClient, LlmError, RetryPolicy, parse_retry_after
from finmcp.evaluator.metrics.judges import JudgeCache, LLMJudge
from finmcp.evaluator.metrics.options import EvalOptions
from finmcp.evaluator.reports.pipeline import run_fintoolbench
from finmcp.evaluator.synth.llm import PromptReplies
from tests.evaluator.fake_llm import Reply, completion

NOW = 1_750_000_000.0
"""The injected wall clock (Unix time) HTTP-date Retry-After values are measured against."""


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def client(url: str, waits: list[float], retry: RetryPolicy | None = None, **kw: Any) -> ChatClient:
    """A client that records the waits it would sleep instead of sleeping."""
    return ChatClient(
        url, "m", api_key_env=None, retry=retry or RetryPolicy(), sleep=waits.append, clock=lambda: NOW, **kw
    )


def scripted(*replies: Reply):
    """A script answering the n-th request with ``replies[n-1]`` (the last one from then on)."""
    return lambda body, n: replies[min(n, len(replies)) - 1]


def test_retry_after_seconds_then_503_then_200(fake_openai) -> None:
    server = fake_openai(
        scripted(
            (429, {"error": "slow down"}, 0.0, {"Retry-After": "3"}),
            (503, {"error": "busy"}, 0.0),
            (200, completion("hello"), 0.0),
        )
    )
    waits: list[float] = []
    chat = client(server.url, waits, RetryPolicy(retries=3, backoff=0.5, jitter=0.1))
    assert chat.chat(user("hi"))["content"] == "hello"
    assert len(server.requests) == 3 and chat.requests == 3
    assert server.requests[0] == server.requests[1] == server.requests[2]  # the same body every time
    assert waits[0] == 3.0  # the server's Retry-After, not the backoff
    assert 1.0 <= waits[1] <= 1.1  # retry 2 without a hint: backoff * 2, stretched by <= 10 % jitter
    chat.close()


def test_retry_after_http_date_and_too_long(fake_openai) -> None:
    date = formatdate(NOW + 7, usegmt=True)
    server = fake_openai(
        scripted((503, {"error": "maintenance"}, 0.0, {"Retry-After": date}), (200, completion("ok"), 0.0))
    )
    waits: list[float] = []
    assert client(server.url, waits).chat(user("x"))["content"] == "ok"
    assert waits == [7.0]
    far = fake_openai(scripted((429, {"error": "quota"}, 0.0, {"Retry-After": "3600"})))
    waits.clear()
    with pytest.raises(LlmError, match="retry after 3600 s"):
        client(far.url, waits, RetryPolicy(retries=5, max_retry_after=60)).chat(user("x"))
    assert len(far.requests) == 1 and waits == []  # no wait of an hour, no further attempt


def test_parse_retry_after() -> None:
    assert parse_retry_after("5", NOW) == 5.0
    assert parse_retry_after(" 0.25 ", NOW) == 0.25
    assert parse_retry_after(formatdate(NOW + 30, usegmt=True), NOW) == 30.0
    assert parse_retry_after(formatdate(NOW - 30, usegmt=True), NOW) == 0.0  # already past
    assert parse_retry_after("soon", NOW) is None
    assert parse_retry_after(None, NOW) is None


def test_backoff_is_exponential_capped_and_its_jitter_deterministic() -> None:
    policy = RetryPolicy(backoff=0.5, max_backoff=2.0, jitter=0.2)
    payload = b'{"model": "m"}'
    waits = [policy.wait(n, payload) for n in (1, 2, 3, 4, 5)]
    assert waits == [policy.wait(n, payload) for n in (1, 2, 3, 4, 5)]  # the same request waits the same
    for wait, base in zip(waits, (0.5, 1.0, 2.0, 2.0, 2.0), strict=True):
        assert base <= wait <= base * 1.2
    assert [policy.wait(n, b'{"model": "other"}') for n in (1, 2)] != waits[:2]  # other requests spread
    no_jitter = RetryPolicy(backoff=0.5, jitter=0.0)
    assert [no_jitter.wait(n, payload) for n in (1, 2, 3)] == [0.5, 1.0, 2.0]


def test_connection_errors_are_retried_then_raised() -> None:
    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    waits: list[float] = []
    chat = client(f"http://127.0.0.1:{port}/v1", waits, RetryPolicy(retries=2))
    with pytest.raises(LlmError, match="no completion after 3 attempt"):
        chat.chat(user("x"))
    assert chat.requests == 3 and len(waits) == 2


def test_client_errors_and_garbage_are_not_retried(fake_openai) -> None:
    server = fake_openai(
        lambda body, n: (404 if body["messages"][0]["content"] == "a" else 200, {"x": 1}, 0.0)
    )
    waits: list[float] = []
    chat = client(server.url, waits, RetryPolicy(retries=3))
    with pytest.raises(LlmError, match="HTTP 404"):
        chat.chat(user("a"))
    with pytest.raises(LlmError, match="not a chat completion"):
        chat.chat(user("b"))
    assert len(server.requests) == 2 and waits == []


def test_request_body_and_url() -> None:
    chat = ChatClient("http://127.0.0.1:9/v1/", "m", temperature=0, max_tokens=5)
    assert chat.url == "http://127.0.0.1:9/v1/chat/completions"
    tool = {"type": "function", "function": {"name": "f"}}
    assert list(chat.body(user("q"), [tool])) == [
        "model",
        "messages",
        "tools",
        "tool_choice",
        "temperature",
        "max_tokens",
    ]
    assert chat.body(user("q")) == {"model": "m", "messages": user("q"), "temperature": 0, "max_tokens": 5}
    assert ChatClient("http://h/v1/chat/completions", "m").url == "http://h/v1/chat/completions"
    with pytest.raises(LlmError, match="--judge-url 'h:1'"):
        ChatClient("h:1", "m", url_label="--judge-url")
    chat.close()


def test_chat_many_has_several_requests_in_flight(fake_openai) -> None:
    barrier = threading.Barrier(4, timeout=20)

    def script(body: dict[str, Any], n: int) -> Reply:
        try:
            barrier.wait()  # every request waits here until four are in flight at once
        except threading.BrokenBarrierError:
            return 500, {"error": "requests came one at a time"}, 0.0
        return 200, completion(body["messages"][0]["content"].upper()), 0.0

    server = fake_openai(script)
    chat = client(server.url, [], RetryPolicy(retries=0))
    replies = chat.chat_many([user(t) for t in ("a", "b", "c", "d")], concurrency=4)
    assert [r["content"] if isinstance(r, dict) else r for r in replies] == ["A", "B", "C", "D"]  # in order
    assert server.max_in_flight == 4


def test_chat_many_returns_failures_in_place(fake_openai) -> None:
    server = fake_openai(
        lambda body, n: (400 if body["messages"][0]["content"] == "bad" else 200, completion("ok"), 0.0)
    )
    replies = client(server.url, []).chat_many([user("good"), user("bad"), user("good")], concurrency=2)
    assert isinstance(replies[0], dict) and isinstance(replies[2], dict)
    assert replies[0]["content"] == replies[2]["content"] == "ok"
    assert isinstance(replies[1], LlmError)


# ------------------------------------------------------------------ the three users


def test_judge_prefetch_is_concurrent_and_caches_only_answers(fake_openai, tmp_path) -> None:
    barrier = threading.Barrier(3, timeout=20)

    def script(body: dict[str, Any], n: int) -> Reply:
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            return 500, {"error": "sequential"}, 0.0
        if "Tool: broken" in body["messages"][0]["content"]:
            return 503, {"error": "down"}, 0.0
        return 200, completion('{"match": "yes", "reason": "fits"}'), 0.0

    server = fake_openai(script)
    chat = client(server.url, [], RetryPolicy(retries=0), temperature=0.8, max_tokens=500)
    cache_path = tmp_path / "judge.sqlite"
    judge = LLMJudge(chat, JudgeCache(cache_path), concurrency=3)
    asks = [("intent", {"question": "q", "tool_name": name, "tag": "informational"}, 0) for name in "ab"]
    asks.append(("intent", {"question": "q", "tool_name": "broken", "tag": "informational"}, 0))
    judge.prefetch(asks)
    assert server.max_in_flight == 3 and len(server.requests) == 3
    with sqlite3.connect(cache_path) as con:
        assert con.execute("SELECT COUNT(*) FROM judgments").fetchone()[0] == 2  # the failure is not stored
    barrier.reset()
    assert judge.ask(*asks[0]).startswith('{"match": "yes"')
    assert len(server.requests) == 3  # answered from the cache


def test_pipeline_prefetch_gives_the_sequential_numbers(fake_openai) -> None:
    """An LLM judge grades a FinToolBench run from replies asked up front; the numbers are those of a
    judge asked one judgment at a time."""

    def script(body: dict[str, Any], n: int) -> Reply:
        prompt = body["messages"][0]["content"]
        if prompt.startswith("You grade"):
            score = 1 if "Model answer: NAV is 1.234" in prompt else 0
            return (
                200,
                completion(json.dumps({"score": score, "label": "correct" if score else "wrong"})),
                0.0,
            )
        return 200, completion(json.dumps({"match": "yes" if "Tool: nav" in prompt else "no"})), 0.0

    questions = [
        {"id": "q1", "question": "NAV of fund 161128 today?", "answer": "1.234", "select_tools": ["nav"]},
        {"id": "q2", "question": "Buy A or B?", "answer": "A", "select_tools": ["nav", "pick"]},
    ]
    results = {
        "q1": {
            "execution_result": "NAV is 1.234",
            "tool_calls": [{"step": 1, "tool_name": "nav", "output": "1.234"}],
        },
        "q2": {"execution_result": "B", "tool_calls": [{"step": 1, "tool_name": "pick", "output": "B"}]},
    }
    refs = parse_references(questions)
    preds = PredictionSet(
        {k: [result_prediction(k, {"id": k, **v}, [])] for k, v in results.items()},
        "fintoolbench_result",
        "x",
    )
    meta = {
        name: {
            "timeliness": "daily",
            "intent_type": "informational",
            "regulatory_domains": ["fund"],
            "description": name,
        }
        for name in ("nav", "pick")
    }
    pairs = pair_up(refs, preds).pairs

    class OneAtATime:  # the same judge without prefetch
        def __init__(self, inner: LLMJudge) -> None:
            self.inner, self.name = inner, inner.name

        def ask(self, kind: str, fields: dict[str, Any], repeat: int) -> str:
            return self.inner.ask(kind, fields, repeat)

    server = fake_openai(script)
    up_front = run_fintoolbench(
        pairs, EvalOptions(bootstrap=0, judge=LLMJudge(client(server.url, [])), tool_meta=meta)
    )
    asked_up_front = len(server.requests)
    one_by_one = OneAtATime(LLMJudge(client(server.url, [])))
    sequential = run_fintoolbench(pairs, EvalOptions(bootstrap=0, judge=one_by_one, tool_meta=meta))
    assert up_front == sequential
    assert asked_up_front == len(server.requests) - asked_up_front  # every judgment asked once either way
    assert up_front["fintoolbench"]["metrics"]["cap"]["soft_score"] == 0.5


def test_synthesis_replies_do_not_cache_failures(fake_openai) -> None:
    server = fake_openai(scripted((500, {"error": "down"}, 0.0), (200, completion("yes"), 0.0)))
    replies = PromptReplies(client(server.url, [], RetryPolicy(retries=0), temperature=0))
    assert replies.ask("Can A feed B?") == ""  # failed: no answer, and nothing cached
    assert replies.cache == {}
    assert replies.ask("Can A feed B?") == "yes"
    assert replies.ask("Can A feed B?") == "yes"
    assert len(server.requests) == 2  # the answer came from the cache the third time
    assert server.requests[0]["temperature"] == 0
