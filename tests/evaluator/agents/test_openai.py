"""The openai agent against a fake OpenAI-compatible endpoint (loopback) that answers with scripted
tool calls: calls go through proxy and server, results and gold history reach the model, retries,
timeouts, caps, retrieval, and per-sample endpoint errors."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from finmcp.evaluator.agents.base import ToolOutcome, TurnContext
from finmcp.evaluator.agents.bm25 import ToolRetriever, tokenize
from finmcp.evaluator.agents.history import RecordedOutputs, gold_messages
from finmcp.evaluator.agents.openai_agent import OpenAIAgent
from finmcp.evaluator.cli import main
from finmcp.evaluator.harness.runner import RunConfig, run_agent
from finmcp.evaluator.harness.scoring import score_run
from finmcp.evaluator.harness.setup import load_bench
from finmcp.evaluator.harness.spawn import SpawnConfig, Stack
from finmcp.evaluator.harness.state import RunState
from finmcp.evaluator.llm import ChatClient, LlmError, RetryPolicy
from finmcp.tool_specs.inventory import load_inventory
from tests.evaluator.fake_llm import Reply, completion


def tool_call(i: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def gold_replayer(refs: list[Any], fail_on: set[str] | None = None) -> Callable[[dict[str, Any], int], Reply]:
    """A scripted model that issues the gold groups of the current turn, then answers."""
    turns = {(r.turns[0].user, k): r.turns[k] for r in refs for k in range(len(r.turns))}

    def script(body: dict[str, Any], n: int) -> Reply:
        messages = body["messages"]
        users = [m for m in messages if m["role"] == "user"]
        if fail_on and users[0]["content"] in fail_on:
            return 400, {"error": {"message": "model refused this sample"}}, 0.0
        last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
        done = sum(1 for m in messages[last_user:] if m["role"] == "assistant" and m.get("tool_calls"))
        turn = turns[(users[0]["content"], len(users) - 1)]
        if done < len(turn.calls):
            calls = [tool_call(i, c.tool, c.arguments) for i, c in enumerate(turn.calls[done])]
            return 200, completion(tool_calls=calls), 0.0
        return 200, completion(content=turn.assistant or "ok"), 0.0

    return script


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory):
    return load_bench("finmcp-sim", tmp_path_factory.mktemp("bench"), limit=24)


@pytest.mark.slow
def test_openai_agent_through_proxy_with_gold_history(bench, tmp_path: Path, fake_openai) -> None:
    fake = fake_openai(gold_replayer(bench.refs))
    db, state = tmp_path / "runs.sqlite", tmp_path / "state.jsonl"
    outputs = RecordedOutputs(str(bench.recordings), bench.inventory)
    with Stack(SpawnConfig(db=db, recordings=bench.recordings, miss="strict")) as stack:
        agent = OpenAIAgent(ChatClient(fake.url, "scripted", api_key_env=None))
        config = RunConfig("llm", stack.proxy_base, state, db, concurrency=4, progress=False)
        summary = asyncio.run(run_agent(bench.refs, agent, config, outputs))
        asyncio.run(agent.aclose())
    assert summary.done == len(bench.refs) and not summary.errors
    # the calls reached the server through the proxy, tagged
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT sample_id, tool, status FROM calls WHERE run_id = 'llm'").fetchall()
    assert len(rows) == sum(r.call_count for r in bench.refs)
    assert {s for _, _, s in rows} == {"ok"}
    report = score_run(
        bench.refs, db, "llm", RunState(state).records("llm"), bench.inventory, bootstrap=0
    ).to_dict()
    assert report["official"]["overall"]["macro_F1"] == 1.0
    assert report["headline"]["paper.EMR"]["value"] == 1.0
    assert all(len(r["tools"]) == 65 and r["model"] == "scripted" for r in fake.requests)
    # results flow back: each tool message after a step is the server's (recorded) output
    flowed = set()
    for request in fake.requests:
        msgs = request["messages"]
        last_user = max(i for i, m in enumerate(msgs) if m["role"] == "user")
        by_id = {}
        for i, m in enumerate(msgs[last_user:]):
            for tc in m.get("tool_calls") or []:  # ids repeat across steps: map as we go
                by_id[tc["id"]] = tc["function"]
            if m["role"] == "tool":
                fn = by_id[m["tool_call_id"]]
                assert m["content"] == outputs(fn["name"], json.loads(fn["arguments"]))
                assert m["content"]
                flowed.add((msgs[0]["content"], last_user, i))  # later requests repeat earlier steps
    assert len(flowed) == sum(r.call_count for r in bench.refs)
    # multi-turn: the first request of turn k carries exactly the gold prefix of turns 0..k-1
    multi = [r for r in bench.refs if len(r.turns) > 2 and any(t.calls for t in r.turns[:-1])]
    assert multi
    firsts = {}
    for request in fake.requests:
        msgs = request["messages"]
        if msgs[-1]["role"] == "user":
            firsts[(msgs[0]["content"], sum(m["role"] == "user" for m in msgs) - 1)] = msgs
    checked = 0
    for ref in multi:
        for k in range(1, len(ref.turns)):
            assert firsts[(ref.turns[0].user, k)] == gold_messages(ref, k, outputs)
            checked += 1
    assert checked >= 3
    outputs.close()


def test_gold_history_shape(bench) -> None:
    ref = next(r for r in bench.refs if len(r.turns) > 2 and r.turns[0].calls)
    messages = gold_messages(ref, 1, lambda tool, args: f"out:{tool}")
    first = ref.turns[0]
    assert messages[0] == {"role": "user", "content": first.user}
    assistants = [m for m in messages if m["role"] == "assistant" and m.get("tool_calls")]
    assert [[tc["function"]["name"] for tc in m["tool_calls"]] for m in assistants] == [
        [c.tool for c in g] for g in first.calls
    ]
    tools = [m for m in messages if m["role"] == "tool"]
    assert [m["content"] for m in tools] == [f"out:{c.tool}" for g in first.calls for c in g]
    assert messages[-2] == {"role": "assistant", "content": first.assistant}
    assert messages[-1] == {"role": "user", "content": ref.turns[1].user}
    assert gold_messages(ref, 0) == [{"role": "user", "content": first.user}]


def test_recorded_outputs_are_memoised_per_call(bench) -> None:
    outputs = RecordedOutputs(str(bench.recordings), bench.inventory)
    calls = [c for ref in bench.refs for turn in ref.turns for group in turn.calls for c in group][:8]
    first = [outputs(c.tool, c.arguments) for c in calls]
    assert len(calls) == 8 and all(isinstance(text, str) and text for text in first)
    outputs.close()  # a memoised answer no longer needs the store (a closed store answers None)
    assert [outputs(c.tool, dict(c.arguments)) for c in calls] == first
    assert outputs(calls[0].tool, {**calls[0].arguments, "unseen": 1}) is None


def test_retries_timeouts_and_errors(fake_openai) -> None:
    def script(body: dict[str, Any], n: int) -> Reply:
        mode = body["messages"][0]["content"]
        if mode == "flaky":
            return (503, {"error": "busy"}, 0.0) if n % 3 else (200, completion("fine"), 0.0)
        if mode == "slow":
            return 200, completion("late"), 1.0
        return 400, {"error": {"message": "bad request"}}, 0.0

    fake = fake_openai(script)
    waits: list[float] = []

    async def go() -> None:
        chat = ChatClient(
            fake.url, "m", api_key_env=None, timeout=0.3, retry=RetryPolicy(2), sleep=waits.append
        )
        try:
            message = await chat.complete([{"role": "user", "content": "flaky"}], [])
            assert message["content"] == "fine" and len(fake.requests) == 3
            with pytest.raises(LlmError, match="3 attempt.*timed out"):
                await chat.complete([{"role": "user", "content": "slow"}], [])
            assert len(fake.requests) == 6 and len(waits) == 4  # two waits per retried request
            with pytest.raises(LlmError, match="HTTP 400"):
                await chat.complete([{"role": "user", "content": "bad"}], [])
            assert len(fake.requests) == 7 and len(waits) == 4  # a client error is not retried
        finally:
            await chat.aclose()

    asyncio.run(go())
    with pytest.raises(LlmError, match="--llm-url"):
        ChatClient("127.0.0.1:8000", "m")


def test_api_key_only_from_the_environment(monkeypatch: pytest.MonkeyPatch, fake_openai) -> None:
    fake = fake_openai(lambda body, n: (200, completion("hi"), 0.0))
    monkeypatch.setenv("FINMCP_TEST_KEY", "sk-test-123")

    async def go(env: str | None) -> None:
        chat = ChatClient(fake.url, "m", api_key_env=env)
        await chat.complete([{"role": "user", "content": "x"}], [])
        await chat.aclose()

    asyncio.run(go("FINMCP_TEST_KEY"))
    asyncio.run(go(None))
    assert fake.headers[0].get("authorization") == "Bearer sk-test-123"
    assert "authorization" not in {k.lower() for k in fake.headers[1]}


class _StubSession:
    def __init__(self) -> None:
        self.calls_made = 0
        self.steps: list[list[str]] = []

    async def call_group(self, calls):
        self.calls_made += len(calls)
        self.steps.append([c.tool for c in calls])
        return [ToolOutcome(c, result={"content": [{"type": "text", "text": "r"}]}) for c in calls]


def _ctx(bench, session: _StubSession) -> TurnContext:
    tools = list(load_inventory("finmcp65").mcp_tools)
    ref = bench.refs[0]
    return TurnContext(ref, 0, 0, tools, gold_messages(ref, 0), session)


def test_call_and_step_caps(bench, fake_openai) -> None:
    def greedy(body: dict[str, Any], n: int) -> Reply:
        if not body.get("tools"):
            return 200, completion("final answer"), 0.0
        calls = [tool_call(i, "GetFundDiagnosis", {"fundNameOrCode": "000001"}) for i in range(2)]
        return 200, completion(tool_calls=calls), 0.0

    fake = fake_openai(greedy)
    session = _StubSession()
    agent = OpenAIAgent(ChatClient(fake.url, "m", api_key_env=None), max_calls=5)
    result = asyncio.run(agent.run_turn(_ctx(bench, session)))
    assert session.calls_made == 5 and session.steps[-1] == ["GetFundDiagnosis"]
    assert result.stopped == "max_calls" and result.answer == "final answer"
    assert fake.requests[-1].get("tools") is None
    session = _StubSession()
    agent = OpenAIAgent(ChatClient(fake.url, "m", api_key_env=None), max_calls=20, max_steps=2)
    result = asyncio.run(agent.run_turn(_ctx(bench, session)))
    assert session.steps == [["GetFundDiagnosis"] * 2] * 2 and result.stopped == "max_steps"


def test_bm25_top_k_and_tag_injection(bench, fake_openai) -> None:
    tools = list(load_inventory("finmcp65").mcp_tools)
    retriever = ToolRetriever(tools)
    for tool in tools[:: max(1, len(tools) // 10)]:
        top = [t["name"] for t in retriever.top(tool["name"] + " " + tool.get("description", ""), 3)]
        assert tool["name"] in top, tool["name"]
    assert tokenize("GetFundDiagnosis 基金诊断") == [
        "get", "fund", "diagnosis", "getfunddiagnosis", "基", "金", "诊", "断", "基金", "金诊", "诊断"
    ]  # fmt: skip
    fake = fake_openai(lambda body, n: (200, completion("no tools needed"), 0.0))
    agent = OpenAIAgent(ChatClient(fake.url, "m", api_key_env=None), top_k=5, inject_tags=True)
    asyncio.run(agent.run_turn(_ctx(bench, _StubSession())))
    sent = fake.requests[0]
    assert len(sent["tools"]) == 5
    assert all("financial_tags" in t["function"]["description"] for t in sent["tools"])
    assert sent["messages"][0]["role"] == "system"


@pytest.mark.slow
def test_endpoint_error_is_recorded_per_sample(
    bench, tmp_path: Path, capsys: pytest.CaptureFixture, fake_openai
) -> None:
    refs = bench.refs[:8]
    bad = refs[3]
    fake = fake_openai(gold_replayer(refs, fail_on={bad.turns[0].user}))
    db = tmp_path / "runs.sqlite"
    ids = [arg for r in refs for arg in ("--sample", r.id)]
    status = main(
        ["run", "--agent", "openai", "--llm-model", "scripted", "--llm-url", fake.url, "--spawn", "--run", "e",
         "--db", str(db), "--recordings", str(bench.recordings), "--llm-retries", "0", "--no-progress",
         "--report-dir", str(tmp_path / "rep"), "--bootstrap", "0", *ids]
    )  # fmt: skip
    assert status == 0
    printed = capsys.readouterr().out
    assert f"failed {bad.id}#0" in printed and "HTTP 400" in printed
    records = {r["sample"]: r for r in RunState(db.with_name("runs.sqlite.harness.jsonl")).records("e")}
    assert records[bad.id]["status"] == "error" and "model refused" in records[bad.id]["error"]
    assert all(records[r.id]["status"] == "done" for r in refs if r is not bad)
    report = json.loads((tmp_path / "rep" / "report.json").read_text("utf-8"))
    assert [d["id"] for d in report["coverage"]["dropped"]] == [bad.id]
    assert report["coverage"]["scored"] == 7 and report["official"]["overall"]["macro_F1"] == 1.0
