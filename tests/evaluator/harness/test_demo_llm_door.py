"""``make demo-llm``'s wiring through the model door, with the scripted model standing in for llama.cpp
(``finmcp-eval model``: no model build needed): the demo's proxy forwards the openai agent's requests
to the model, each exchange is logged under its sample and turn (the agent's ``X-Finmcp-*`` headers),
and the run's report carries the model's tokens and time. Real processes on loopback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from finmcp.evaluator.cli import main as eval_main
from finmcp.evaluator.harness import demo_llm
from finmcp.evaluator.harness.state import RunState
from finmcp.recordings.model_exchanges import exchanges
from finmcp.recordings.plumbing.launch import FinmcpProcess
from finmcp.recordings.trace_store import open_trace_store

pytestmark = pytest.mark.slow


def test_demo_llm_model_traffic_goes_through_the_model_door(tmp_path: Path) -> None:
    samples = 2
    scripted = ["model", "--bench", "finmcp-sim", "--host", "127.0.0.1", "--port", "0"]
    with (
        FinmcpProcess("finmcp-eval", scripted) as model,
        demo_llm.both_doors(f"{model.base}/v1", tmp_path) as proxy,
    ):
        argv = demo_llm.run_arguments(f"{proxy}/v1", tmp_path, samples, proxy=proxy)
        argv[argv.index("--bootstrap") + 1] = "0"
        assert eval_main([*argv, "--no-progress"]) == 0
    state = RunState(tmp_path / "runs.sqlite.harness.jsonl").records(demo_llm.RUN_ID)
    assert demo_llm.check_run(tmp_path / "runs.sqlite", state, samples) == []
    with open_trace_store(tmp_path / "runs.sqlite", readonly=True) as store:
        rows = exchanges(store, demo_llm.RUN_ID)
    samples_run = {r["sample"] for r in state}
    assert rows and {r["sample_id"] for r in rows} == samples_run  # every exchange tagged by the agent
    # usage as the model reported it on every exchange (an empty final reply has 0 output tokens)
    assert all(r["status"] == "ok" and r["input_tokens"] > 0 and r["output_tokens"] is not None for r in rows)
    report = json.loads((tmp_path / "report" / "report.json").read_text("utf-8"))
    totals = report["model_usage"]["totals"]
    assert totals["exchanges"] == len(rows) and totals["unreported"] == 0
    assert totals["input_tokens"] == sum(r["input_tokens"] for r in rows) and totals["model_ms"] > 0
    line = demo_llm.usage_line(report)
    assert f"exchanges {len(rows)}" in line and "input_tokens" in line
