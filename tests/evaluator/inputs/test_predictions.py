"""Predictions from the trace DB, the exported JSONL and FinToolBench result files."""

from __future__ import annotations

import json
import sqlite3

import pytest

from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.inputs.predictions import load_predictions_file
from finmcp.evaluator.inputs.trace_db import load_predictions_db


def test_db_groups_by_call_group_then_seq_and_splits_turns(trace_db):
    db = trace_db(
        [
            {"run": "r1", "sample": "a", "turn": 0, "group": 1, "seq": 5, "tool": "C"},
            {"run": "r1", "sample": "a", "turn": 0, "group": 0, "seq": 3, "tool": "B"},
            {"run": "r1", "sample": "a", "turn": 0, "group": 0, "seq": 2, "tool": "A", "arguments": {"x": 1}},
            {"run": "r1", "sample": "a", "turn": 2, "group": 0, "seq": 9, "tool": "D"},
            {"run": "r2", "sample": "a", "turn": 0, "group": 0, "seq": 1, "tool": "Z"},
        ]
    )
    preds = load_predictions_db(db, "r1")
    pred = preds.by_sample["a"][0]
    assert [[[c.tool for c in g] for g in t] for t in pred.turns] == [[["A", "B"], ["C"]], [], [["D"]]]
    assert pred.turns[0][0][0].arguments == {"x": 1}
    assert preds.format == "trace_db" and preds.run_id == "r1"


def test_db_turn_base_one(trace_db):
    db = trace_db(
        [
            {"run": "r", "sample": "a", "turn": 1, "tool": "A"},
            {"run": "r", "sample": "a", "turn": 2, "tool": "B"},
        ]
    )
    pred = load_predictions_db(db, "r", turn_base=1).by_sample["a"][0]
    assert [[[c.tool for c in g] for g in t] for t in pred.turns] == [[["A"]], [["B"]]]
    with pytest.raises(EvalInputError, match="field 'turn': 0 is below the turn base 1"):
        load_predictions_db(trace_db([{"run": "r", "sample": "a", "turn": 0, "tool": "A"}]), "r", turn_base=1)


def test_db_outputs_errors_and_trials(trace_db):
    db = trace_db(
        [
            {
                "run": "r",
                "sample": "a",
                "tool": "A",
                "result": {"content": [{"type": "text", "text": "ok"}], "isError": False},
            },
            {
                "run": "r",
                "sample": "a",
                "tool": "B",
                "group": 1,
                "status": "tool_error",
                "result": {"content": [{"type": "text", "text": "bad fund code"}], "isError": True},
            },
            {
                "run": "r",
                "sample": "a",
                "tool": "C",
                "group": 2,
                "status": "rpc_error",
                "result": None,
                "rpc_error": {"code": -32602, "message": "Invalid params"},
            },
            {"run": "r", "sample": "a", "tool": "A", "trial": 1},
        ]
    )
    preds = load_predictions_db(db, "r")
    trials = preds.by_sample["a"]
    assert [p.trial for p in trials] == [0, 1] and preds.trial_count() == 2
    calls = trials[0].calls()
    assert calls[0].output == "ok" and calls[0].status == "ok"
    assert json.loads(calls[1].output) == {"error": "bad fund code"}
    assert json.loads(calls[2].output) == {"error": "Invalid params"}


def test_db_errors_are_clear(tmp_path, trace_db):
    with pytest.raises(EvalInputError, match="trace store not found"):
        load_predictions_db(tmp_path / "missing.sqlite", "r")
    db = trace_db([{"run": "r1", "sample": "a", "tool": "A"}])
    with pytest.raises(EvalInputError, match=r"run 'zz' not found; runs present: \['r1'\]"):
        load_predictions_db(db, "zz")
    other = tmp_path / "other.sqlite"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE calls (id INTEGER PRIMARY KEY, run_id TEXT)")
    con.commit()
    con.close()
    with pytest.raises(EvalInputError, match="lacks column"):
        load_predictions_db(other, "r")
    empty = tmp_path / "empty.sqlite"
    sqlite3.connect(empty).close()
    with pytest.raises(EvalInputError, match="no table 'calls'"):
        load_predictions_db(empty, "r")


def test_db_ignores_untagged_calls_with_a_warning(trace_db):
    db = trace_db([{"run": "r", "sample": None, "tool": "A"}, {"run": "r", "sample": "a", "tool": "B"}])
    preds = load_predictions_db(db, "r")
    assert list(preds.by_sample) == ["a"] and "have no sample tag" in preds.warnings[0]


def test_exported_jsonl(tmp_path):
    path = tmp_path / "runs.jsonl"
    rows = [
        {
            "run_id": "r",
            "sample_id": "a",
            "trial": 0,
            "answer": "final",
            "turns": [
                {
                    "turn": 0,
                    "calls": [
                        [{"tool": "A", "arguments": {"k": 1}, "status": "ok", "output": "x"}],
                        [{"tool": "B", "arguments": "{}"}],
                    ],
                }
            ],
        },
        {
            "run_id": "r",
            "sample_id": "b",
            "trial": 0,
            "turns": [{"turn": 1, "calls": [[{"tool": "C", "arguments": "{oops"}]]}],
        },
        {"run_id": "q", "sample_id": "a", "trial": 0, "turns": []},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    with pytest.raises(EvalInputError, match="several runs"):
        load_predictions_file(path)
    preds = load_predictions_file(path, run_id="r")
    a, b = preds.by_sample["a"][0], preds.by_sample["b"][0]
    assert preds.format == "exported" and a.answer == "final"
    assert [[c.tool for c in g] for g in a.turns[0]] == [["A"], ["B"]]
    assert a.turns[0][0][0].output == "x"
    assert b.turns[0] == [] and b.turns[1][0][0].malformed


def test_exported_jsonl_errors_name_line_and_field(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(
        json.dumps({"run_id": "r", "sample_id": "a", "turns": [{"turn": 0, "calls": [[{"arguments": {}}]]}]})
    )
    with pytest.raises(
        EvalInputError, match=r"line 1: sample 'a': field 'turns\[0\].calls\[0\]\[0\].tool': missing"
    ):
        load_predictions_file(path)


def test_fintoolbench_result_jsonl_dedupes_by_id_and_groups_by_step(tmp_path):
    path = tmp_path / "result_full.jsonl"
    rec = {
        "id": "q_1",
        "question": "q",
        "execution_result": "ans",
        "ground_truth": "1",
        "error": None,
        "tool_calls": [
            {"step": 1, "tool_name": "a", "parameters": {}, "output": "x"},
            {"step": 2, "tool_name": "b", "parameters": {"s": 1}, "output": "y"},
            {"step": 2, "tool_name": "c", "parameters": {}, "output": "z", "long_output": "zzz"},
        ],
    }
    older = dict(rec, tool_calls=[])
    path.write_text("\n".join([json.dumps(older), "not json", "", json.dumps(rec)]), encoding="utf-8")
    preds = load_predictions_file(path)
    pred = preds.by_sample["q_1"][0]
    assert preds.format == "fintoolbench_result"
    assert [[c.tool for c in g] for g in pred.turns[0]] == [["a"], ["b", "c"]]
    assert pred.answer == "ans" and pred.record["tool_calls"][2]["long_output"] == "zzz"
    assert any("later record wins" in w for w in preds.warnings)
    assert any("not valid JSON" in w for w in preds.warnings)


def test_fintoolbench_result_bad_step_is_an_error(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"id": "x", "tool_calls": [{"step": -1, "tool_name": "a"}]}))
    with pytest.raises(EvalInputError, match=r"sample 'x': field 'tool_calls\[0\].step'"):
        load_predictions_file(path)


def test_official_prediction_file_marks_invalid_and_error_samples(tmp_path):
    records = [
        {
            "id": 1,
            "messages_pred": [
                {"role": "user", "content": "q"},
                {"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]},
            ],
        },
        {"id": 2, "error": True, "messages_pred": []},
        {"id": 3},
    ]
    path = tmp_path / "eval.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    preds = load_predictions_file(path)
    assert "lacks function.name" in preds.by_sample["1"][0].invalid
    assert preds.by_sample["2"][0].error is True
    assert "messages_pred" in preds.by_sample["3"][0].invalid


def test_unknown_prediction_format(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps([{"foo": 1}]))
    with pytest.raises(EvalInputError, match="unknown format"):
        load_predictions_file(path)
