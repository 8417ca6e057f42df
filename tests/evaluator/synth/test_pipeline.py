"""Units of the synthesis pipeline: graph mining, chains, binding, verification, progress, CLI."""

from __future__ import annotations

import io
import json
from collections import Counter

import anyio
import pytest

from finmcp.evaluator.cli import main as eval_main
from finmcp.evaluator.inputs.model import Call, Reference, Turn
from finmcp.evaluator.progress import Progress
from finmcp.evaluator.synth.binders import BindError, StepInputs, bind
from finmcp.evaluator.synth.build import Builder
from finmcp.evaluator.synth.chains import Chain, Step
from finmcp.evaluator.synth.context import make_context
from finmcp.evaluator.synth.executor import McpExecutor
from finmcp.evaluator.synth.extract import Entities
from finmcp.evaluator.synth.toolgraph import mine_candidates, validate_candidates
from finmcp.evaluator.synth.trajectory import execute
from finmcp.recordings.plumbing.seeding import rng_for
from finmcp.tool_specs.graph import DependencyGraph
from finmcp.tool_specs.inventory import load_inventory


@pytest.fixture(scope="module")
def builder():
    return Builder(0)


def _ref(sid, groups, stype="multi_tool"):
    return Reference(sid, stype, "X", [Turn("q", [[Call(t) for t in g] for g in groups])])


def test_mining_links_every_tool_of_a_group_to_every_tool_of_the_next():
    refs = [
        _ref("a", [["SearchFunds"], ["BatchGetFundsDetail", "GetBatchFundPerformance"], ["GetCurrentTime"]]),
        _ref("b", [["SearchFunds"], ["BatchGetFundsDetail"]]),
        _ref("c", [["SearchFunds"], ["BatchGetFundsDetail"]], "single_tool"),  # not multi-tool: ignored
    ]
    candidates = mine_candidates(refs)
    assert candidates == Counter(
        {
            ("SearchFunds", "BatchGetFundsDetail"): 2,
            ("SearchFunds", "GetBatchFundPerformance"): 1,
            ("BatchGetFundsDetail", "GetCurrentTime"): 1,
            ("GetBatchFundPerformance", "GetCurrentTime"): 1,
        }
    )
    typed = DependencyGraph.from_inventory(load_inventory("finmcp65"))
    graph = validate_candidates(candidates, typed)
    assert set(graph.edges) == {
        ("SearchFunds", "BatchGetFundsDetail"),
        ("SearchFunds", "GetBatchFundPerformance"),
    }
    assert graph.support[("SearchFunds", "BatchGetFundsDetail")] == 2
    judged = validate_candidates(candidates, typed, llm_judge=lambda a, b: b == "GetCurrentTime")
    assert len(judged.edges) == 4 and judged.edges[("BatchGetFundsDetail", "GetCurrentTime")] == ("llm",)


def test_seeded_streams_are_stable_and_distinct():
    assert rng_for(0, "x", 1).random() == rng_for(0, "x", 1).random()
    assert rng_for(0, "x", 1).random() != rng_for(1, "x", 1).random()


def test_progress_bar_draws_on_the_given_stream():
    stream = io.StringIO()
    with Progress("chains", 4, stream=stream) as bar:
        for _ in range(4):
            bar.advance()
    assert "chains" in stream.getvalue() and "4/4" in stream.getvalue()
    silent = io.StringIO()
    with Progress("x", 2, enabled=False, stream=silent) as bar:
        bar.advance()
    assert silent.getvalue() == ""


def test_chain_stages_parallel_and_sequential():
    steps = [
        Step("SearchFunds"),
        Step("BatchGetFundsDetail", {"fund_code": 0}),
        Step("GetBatchFundPerformance", {"fund_code": 0}),
    ]
    chain = Chain("FundResearchAndDiagnosis", "FundSearch", steps, parallel=True)
    assert chain.stages() == [[0], [1, 2]]
    assert chain.edges() == [(0, 1, "fund_code"), (0, 2, "fund_code")]
    again = Chain.from_json(chain.scenario, chain.sub_scenario, json.loads(json.dumps(chain.to_json())))
    assert again.to_json() == chain.to_json()


def _execute(builder, chain: Chain, ctx):
    """Run ``chain`` in one turn with the builder's in-process executor."""
    world = builder.simulator.world
    stages = [chain.stages()]
    return anyio.run(
        execute, chain, stages, ctx, builder.executor, "t", builder.inventory, world, rng_for(0, "r")
    )


def test_planner_passes_real_entities_and_parallel_groups(builder):
    steps = [
        Step("SearchFunds"),
        Step("BatchGetFundsDetail", {"fund_code": 0}),
        Step("GetBatchFundPerformance", {"fund_code": 0}),
    ]
    for parallel, expected_groups in ((True, 2), (False, 3)):
        chain = Chain("FundResearchAndDiagnosis", "FundSearch", list(steps), parallel)
        ctx = make_context(builder.simulator.world, rng_for(0, "t", 1))
        traj = _execute(builder, chain, ctx)
        assert traj.failure is None
        groups = traj.turns[0]
        assert len(groups) == expected_groups
        found = json.loads(groups[0][0].result["content"][0]["text"])["funds"]
        assert groups[1][0].arguments["fundCodes"] == [f["fundCode"] for f in found][:3]


def test_verification_rejects_failed_calls_and_missing_data_flow(builder):
    ctx = make_context(builder.simulator.world, rng_for(0, "t", 2))
    ctx.fund_keyword = "没有这样的基金名称"  # the search finds nothing, so nothing flows downstream
    chain = Chain(
        "FundResearchAndDiagnosis",
        "FundSearch",
        [Step("SearchFunds"), Step("BatchGetFundsDetail", {"fund_code": 0})],
    )
    traj = _execute(builder, chain, ctx)
    assert traj.failure and "returned no fund_code" in traj.failure
    spec = builder.inventory.get("BatchGetFundsDetail")
    with pytest.raises(BindError, match="step 3 returned no fund_code"):
        bind(spec, ctx, StepInputs({"fund_code": (3, Entities())}), rng_for(0, "b"), builder.simulator.world)
    assert builder.executor.call("BatchGetFundsDetail", {"fundCodes": ["12"]})["isError"]


def test_mcp_executor_tags_the_url():
    plain = McpExecutor("http://127.0.0.1:9/mcp")
    assert plain.url_for("s 1", 2) == "http://127.0.0.1:9/mcp"
    tagged = McpExecutor("", "run/1", "http://127.0.0.1:9/r/{run}/s/{sample}/t/{turn}/mcp")
    assert tagged.url_for("s 1", 2) == "http://127.0.0.1:9/r/run%2F1/s/s%201/t/2/mcp"


def test_cli_stats_and_bad_input(capsys):
    assert eval_main(["synth", "stats", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["by_type"]["multi_tool"]["samples"] == 249 and stats["sub_scenarios"] == 33
    assert stats["by_type"]["multi_tool"]["parallel"] >= 70
    assert eval_main(["synth", "import", "--output", "x.jsonl"]) == 2
    assert "either --finmcp" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_stage_by_stage(tmp_path, capsys):
    chains, queries, refs = tmp_path / "c.jsonl", tmp_path / "q.jsonl", tmp_path / "r.jsonl"
    assert eval_main(["synth", "chains", "--per-sub", "1", "--output", str(chains), "--no-progress"]) == 0
    assert eval_main(["synth", "queries", "--chains", str(chains), "--output", str(queries)]) == 0
    args = ["synth", "trajectories", "--queries", str(queries), "--output", str(refs), "--no-progress"]
    assert eval_main([*args, "--recordings", str(tmp_path / "r.sqlite")]) == 0
    lines = [json.loads(x) for x in refs.read_text().splitlines()]
    assert 20 <= len(lines) <= 33
    assert all(r["turns"][0]["user"].endswith(r["user_id"]) for r in lines)
