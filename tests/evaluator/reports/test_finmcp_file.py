"""``finmcp-eval export --format finmcp``: the file FinMCP-Bench's official ``evaluation.py`` reads (issue
15, item 10).

The official script is re-implemented here from what it reads (not with finmcp-eval's reader): per
sample ``scenery`` (level 1 = the part before the first ``-``), ``diff_level["level"]``, ``task``
(default ``any``, spaces to ``_``), the ``tool_calls`` names of the gold ``messages`` and of
``messages_pred`` (a missing ``messages_pred`` stops it). Scored that way, a real run made through the
proxy must give exactly what ``finmcp-eval score --bench finmcp-sim --db ... --run R`` gives.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from finmcp.evaluator.cli import main
from finmcp.evaluator.inputs.references import load_references
from tests.evaluator.test_cli import rows_from_refs

TASK_KEYS = {"single_step": "single_tool", "multi_step": "multi_tool", "multi_turn": "multi_turn"}
"""The official task names (``single step`` ...) and finmcp-sim's sample types, as group keys."""


# ---------------------------------------------------------------- the official script's reads, re-done


def _names(messages: list[dict[str, Any]]) -> list[str]:
    return [str(tc["function"]["name"]) for m in messages if m.get("tool_calls") for tc in m["tool_calls"]]


def _div(a: float, b: float) -> float:
    return a / b if b > 0 else 0


def _block(rows: list[tuple[int, int, int, int]]) -> dict[str, Any]:
    tp, fp, fn = (sum(r[i] for r in rows) for i in range(3))
    per = [(_div(a, a + b), _div(a, a + c)) for a, b, c, _ in rows]
    f1s = [_div(2 * p * r, p + r) for p, r in per]
    micro_p, micro_r = _div(tp, tp + fp), _div(tp, tp + fn)
    return {
        "macro_Precision": round(sum(p for p, _ in per) / len(rows), 4),
        "macro_Recall": round(sum(r for _, r in per) / len(rows), 4),
        "macro_F1": round(sum(f1s) / len(rows), 4),
        "micro_Precision": round(micro_p, 4),
        "micro_Recall": round(micro_r, 4),
        "micro_F1": round(_div(2 * micro_p * micro_r, micro_p + micro_r), 4),
        "N": len(rows),
        "consist_mean": round(sum(r[3] for r in rows) / len(rows), 4),
    }


def official_script(records: list[dict[str, Any]]) -> dict[str, Any]:
    """FinMCP-Bench's evaluation.py on ``records`` (overall, level1, difficulty, task)."""
    rows: list[tuple[int, int, int, int]] = []
    groups: dict[str, dict[str, list[tuple[int, int, int, int]]]] = defaultdict(lambda: defaultdict(list))
    for record in records:
        level1 = record["scenery"].split("-")[0].strip()
        difficulty = record["diff_level"]["level"]
        task = record.get("task", "any").replace(" ", "_")
        gold, pred = _names(record["messages"]), _names(record["messages_pred"])
        g, p = Counter(gold), Counter(pred)
        row = (sum((p & g).values()), sum((p - g).values()), sum((g - p).values()), int(gold == pred))
        rows.append(row)
        for name, key in (("level1", level1), ("difficulty", difficulty), ("task", task)):
            groups[name][key].append(row)
    out: dict[str, Any] = {"overall": _block(rows)}
    out.update({name: {k: _block(v) for k, v in by.items()} for name, by in groups.items()})
    return out


# ---------------------------------------------------------------- the official shape, from the samples


def _kind(value: Any) -> str:
    return type(value).__name__


def assert_official_shape(record: dict[str, Any], sample: dict[str, Any]) -> None:
    """``record`` has every field of the official ``sample`` of its task (expert ``annotation`` aside),
    with the same JSON types, and messages shaped like the sample's."""
    expected = set(sample) - {"annotation"}
    assert expected <= set(record), (record["id"], expected - set(record))
    for key in expected - {"id"}:  # an id is the reference's own (an int in the samples, text in finmcp-sim)
        assert _kind(record[key]) == _kind(sample[key]), (record["id"], key)
    assert isinstance(record["id"], (int, str))
    assert set(record["diff_level"]) == set(sample["diff_level"]), record["id"]
    assert all(_kind(record["diff_level"][k]) == _kind(v) for k, v in sample["diff_level"].items())
    if all(isinstance(g, list) for g in sample["tool_list"]):  # single / multi step: the groups
        assert all(isinstance(g, list) and all(isinstance(n, str) for n in g) for g in record["tool_list"])
        assert [n for g in record["tool_list"] for n in g] == _names(record["messages"])
    else:  # multi turn: a flat, sorted, de-duplicated list of names
        assert record["tool_list"] == sorted(set(_names(record["messages"])))
    for field in ("messages", "messages_pred"):
        for message in record[field]:
            assert message["role"] in ("user", "assistant", "tool") and isinstance(message["content"], str)
            for call in message.get("tool_calls") or []:
                assert call["id"].startswith("call_") and call["type"] == "function"
                assert isinstance(call["function"]["name"], str)
                assert isinstance(json.loads(call["function"]["arguments"]), dict)
            if message["role"] == "tool":
                assert message["tool_call_id"].startswith("call_")


@pytest.fixture
def demo_by_task(shared_dir: Path) -> dict[str, dict[str, Any]]:
    samples = json.loads((shared_dir / "finmcp" / "demo_infer.json").read_text("utf-8"))
    return {s["task"]: s for s in samples}


# ---------------------------------------------------------------- tests


def _score(argv: list[str], out: Path) -> dict[str, Any]:
    assert main(["score", *argv, "--report-dir", str(out), "--format", "json", "--bootstrap", "0"]) == 0
    return json.loads((out / "report.json").read_text("utf-8"))


def _renamed(official: dict[str, Any]) -> dict[str, Any]:
    return {**official, "task": {TASK_KEYS.get(k, k): v for k, v in official["task"].items()}}


@pytest.mark.slow
def test_real_run_exports_the_file_the_official_script_reads(
    tmp_path: Path, demo_by_task: dict[str, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "runs.sqlite"
    run = ["run", "--bench", "finmcp-sim", "--agent", "noisy", "--noise", "0.3", "--seed", "3", "--spawn"]
    assert main([*run, "--run", "noisy", "--db", str(db), "--limit", "18", "--no-progress"]) == 0
    out = tmp_path / "official.json"
    argv = ["export", "--format", "finmcp", "--bench", "finmcp-sim", "--db", str(db), "--run", "noisy"]
    assert main([*argv, "--output", str(out)]) == 0
    assert "613 samples (18 with calls, 595 without: messages_pred [])" in capsys.readouterr().err
    records = json.loads(out.read_text("utf-8"))
    assert len(records) == 613 and len({r["id"] for r in records}) == 613
    run_ids = {r["id"] for r in records if r["messages_pred"]}
    assert len(run_ids) == 18  # the slice; every other sample: the agent made no call
    assert all(r["messages_pred"] == [] for r in records if r["id"] not in run_ids)
    for record in records:
        assert_official_shape(record, demo_by_task[record["task"]])
    by_db = _score(["--bench", "finmcp-sim", "--db", str(db), "--run", "noisy"], tmp_path / "db")
    assert by_db["coverage"]["scored"] == 613
    assert 0 < by_db["official"]["overall"]["macro_F1"] < 1  # a noisy run, not a trivial one
    assert _renamed(official_script(records)) == by_db["official"]
    by_file = _score(["--preds", str(out)], tmp_path / "file")
    assert _renamed(by_file["official"]) == by_db["official"]
    assert {k: v["value"] for k, v in by_file["headline"].items()} == {
        k: v["value"] for k, v in by_db["headline"].items()
    }


def test_official_references_are_written_back_with_their_predictions(
    tmp_path: Path, shared_dir: Path, trace_db, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = shared_dir / "finmcp" / "demo_infer.json"
    refs = load_references(bench)
    rows = [r for r in rows_from_refs(refs, "r", drop_every=3) if r["sample"] != "2"]  # sample 2: no call
    rows.append({"run": "r", "sample": "1", "turn": 0, "group": 5, "tool": "GetFundDiagnosis", "status": "tool_error",
                 "result": {"content": [{"type": "text", "text": "no fund"}], "isError": True}})  # fmt: skip
    rows.append({"run": "r", "sample": "elsewhere", "tool": "SearchFunds"})
    db = trace_db(rows)
    out = tmp_path / "official.json"
    assert main(["export", "--bench", str(bench), "--db", str(db), "--run", "r", "--output", str(out)]) == 0
    assert "1 traced sample(s) match no reference and were left out: 'elsewhere'" in capsys.readouterr().err
    records = json.loads(out.read_text("utf-8"))
    originals = json.loads(bench.read_text("utf-8"))
    assert [r["id"] for r in records] == [o["id"] for o in originals]
    for record, original in zip(records, originals, strict=True):
        assert {k: v for k, v in record.items() if k != "messages_pred"} == original  # written back as it was
    by_id = {str(r["id"]): r for r in records}
    assert by_id["2"]["messages_pred"] == []
    tool_messages = [m["content"] for m in by_id["1"]["messages_pred"] if m["role"] == "tool"]
    assert tool_messages[-1] == "no fund"  # an isError result: its plain text, as the inference keeps it
    by_db = _score(["--bench", str(bench), "--db", str(db), "--run", "r"], tmp_path / "db")
    assert official_script(records) == by_db["official"]
    assert _score(["--preds", str(out)], tmp_path / "file")["official"] == by_db["official"]


def test_fintoolbench_references_are_refused(
    shared_dir: Path, trace_db, capsys: pytest.CaptureFixture[str]
) -> None:
    db = trace_db([{"run": "r", "sample": "financebench_0", "tool": "x"}])
    bench = shared_dir / "fintoolbench" / "questions_sample.jsonl"
    assert main(["export", "--bench", str(bench), "--db", str(db), "--run", "r"]) == 2
    assert "finmcp-proxy export --format fintoolbench" in capsys.readouterr().err
