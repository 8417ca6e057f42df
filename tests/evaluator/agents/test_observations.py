"""A failed tool call reads the same to the agent and in the exports (issue 15, item 6).

The openai agent (scripted fake model on loopback) makes a good call, a call with missing arguments
(an ``isError`` result) and a call to an unknown tool through a spawned proxy and server. What the model
was shown must be, call for call, what the export of that benchmark's format holds: on FinMCP-Bench the
tool error's plain text (as the official inference keeps ``content[0].text``) and ``[error] ...`` for a
call that raised; on FinToolBench ``{"error": ...}`` for both (as its agent stores exceptions).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from finmcp.evaluator.agents.openai_agent import OpenAIAgent
from finmcp.evaluator.cli import main as eval_main
from finmcp.evaluator.harness.runner import RunConfig, run_agent
from finmcp.evaluator.harness.setup import load_bench
from finmcp.evaluator.harness.spawn import SpawnConfig, Stack
from finmcp.evaluator.llm import ChatClient
from finmcp.proxy.cli import main as proxy_main
from tests.evaluator.fake_llm import Reply, completion

pytestmark = pytest.mark.slow


def _script(calls: list[tuple[str, dict[str, Any]]]):
    def script(body: dict[str, Any], n: int) -> Reply:
        messages = body["messages"]
        last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
        if any(m["role"] == "tool" for m in messages[last_user:]):
            return 200, completion(content="done"), 0.0
        requested = [
            {"id": f"c{i}", "type": "function", "function": {"name": t, "arguments": json.dumps(a)}}
            for i, (t, a) in enumerate(calls)
        ]
        return 200, completion(tool_calls=requested), 0.0

    return script


def _run(bench, inventory: str, calls, tmp: Path, fake_openai) -> tuple[Path, list[str]]:
    """Run the agent on the first sample; returns the trace DB and the tool messages the model saw."""
    fake = fake_openai(_script(calls))
    db = tmp / "runs.sqlite"
    with Stack(SpawnConfig(db=db, inventory=inventory)) as stack:
        agent = OpenAIAgent(ChatClient(fake.url, "scripted", api_key_env=None))
        config = RunConfig("obs", stack.proxy_base, tmp / "state.jsonl", db, concurrency=1, progress=False)
        summary = asyncio.run(run_agent(bench.refs[:1], agent, config, None))
        asyncio.run(agent.aclose())
    assert summary.done == 1 and not summary.errors
    final = fake.requests[-1]["messages"]
    return db, [m["content"] for m in final if m["role"] == "tool"]


def test_finmcp_agent_and_exports_agree(tmp_path: Path, fake_openai) -> None:
    bench = load_bench("finmcp-sim", tmp_path / "bench", limit=3)
    gold = bench.refs[0].turns[0].calls[0][0]
    calls = [(gold.tool, gold.arguments), ("GetFundDiagnosis", {}), ("NoSuchTool", {})]
    db, seen = _run(bench, "finmcp65", calls, tmp_path, fake_openai)
    assert len(seen) == 3
    good, tool_error, raised = seen
    assert good and not good.startswith("[error]")
    assert "fundNameOrCode" in tool_error and not tool_error.startswith(
        ("[error]", "{")
    )  # plain isError text
    assert raised.startswith("[error] ") and "NoSuchTool" in raised  # a JSON-RPC error: the call raised
    out = tmp_path / "preds.json"
    assert (
        proxy_main(["export", "--db", str(db), "--run", "obs", "--format", "finmcp", "--output", str(out)])
        == 0
    )
    (record,) = json.loads(out.read_text("utf-8"))
    assert [m["content"] for m in record["messages_pred"] if m["role"] == "tool"] == seen
    official = tmp_path / "official.json"
    argv = ["export", "--bench", "finmcp-sim", "--db", str(db), "--run", "obs", "--output", str(official)]
    assert eval_main(argv) == 0
    by_id = {r["id"]: r for r in json.loads(official.read_text("utf-8"))}
    assert [m["content"] for m in by_id[bench.refs[0].id]["messages_pred"] if m["role"] == "tool"] == seen


def test_fintoolbench_agent_and_exports_agree(tmp_path: Path, fake_openai, shared_dir: Path) -> None:
    questions = shared_dir / "fintoolbench" / "questions_sample.jsonl"
    bench = load_bench(str(questions), tmp_path / "bench", inventory="fintool760")
    needs_args = next(t.name for t in bench.inventory.tools if (t.input_schema or {}).get("required"))
    calls: list[tuple[str, dict[str, Any]]] = [
        (bench.refs[0].turns[0].calls[0][0].tool, {}),
        (needs_args, {}),
        ("NoSuchTool", {}),
    ]
    db, seen = _run(bench, "fintool760", calls, tmp_path, fake_openai)
    assert len(seen) == 3
    out = tmp_path / "ftb.jsonl"
    argv = ["export", "--db", str(db), "--run", "obs", "--format", "fintoolbench", "--output", str(out)]
    assert proxy_main(argv) == 0
    (record,) = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert [c["output"] for c in record["tool_calls"]] == seen
    assert not seen[0].startswith('{"error"')
    tool_error, raised = (json.loads(s)["error"] for s in seen[1:])  # isError; JSON-RPC error
    assert "required" in tool_error and "NoSuchTool" in raised
    assert record["error"] == seen[-1]  # the agent copies a failed last output into the record's error
