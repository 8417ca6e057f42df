"""The noisy agent: seeded, each perturbation moves the metrics it should, monotonically in its rate."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from finmcp.evaluator.agents.base import ToolCall, seeded_rng
from finmcp.evaluator.agents.noisy import NoiseRates, NoisyAgent, perturb
from finmcp.evaluator.benchmarks import load_benchmark
from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.harness.runner import RunConfig, run_agent
from finmcp.evaluator.harness.scoring import score_run
from finmcp.evaluator.harness.setup import load_bench, stratified_slice
from finmcp.evaluator.harness.spawn import SpawnConfig, Stack
from finmcp.evaluator.harness.state import RunState
from finmcp.evaluator.inputs.model import Call, Prediction, PredictionSet, ReferenceSet
from finmcp.evaluator.metrics.options import EvalOptions
from finmcp.evaluator.reports.pipeline import evaluate

REFS = stratified_slice(load_benchmark("finmcp-sim"), 200)
TOOLS = sorted({c.tool for r in load_benchmark("finmcp-sim") for t in r.turns for g in t.calls for c in g})


def _score(rates: NoiseRates, seed: int = 0) -> dict[str, float]:
    """Perturb every reference in process and score with the evaluator (no server needed)."""
    by_sample = {}
    for ref in REFS:
        turns = []
        for k, turn in enumerate(ref.turns):
            gold = [[ToolCall(c.tool, dict(c.arguments)) for c in g] for g in turn.calls]
            steps = perturb(gold, rates, seeded_rng(seed, ref.id, 0, k), TOOLS)
            turns.append([[Call(c.tool, c.arguments) for c in step] for step in steps])
        by_sample[ref.id] = [Prediction(ref.id, turns)]
    report = evaluate(
        ReferenceSet(REFS, "finmcp"), PredictionSet(by_sample, "test", "test"), EvalOptions(bootstrap=0)
    )
    head = report.to_dict()["headline"]
    return {k: head[f"official.macro_{m}"]["value"] for k, m in (("TR", "Recall"), ("TP", "Precision"))} | {
        "TPmicro": head["official.micro_Precision"]["value"],
        "EMR": head["paper.EMR"]["value"],
        "consist": head["official.consist_mean"]["value"],
    }


def test_zero_rates_are_the_oracle() -> None:
    assert _score(NoiseRates()) == {"TR": 1.0, "TP": 1.0, "TPmicro": 1.0, "EMR": 1.0, "consist": 1.0}


@pytest.mark.parametrize(
    ("key", "falls", "stays"),
    [
        ("drop", {"TR", "EMR"}, {"TPmicro"}),  # macro TP falls too: a sample with no call scores P = 0
        ("wrong", {"TR", "TP", "EMR"}, set()),
        ("over", {"TP", "EMR"}, {"TR"}),
        ("split", {"EMR"}, {"TR", "TP"}),
        ("merge", {"EMR"}, {"TR", "TP", "consist"}),
        ("reorder", {"EMR", "consist"}, {"TR", "TP"}),
    ],
)
def test_each_perturbation_moves_its_metrics_monotonically(
    key: str, falls: set[str], stays: set[str]
) -> None:
    scores = [_score(NoiseRates(**{key: rate})) for rate in (0.0, 0.1, 0.3, 0.6)]
    for metric in falls:
        values = [s[metric] for s in scores]
        assert all(a >= b for a, b in zip(values, values[1:], strict=False)), (key, metric, values)
        assert values[-1] < values[0] - 0.02, (key, metric, values)
    for metric in stays:
        assert {s[metric] for s in scores} == {1.0}, (key, metric)


def test_seeded_and_seed_sensitive() -> None:
    rates = NoiseRates.parse("0.2")
    assert _score(rates, seed=1) == _score(rates, seed=1)
    assert _score(rates, seed=1) != _score(rates, seed=2)


def test_parse_rates() -> None:
    assert NoiseRates.parse("0.1") == NoiseRates(*(0.1,) * 6)
    assert NoiseRates.parse("drop=0.2, over=0.1") == NoiseRates(drop=0.2, over=0.1)
    assert NoiseRates.parse("drop=0.2,over=0.1").describe() == "drop=0.2,over=0.1"
    for bad, needle in (("drip=0.1", "drip"), ("drop=x", "numbers"), ("drop=1.5", r"not in \[0, 1\]")):
        with pytest.raises(EvalInputError, match=needle):
            NoiseRates.parse(bad)


def test_split_merge_shapes() -> None:
    a, b, c = ToolCall("A"), ToolCall("B"), ToolCall("C")
    rng = seeded_rng(0, "x")
    assert [[x.tool for x in s] for s in perturb([[a, b], [c]], NoiseRates(split=1.0), rng, TOOLS)] == [
        ["A"],
        ["B"],
        ["C"],
    ]
    merged = perturb([[a], [b], [c]], NoiseRates(merge=1.0), seeded_rng(0, "x"), TOOLS)
    assert [[x.tool for x in s] for s in merged] == [["A", "B", "C"]]
    over = perturb([[a]], NoiseRates(over=1.0), seeded_rng(0, "x"), TOOLS)
    assert [[x.tool for x in s] for s in over] == [["A"], ["A"]]


@pytest.mark.slow
def test_noisy_through_the_proxy_is_monotone(tmp_path: Path) -> None:
    """Three rates through a real server + proxy: TR, TP and EMR fall as the rate grows."""
    bench = load_bench("finmcp-sim", tmp_path, limit=60)
    db = tmp_path / "runs.sqlite"
    state = tmp_path / "state.jsonl"
    reports = []
    with Stack(SpawnConfig(db=db, recordings=bench.recordings)) as stack:
        for rate in (0.0, 0.15, 0.4):
            run = f"noisy-{rate}"
            config = RunConfig(run, stack.proxy_base, state, db, concurrency=8, progress=False)
            summary = asyncio.run(run_agent(bench.refs, NoisyAgent(NoiseRates.parse(str(rate))), config))
            assert summary.done == 60, summary.errors
    for rate in (0.0, 0.15, 0.4):
        run = f"noisy-{rate}"
        reports.append(
            score_run(bench.refs, db, run, RunState(state).records(run), bench.inventory, bootstrap=0)
        )
    for metric in ("official.macro_Recall", "official.macro_Precision", "paper.EMR"):
        values = [r.headline[metric].value for r in reports]
        assert values[0] == 1.0 and values[0] > values[1] > values[2], (metric, values)
