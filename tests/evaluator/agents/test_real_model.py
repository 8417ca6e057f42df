"""A real model, offline: SmolLM2-135M-Instruct served by llama.cpp (the cached venv of ``make demo-llm``)
drives the openai agent on one finmcp-sim sample through a spawned server + proxy. What it says is
its own business; what the harness makes of it is checked: every call it requested is in the trace,
the run state has the turn's stop reason and matches the trace, and the report accounts for it."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from finmcp.evaluator.agents.openai_agent import OpenAIAgent
from finmcp.evaluator.harness import demo_llm
from finmcp.evaluator.harness.runner import RunConfig, run_agent
from finmcp.evaluator.harness.scoring import score_run
from finmcp.evaluator.harness.setup import load_bench
from finmcp.evaluator.harness.spawn import SpawnConfig, Stack
from finmcp.evaluator.harness.state import RunState
from finmcp.evaluator.llm import ChatClient
from tests.support.postgres import require_or_skip

MAX_CALLS = 6
"""Fewer than the demo's 20: the model loops, and each call costs seconds on 2 cores."""


@pytest.mark.slow
@pytest.mark.real_model
def test_real_model_drives_one_sample(tmp_path: Path) -> None:
    if not demo_llm.is_provisioned():
        require_or_skip(
            f"the model venv {demo_llm.venv_python().parent.parent} is not provisioned "
            "(python -m finmcp.evaluator.harness.demo_llm --provision-only builds it, ~10-25 min)"
        )
    python = demo_llm.venv_python()
    bench = load_bench("finmcp-sim", tmp_path / "bench", limit=1)
    db, state = tmp_path / "runs.sqlite", tmp_path / "state.jsonl"
    model = demo_llm.find_model(python)
    with (
        demo_llm.llama_server(python, model, tmp_path / "llama.log") as url,
        Stack(SpawnConfig(db=db, recordings=bench.recordings)) as stack,
    ):
        chat = ChatClient(
            url,
            demo_llm.MODEL_ALIAS,
            api_key_env=None,
            timeout=600,
            temperature=0,
            max_tokens=demo_llm.MAX_TOKENS,
        )
        agent = OpenAIAgent(chat, max_calls=MAX_CALLS, top_k=demo_llm.TOP_K)
        config = RunConfig("real", stack.proxy_base, state, db, concurrency=1, progress=False)
        summary = asyncio.run(run_agent(bench.refs, agent, config))
        asyncio.run(agent.aclose())
    assert summary.done == 1, summary.errors
    (record,) = RunState(state).records("real")
    assert len(record["stopped"]) == len(bench.refs[0].turns)
    assert set(record["stopped"]) <= {"done", "max_calls"}
    with sqlite3.connect(db) as con:
        traced = con.execute("SELECT COUNT(*) FROM calls WHERE run_id = 'real'").fetchone()[0]
    assert traced == record["calls"] <= MAX_CALLS * len(bench.refs[0].turns)
    if "max_calls" in record["stopped"]:
        assert any(e["kind"] == "stop" for e in record.get("agent_events", []))
    report = score_run(bench.refs, db, "real", [record], bench.inventory, bootstrap=0).to_dict()
    assert report["coverage"]["scored"] == 1
    assert report["agent_behaviour"]["samples_with_agent_log"] == 1
    stops = report["agent_behaviour"]["stopped_at_cap"]
    assert stops.get("max_calls", 0) == (1 if "max_calls" in record["stopped"] else 0)
