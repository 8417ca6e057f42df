"""Fidelity of the official FinMCP-Bench numbers: hand-computed expectations on the demo samples and an
independent re-implementation of the released formulas checked on random samples."""

from __future__ import annotations

import copy
import json
from collections import Counter, defaultdict
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from finmcp.evaluator.inputs.finmcp_json import official_predictions
from finmcp.evaluator.inputs.references import parse_references
from finmcp.evaluator.metrics.finmcp import compute_official, multiset_counts
from finmcp.evaluator.metrics.options import EvalOptions
from finmcp.evaluator.reports.pipeline import evaluate
from tests.evaluator.eval_support import assistant_call, official_sample, predicted_messages

# ----------------------------------------------------------------- perturbations of gold messages


def _call_positions(messages: list[dict[str, Any]]) -> list[int]:
    return [i for i, m in enumerate(messages) if m.get("role") == "assistant" and m.get("tool_calls")]


def drop_call(messages, k):
    """Remove the k-th assistant tool-call message (and the tool replies right after it)."""
    msgs = copy.deepcopy(messages)
    i = _call_positions(msgs)[k]
    j = i + 1
    while j < len(msgs) and msgs[j]["role"] == "tool":
        j += 1
    return msgs[:i] + msgs[j:]


def add_call(messages, name):
    """Insert one more call group just before the final answer."""
    msgs = copy.deepcopy(messages)
    return msgs[:-1] + [assistant_call((name, {}))] + msgs[-1:]


def swap_calls(messages, a, b):
    """Swap the tool_calls of the a-th and b-th assistant tool-call messages."""
    msgs = copy.deepcopy(messages)
    pos = _call_positions(msgs)
    msgs[pos[a]]["tool_calls"], msgs[pos[b]]["tool_calls"] = (
        msgs[pos[b]]["tool_calls"],
        msgs[pos[a]]["tool_calls"],
    )
    return msgs


def merge_calls(messages, a):
    """Merge the a-th and (a+1)-th call messages into one parallel group."""
    msgs = copy.deepcopy(messages)
    pos = _call_positions(msgs)
    msgs[pos[a]]["tool_calls"] = msgs[pos[a]]["tool_calls"] + msgs[pos[a + 1]]["tool_calls"]
    del msgs[pos[a + 1]]
    return msgs


def rename_call(messages, k, name):
    msgs = copy.deepcopy(messages)
    msgs[_call_positions(msgs)[k]]["tool_calls"][0]["function"]["name"] = name
    return msgs


def perturbed_demo(demo: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The demo with a known perturbation per sample (see the expectations below)."""
    by_id = {s["id"]: s for s in demo}
    by_id[1]["messages_pred"] = copy.deepcopy(by_id[1]["messages"])  # perfect
    by_id[2]["messages_pred"] = drop_call(by_id[2]["messages"], 0)  # drop its only call
    by_id[201]["messages_pred"] = add_call(by_id[201]["messages"], "GetCurrentTime")  # one call too many
    by_id[202]["messages_pred"] = swap_calls(by_id[202]["messages"], 0, 1)  # reorder the first two groups
    by_id[602]["messages_pred"] = merge_calls(by_id[602]["messages"], 0)  # two sequential calls in parallel
    by_id[603]["messages_pred"] = rename_call(by_id[603]["messages"], 1, "SearchFunds")  # a wrong tool
    return demo


def _score(records, **opts):
    refs = parse_references([r for r in records if not r.get("error")], "demo")
    preds = official_predictions(records, "demo")
    return evaluate(refs, preds, EvalOptions(bootstrap=opts.get("bootstrap", 0))).to_dict()


def _block(mp, mr, mf, up, ur, uf, n, consist):
    return dict(
        macro_Precision=mp,
        macro_Recall=mr,
        macro_F1=mf,
        micro_Precision=up,
        micro_Recall=ur,
        micro_F1=uf,
        N=n,
        consist_mean=consist,
    )


def test_demo_perturbations_match_hand_computed_official_numbers(demo_samples):
    report = _score(perturbed_demo(demo_samples))
    official = report["official"]
    # per sample (TP, FP, FN, consist): 1 (1,0,0,1)  2 (0,0,1,0)  201 (6,1,0,0)  202 (6,0,0,0)
    # 602 (7,0,0,1)  603 (2,1,1,0); pooled TP 22, FP 2, FN 2
    # macro P = (1 + 0 + 6/7 + 1 + 1 + 2/3) / 6, R = (1 + 0 + 1 + 1 + 1 + 2/3) / 6,
    # F1 = (1 + 0 + 12/13 + 1 + 1 + 2/3) / 6; micro P = R = F1 = 22/24
    assert official["overall"] == _block(0.754, 0.7778, 0.765, 0.9167, 0.9167, 0.9167, 6, 0.3333)
    assert official["level1"] == {
        "市场分析与研究": _block(0.5, 0.5, 0.5, 1.0, 0.5, 0.6667, 2, 0.5),
        "账户与服务管理": _block(0.9286, 1.0, 0.9615, 0.9231, 1.0, 0.96, 2, 0.0),
        "PlatformTechnicalSupport": _block(1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1, 1.0),
        "InvestmentPlanningAndAllocation": _block(0.6667, 0.6667, 0.6667, 0.6667, 0.6667, 0.6667, 1, 0.0),
    }
    assert official["difficulty"] == {
        "easy": _block(0.5556, 0.5556, 0.5556, 0.75, 0.6, 0.6667, 3, 0.3333),
        "medium": _block(0.9524, 1.0, 0.9744, 0.95, 1.0, 0.9744, 3, 0.3333),
    }
    assert official["task"] == {
        "single_step": _block(0.5, 0.5, 0.5, 1.0, 0.5, 0.6667, 2, 0.5),
        "multi_step": _block(0.9286, 1.0, 0.9615, 0.9231, 1.0, 0.96, 2, 0.0),
        "multi_turn": _block(0.8333, 0.8333, 0.8333, 0.9, 0.9, 0.9, 2, 0.5),
    }
    # the paper's EMR: only sample 1 keeps every group (602's merge breaks its group structure)
    assert report["headline"]["paper.EMR"]["value"] == pytest.approx(1 / 6)
    emr = {row["id"]: row["emr"] for row in report["samples"]}
    assert emr == {"1": 1, "2": 0, "201": 0, "202": 0, "602": 0, "603": 0}


def test_split_parallel_group_keeps_official_numbers_and_fails_paper_emr(demo_samples):
    # reference variant: sample 603's three sequential calls form one parallel group; the prediction is
    # the original (the group split into three sequential calls)
    sample = next(s for s in demo_samples if s["id"] == 603)
    original = copy.deepcopy(sample["messages"])
    sample["messages"] = merge_calls(merge_calls(sample["messages"], 0), 0)
    sample["messages_pred"] = original
    report = _score([sample])
    assert report["official"]["overall"] == _block(1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1, 1.0)
    assert report["headline"]["paper.EMR"]["value"] == 0.0
    assert report["headline"]["extended.emr_lenient"]["value"] == 1.0


def test_reorder_inside_a_parallel_group_keeps_paper_emr_but_not_consist():
    ref = official_sample(7, [[["A", "B"], ["C"]]])
    ref["messages_pred"] = predicted_messages(ref, [[["B", "A"], ["C"]]])
    report = _score([ref])
    assert report["official"]["overall"]["consist_mean"] == 0
    assert report["headline"]["paper.EMR"]["value"] == 1.0


def test_perfect_predictions_score_one_everywhere(demo_samples):
    for s in demo_samples:
        s["messages_pred"] = copy.deepcopy(s["messages"])
    report = _score(demo_samples, bootstrap=200)
    assert report["official"]["overall"] == _block(1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 6, 1.0)
    for group in ("level1", "difficulty", "task"):
        for numbers in report["official"][group].values():
            assert all(numbers[k] == 1.0 for k in numbers if k != "N")
    for name, h in report["headline"].items():
        expected = 0.0 if name in ("extended.redundancy_rate", "extended.overcall_rate") else 1.0
        if name == "extended.first_error_rel_mean":
            assert h["value"] is None  # no sample has an error
            continue
        assert h["value"] == expected, name
        assert (h["lo"], h["hi"]) == (expected, expected), name


def test_empty_predictions_score_zero_recall_without_crashing(demo_samples):
    for s in demo_samples:
        s["messages_pred"] = [m for m in s["messages"] if m["role"] == "user"]
    report = _score(demo_samples, bootstrap=100)
    overall = report["official"]["overall"]
    assert overall["macro_Recall"] == 0 and overall["micro_Recall"] == 0 and overall["N"] == 6
    assert overall["macro_Precision"] == 0 and overall["consist_mean"] == 0
    assert report["headline"]["extended.exact_call_recall"]["value"] == 0.0
    assert report["headline"]["extended.arg_f1_micro"]["value"] == 0.0
    assert all(row["first_error"] == 1 for row in report["samples"])


def test_error_samples_are_dropped_like_the_official_script(demo_samples):
    for s in demo_samples:
        s["messages_pred"] = copy.deepcopy(s["messages"])
    failed = {"error": True, "error_message": "timeout", "messages_pred": []}
    report = _score(demo_samples + [failed])
    assert report["official"]["overall"]["N"] == 6
    assert [d["reason"] for d in report["coverage"]["dropped"]] == ["error sample: True"]
    # an error flag on a full sample drops it too
    demo_samples[0]["error"] = True
    refs = parse_references(demo_samples, "demo")
    report = evaluate(refs, official_predictions(demo_samples, "demo"), EvalOptions(bootstrap=0)).to_dict()
    assert report["official"]["overall"]["N"] == 5


def test_missing_diff_level_is_derived_from_the_call_count():
    samples = [official_sample(i, [[["A"]] * n], level=None) for i, n in ((1, 5), (2, 6), (3, 11))]
    refs = parse_references(samples, "x")
    assert [r.difficulty for r in refs.samples] == ["easy", "medium", "hard"]


def test_multiset_counts_equal_counter_semantics():
    pred, gold = ["a", "a", "b", "c"], ["a", "b", "b", "d"]
    pc, gc = Counter(pred), Counter(gold)
    expected = (sum((pc & gc).values()), sum((pc - gc).values()), sum((gc - pc).values()))
    assert multiset_counts(pred, gold) == expected == (2, 2, 2)


# ------------------------------------------------------- independent re-implementation (property test)


def _ref_names(messages):
    return [str(tc["function"]["name"]) for m in messages if m.get("tool_calls") for tc in m["tool_calls"]]


def _ref_safe(a, b):
    return a / b if b > 0 else 0


def _ref_metrics(values):
    ps, rs, fs = [], [], []
    tps = fps = fns = cons = 0
    for tp, fp, fn, c in values:
        p, r = _ref_safe(tp, tp + fp), _ref_safe(tp, tp + fn)
        ps.append(p)
        rs.append(r)
        fs.append(_ref_safe(2 * p * r, p + r))
        tps, fps, fns, cons = tps + tp, fps + fp, fns + fn, cons + c
    mp, mr = _ref_safe(tps, tps + fps), _ref_safe(tps, tps + fns)
    n = len(values)
    return {
        "macro_Precision": round(sum(ps) / n, 4) if n else 0,
        "macro_Recall": round(sum(rs) / n, 4) if n else 0,
        "macro_F1": round(sum(fs) / n, 4) if n else 0,
        "micro_Precision": round(mp, 4),
        "micro_Recall": round(mr, 4),
        "micro_F1": round(_ref_safe(2 * mp * mr, mp + mr), 4),
        "N": n,
        "consist_mean": round(cons / n, 4) if n else 0,
    }


def independent_official(records):
    """The released formulas, written again from the spec with Counter, on raw official records."""
    groups: dict[str, defaultdict[str, list]] = {
        "level1": defaultdict(list),
        "difficulty": defaultdict(list),
        "task": defaultdict(list),
    }
    allv = []
    for rec in records:
        if rec.get("error"):
            continue
        gold, pred = _ref_names(rec["messages"]), _ref_names(rec["messages_pred"])
        gc, pc = Counter(gold), Counter(pred)
        v = (sum((pc & gc).values()), sum((pc - gc).values()), sum((gc - pc).values()), int(gold == pred))
        allv.append(v)
        groups["level1"][rec["scenery"].split("-")[0].strip()].append(v)
        groups["difficulty"][rec["diff_level"]["level"]].append(v)
        groups["task"][rec.get("task", "any").replace(" ", "_")].append(v)
    out = {"overall": _ref_metrics(allv)}
    for key, g in groups.items():
        out[key] = {k: _ref_metrics(v) for k, v in g.items()}
    return out


TOOLS = st.sampled_from(["A", "B", "C", "D", "E"])
GROUPS = st.lists(st.lists(TOOLS, min_size=1, max_size=3), min_size=0, max_size=4)
TURNS = st.lists(GROUPS, min_size=1, max_size=3)
SAMPLE = st.tuples(
    TURNS,
    TURNS,
    st.sampled_from(["easy", "medium", "hard"]),
    st.sampled_from(["S1-x", "S2-y-z", " S3 -w"]),
    st.sampled_from(["single step", "multi step", "multi turn"]),
    st.booleans(),
)


@pytest.mark.slow
@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(SAMPLE, min_size=1, max_size=6))
def test_official_numbers_agree_with_an_independent_implementation(samples):
    records = []
    for i, (gold, pred, level, scenery, task, error) in enumerate(samples):
        rec = official_sample(i, gold, level=level, task=task)
        rec["scenery"] = scenery
        rec["messages_pred"] = predicted_messages(rec, pred)
        if error and i:  # keep at least one valid sample
            rec["error"] = True
        records.append(rec)
    refs = parse_references([r for r in records if not r.get("error")], "prop")
    report = evaluate(refs, official_predictions(records, "prop"), EvalOptions(bootstrap=0)).to_dict()
    assert report["official"] == independent_official(records)


def test_compute_official_on_no_records_is_all_zero():
    assert compute_official([])["overall"] == _block(0, 0, 0, 0, 0, 0, 0, 0)


def test_official_file_round_trip_through_json(tmp_path, demo_samples):
    path = tmp_path / "pred.json"
    path.write_text(json.dumps(perturbed_demo(demo_samples), ensure_ascii=False), encoding="utf-8")
    from finmcp.evaluator.inputs.predictions import load_predictions_file

    preds = load_predictions_file(path)
    assert preds.format == "finmcp_official" and sorted(preds.by_sample) == [
        "1",
        "2",
        "201",
        "202",
        "602",
        "603",
    ]
