"""A fault schedule injected by ``finmcp-proxy --fault-schedule`` (the server serves none) is scored like the
same schedule served by ``finmcp-server --fault-schedule``: same markers, same recovery numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from finmcp.evaluator.harness.robustness import RobustnessSetup, run_robustness
from finmcp.evaluator.harness.setup import load_bench
from finmcp.evaluator.inputs.fault_trace import load_fault_trace
from tests.evaluator.harness.test_robustness import AGENTS, SCHEDULE


@pytest.mark.slow
def test_proxy_injected_run_scores_like_a_server_injected_one(tmp_path: Path) -> None:
    bench = load_bench("finmcp-sim", tmp_path / "bench", limit=12)
    schedule = tmp_path / "schedule.json"
    schedule.write_text(json.dumps(SCHEDULE), "utf-8")
    results, markers = {}, {}
    for inject in ("server", "proxy"):
        folder = tmp_path / inject
        folder.mkdir()
        setup = RobustnessSetup(
            folder / "runs.sqlite", folder / "state.jsonl", schedule, bootstrap=200, inject=inject
        )
        results[inject] = run_robustness(bench, setup, AGENTS)
        trace = load_fault_trace(setup.db, "oracle-retry~faults")
        markers[inject] = sorted(
            json.dumps([c.sample, c.tool, c.args, c.ok, c.marker], sort_keys=True) for c in trace.calls
        )
    kinds = {json.loads(m)[4]["kind"] for m in markers["proxy"] if json.loads(m)[4]}
    assert {"rate_limit", "rpc_error", "is_error", "wrong_values"} <= kinds  # replacing and altering
    assert markers["proxy"] == markers["server"]
    retry = results["proxy"]["oracle-retry"]
    assert retry["by_kind"]["signalled"]["transient"] >= 5
    assert retry["by_kind"]["signalled"]["transient_recovered"]["value"] == 1.0
    assert results["proxy"]["oracle"]["by_kind"]["signalled"]["transient_recovered"]["value"] == 0.0
    assert results["proxy"] == results["server"]
