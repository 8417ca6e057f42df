"""The typed report: its JSON is the dict pipeline's ``report.json`` field for field and byte for byte
(FinMCP with trials and errors, FinToolBench with its blocks), and it reads a ``report.json`` back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from finmcp.evaluator.agents.base import ToolCall, seeded_rng
from finmcp.evaluator.agents.noisy import NoiseRates, perturb
from finmcp.evaluator.benchmarks import load_benchmark
from finmcp.evaluator.inputs.fintoolbench_jsonl import result_prediction
from finmcp.evaluator.inputs.model import Call, Prediction, PredictionSet, ReferenceSet
from finmcp.evaluator.inputs.pairing import pair_up
from finmcp.evaluator.inputs.references import load_references
from finmcp.evaluator.metrics.argnorm import Canonicalizer
from finmcp.evaluator.metrics.finmcp import compute_official
from finmcp.evaluator.metrics.options import EvalOptions
from finmcp.evaluator.metrics.table import score_pairs
from finmcp.evaluator.reports.model import Report, SampleCounts, headline
from finmcp.evaluator.reports.pipeline import dumps, report_dict, trials_block

REFS = load_benchmark("finmcp-sim")
TOOLS = sorted({c.tool for r in REFS for t in r.turns for g in t.calls for c in g})


def _noisy_run(trials: int) -> PredictionSet:
    """The demo's noisy-heavy agent on every finmcp-sim sample, in process; every 50th sample failed."""
    rates = NoiseRates.parse("drop=0.2,wrong=0.2,over=0.2,split=0.2,merge=0.2,reorder=0.2")
    by_sample: dict[str, list[Prediction]] = {}
    for i, ref in enumerate(REFS):
        for trial in range(trials):
            turns = []
            for k, turn in enumerate(ref.turns):
                gold = [[ToolCall(c.tool, dict(c.arguments)) for c in g] for g in turn.calls]
                steps = perturb(gold, rates, seeded_rng(0, ref.id, trial, k), TOOLS)
                turns.append([[Call(c.tool, c.arguments, "ok", "out") for c in step] for step in steps])
            pred = Prediction(ref.id, turns, trial=trial, run_id="noisy-heavy")
            if i % 50 == 0:
                pred.error = "harness error"
            by_sample.setdefault(ref.id, []).append(pred)
    return PredictionSet(by_sample, "trace_db", "out/demo/runs.sqlite", "noisy-heavy")


def _both(refs: ReferenceSet, preds: PredictionSet, opts: EvalOptions) -> tuple[str, Report]:
    """The dict pipeline's ``report.json`` text and the typed report, from the same scored pairs."""
    canon = opts.canon or Canonicalizer()
    pairing = pair_up(refs, preds, opts.missing)
    table = score_pairs(pairing.pairs, canon)
    trials = trials_block(refs, preds, canon)
    text = json.dumps(
        report_dict(refs, preds, pairing, table, trials, opts), ensure_ascii=False, indent=1, default=str
    )
    return text, Report.from_dict(report_dict(refs, preds, pairing, table, trials, opts))


@pytest.mark.slow
@pytest.mark.parametrize("trials", [1, 2])
def test_finmcp_report_json_is_the_dict_pipelines(trials: int) -> None:
    text, report = _both(
        ReferenceSet(REFS, "finmcp", "finmcp-sim"), _noisy_run(trials), EvalOptions(bootstrap=50)
    )
    assert report.to_json() == text
    assert dumps(report) == text
    assert list(report.to_dict()) == list(json.loads(text))  # field for field, in order
    assert (report.trials is not None) == (trials > 1) and report.official is not None
    assert report.coverage.dropped and report.tool_selection is None and report.fintoolbench is None
    assert headline(report)["overall"] == json.loads(text)["official"]["overall"]
    samples = {"references": 613, "scored": 600, "missing": 0, "missing_as": "empty", "dropped": 13}
    assert headline(report)["samples"] == samples  # every 50th sample failed: dropped


@pytest.mark.shared
def test_fintoolbench_report_json_is_the_dict_pipelines(shared_dir: Path) -> None:
    refs = load_references(shared_dir / "fintoolbench" / "questions_sample.jsonl")
    by_sample = {}
    for r in refs.samples[1:]:  # the first reference has no prediction
        calls = [
            {"step": 1, "tool_name": c.tool, "parameters": {}, "output": "rows"} for c in r.turns[0].calls[0]
        ]
        by_sample[r.id] = [result_prediction(r.id, {"id": r.id, "tool_calls": calls, "error": None}, [])]
    preds = PredictionSet(by_sample, "fintoolbench_result", "memory")
    text, report = _both(refs, preds, EvalOptions(bootstrap=20))
    assert report.to_json() == text
    assert report.fintoolbench is not None and report.tool_selection is not None and report.official is None
    assert headline(report)["overall"] == json.loads(text)["tool_selection"]["overall"]
    assert headline(report)["samples"]["missing"] == 1


def test_report_json_reads_back_unchanged() -> None:
    refs = ReferenceSet(REFS[:40], "finmcp", "finmcp-sim")
    preds = PredictionSet(
        {r.id: [Prediction(r.id, [t.calls for t in r.turns])] for r in REFS[:30]}, "memory", "m"
    )
    text = Report.from_dict(report_dict(refs, preds, *_scored(refs, preds))).to_json()
    again = Report.from_dict(json.loads(text))
    assert again.to_json() == text
    assert again.coverage.missing_predictions == 10 and again.headline["paper.EMR"].value == 30 / 40
    assert SampleCounts.of_report(again) == SampleCounts(
        references=40, scored=30, missing=10, missing_as="empty", dropped=0
    )


def _scored(refs: ReferenceSet, preds: PredictionSet) -> tuple:
    opts = EvalOptions(bootstrap=0)
    pairing = pair_up(refs, preds, opts.missing)
    return pairing, score_pairs(pairing.pairs, Canonicalizer()), None, opts


def test_numbers_keep_their_json_type() -> None:
    """An int stays an int and a float a float (``0`` and ``0.0`` are different bytes in report.json)."""
    refs = ReferenceSet([], "finmcp", "empty")
    report = Report.from_dict(
        report_dict(refs, PredictionSet({}, "memory", "m"), *_scored(refs, PredictionSet({}, "memory", "m")))
    )
    overall = headline(report)["overall"]  # no reference: the FinMCP formulas' zeros
    assert overall["macro_F1"] == 0 and isinstance(overall["macro_F1"], int)
    script = compute_official([])["overall"]
    assert [(k, type(v)) for k, v in overall.items()] == [(k, type(v)) for k, v in script.items()]
    assert json.dumps(overall) == json.dumps(script)
