"""The viewer's predictions, metric values and diff agree with ``finmcp-eval score`` on a real run."""

from __future__ import annotations

import pytest

from finmcp.evaluator.benchmarks import open_references
from finmcp.evaluator.inputs.trace_db import load_predictions_db
from finmcp.evaluator.reports.pipeline import evaluate
from finmcp.evaluator.viewer import queries
from finmcp.evaluator.viewer.diff import (
    METRIC_KEYS,
    load_benchmark,
    sample_diff,
    sample_metrics,
    traced_predictions,
)
from finmcp.recordings.trace_store import open_trace_store
from tests.evaluator.viewer.conftest import DROPPED, SAMPLES, Traced

pytestmark = pytest.mark.slow  # the session's harness run (server + proxy + two runs)


def _shape(pred):
    return [
        [[(c.tool, c.arguments, c.status, c.malformed) for c in g] for g in groups] for groups in pred.turns
    ]


@pytest.mark.parametrize("run", ["oracle", "dropped"])
def test_predictions_and_metrics_match_score(traced: Traced, run: str) -> None:
    with open_trace_store(traced.db, readonly=True) as store:
        rows = list(store.prediction_rows(run))
    mine = traced_predictions(rows)
    theirs = load_predictions_db(traced.db, run)
    assert {sid for sid, _ in mine} == set(theirs.by_sample) == set(SAMPLES)
    for (sid, trial), traced_pred in mine.items():
        assert _shape(traced_pred.prediction) == _shape(theirs.by_sample[sid][trial]), sid
    bench = load_benchmark("finmcp-sim")
    refs = open_references("finmcp-sim")
    refs.samples = [r for r in refs.samples if r.id in SAMPLES]
    report = evaluate(refs, theirs)
    for row in report.samples:
        values = sample_metrics(bench.refs[row["id"]], mine[(row["id"], 0)].prediction, bench.canon)
        assert values == {k: row[k] for k in METRIC_KEYS}, row["id"]


def test_diff_marks_the_deleted_call_missing(traced: Traced) -> None:
    with open_trace_store(traced.db, readonly=True) as store:
        rows = list(store.prediction_rows("dropped", sample_ids=[DROPPED[0]]))
        calls = queries.sample_calls(store, "dropped", DROPPED[0])
    bench = load_benchmark("finmcp-sim")
    traced_pred = traced_predictions(rows, ids=[c["id"] for c in calls])[(DROPPED[0], 0)]
    diff = sample_diff(bench.refs[DROPPED[0]], traced_pred, bench.canon)
    ref_calls = [c for t in diff["turns"] for g in t["groups"] for c in g]
    assert [c["tool"] for c in ref_calls if c["marks"] == ["missing"]] == [DROPPED[1]]
    assert all(c["marks"] == ["ok"] for c in ref_calls if c["tool"] != DROPPED[1])
    assert diff["counts"] == {"ok": len(ref_calls) - 1, "wrong_args": 0, "missing": 1, "extra": 0, "order": 0}
    assert set(diff["predicted"]) == {str(c["id"]) for c in calls}  # every predicted call has its marks
    assert diff["first_error_group"] == 1  # the parallel group that lost a call
