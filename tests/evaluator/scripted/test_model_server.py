"""``finmcp-eval model`` as a real process: both APIs, JSON and SSE, path tags and headers, and errors."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from finmcp.evaluator.benchmarks import load_benchmark
from finmcp.recordings.plumbing.launch import FinmcpProcess

pytestmark = pytest.mark.slow  # a real finmcp-eval model process

SAMPLE = "sim-multi-0001"


@pytest.fixture(scope="module")
def model() -> Iterator[FinmcpProcess]:
    with FinmcpProcess(
        "finmcp-eval", ["model", "--bench", "finmcp-sim", "--host", "127.0.0.1", "--port", "0"], timeout=60
    ) as proc:
        yield proc


def post(
    url: str, body: Any, headers: dict[str, str] | None = None, raw: bytes | None = None
) -> tuple[int, str]:
    data = raw if raw is not None else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, headers={"content-type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def events(text: str) -> list[tuple[str | None, Any]]:
    """(event name, data) of each SSE event; data ``[DONE]`` stays a string."""
    out = []
    for block in text.strip().split("\n\n"):
        name, data = None, None
        for line in block.splitlines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = line[6:] if line[6:] == "[DONE]" else json.loads(line[6:])
        out.append((name, data))
    return out


def user() -> str:
    return next(r for r in load_benchmark("finmcp-sim") if r.id == SAMPLE).turns[0].user


def test_chat_completions_json_and_stream(model: FinmcpProcess) -> None:
    url = f"{model.base}/r/run1/s/{SAMPLE}/t/0/v1/chat/completions"
    body = {"model": "m", "messages": [{"role": "user", "content": user()}]}
    status, text = post(url, body)
    reply = json.loads(text)
    calls = reply["choices"][0]["message"]["tool_calls"]
    assert status == 200 and reply["choices"][0]["finish_reason"] == "tool_calls" and len(calls) == 3
    usage = reply["usage"]
    assert (
        usage["prompt_tokens"] > 0
        and usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    )
    status, text = post(url, {**body, "stream": True, "stream_options": {"include_usage": True}})
    chunks = [data for _, data in events(text)]
    assert status == 200 and chunks[-1] == "[DONE]" and chunks[-2]["usage"] == usage
    streamed: dict[int, dict[str, str]] = {}
    for chunk in chunks[:-2]:
        for delta in chunk["choices"][0]["delta"].get("tool_calls") or []:
            entry = streamed.setdefault(delta["index"], {"id": "", "name": "", "arguments": ""})
            entry["id"] += delta.get("id", "")
            entry["name"] += delta.get("function", {}).get("name", "")
            entry["arguments"] += delta.get("function", {}).get("arguments", "")
    assert [streamed[i] for i in range(3)] == [{"id": c["id"], **c["function"]} for c in calls]
    assert chunks[-3]["choices"][0]["finish_reason"] == "tool_calls"


def test_responses_stream_and_headers_tags(model: FinmcpProcess) -> None:
    headers = {"X-Finmcp-Run": "run1", "X-Finmcp-Sample": SAMPLE, "X-Finmcp-Turn": "0"}
    status, text = post(f"{model.base}/v1/responses", {"input": "anything", "stream": True}, headers)
    got = events(text)
    kinds = [name for name, _ in got]
    assert (
        status == 200
        and kinds[:2] == ["response.created", "response.in_progress"]
        and kinds[-1] == "response.completed"
    )
    assert [data["sequence_number"] for _, data in got] == list(range(len(got)))
    final = got[-1][1]["response"]
    assert [item["type"] for item in final["output"]] == ["function_call"] * 3 and final["usage"][
        "output_tokens"
    ] > 0
    deltas = "".join(
        d["delta"] for n, d in got if n == "response.function_call_arguments.delta" and d["output_index"] == 0
    )
    assert deltas == final["output"][0]["arguments"]


def test_bad_requests_get_openai_style_errors(model: FinmcpProcess) -> None:
    base = model.base
    cases = [
        (f"{base}/r/x/s/{SAMPLE}/t/0/v1/chat/completions", None, b"{not json", 400, "invalid_json"),
        (
            f"{base}/r/x/s/nope/t/0/v1/chat/completions",
            {"messages": [{"role": "user", "content": "x"}]},
            None,
            404,
            "unknown_sample",
        ),
        (f"{base}/r/x/s/{SAMPLE}/t/7/v1/responses", {"input": "x"}, None, 404, "unknown_turn"),
        (f"{base}/r/x/s/{SAMPLE}/t/zero/v1/responses", {"input": "x"}, None, 400, "invalid_tags"),
        (
            f"{base}/v1/chat/completions",
            {"messages": [{"role": "user", "content": "no such question"}]},
            None,
            404,
            "unknown_task",
        ),
        (f"{base}/v2/embeddings", {}, None, 404, "unknown_path"),
        (f"{base}/v1/chat/completions", {"messages": "x"}, None, 400, "invalid_messages"),
    ]
    for url, body, raw, status, code in cases:
        got_status, text = post(url, body, raw=raw)
        error = json.loads(text)["error"]
        assert (got_status, error["code"]) == (status, code), (url, text)
        assert error["message"] and error["type"] == "invalid_request_error"
