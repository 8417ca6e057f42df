"""``finmcp-eval answers`` and ``tasks`` on bad input, and how stored answers reach predictions: every
refused line named with its number while the rest are stored; a proxy that does not answer, a missing
file and a PostgreSQL store said plainly (exit status 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from finmcp.evaluator.cli import main
from finmcp.evaluator.inputs.answers import attach_answers, stored_answers
from finmcp.evaluator.inputs.model import Prediction, PredictionSet
from finmcp.recordings.answers import StoredAnswer, answers_of, put_answers
from finmcp.recordings.trace_store import SqliteTraceStore


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "runs.sqlite"
    SqliteTraceStore.open(path).close()
    return path


def test_answers_store_the_good_lines_and_name_each_refused_one(db: Path, tmp_path: Path, capsys) -> None:
    file = tmp_path / "answers.jsonl"
    lines = [
        {"run": "r", "sample": "sim-turn-0001", "turn": 3, "trial": 1, "answer": "last turn"},
        {"sample": "sim-single-0001", "answer": "run, turn and trial by default"},
        {"run": "r", "sample": "sim-single-0002", "turn": 0, "answer": None, "error": "gave up"},
        {"run": "r", "sample": "sim-turn-0001", "turn": 4, "answer": "x"},
        {"run": "r", "sample": "nope", "turn": 0, "answer": "x"},
        {"run": "r", "sample": "sim-single-0001", "turn": -1, "answer": "x"},
        {"run": "r", "sample": "sim-single-0001", "turn": 0, "answer": 42},
        {"run": "r", "sample": "sim-single-0001", "turn": 0},
        ["not", "an", "object"],
    ]
    file.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n{broken\n", "utf-8")
    assert main(["answers", "--run", "r", "--db", str(db), str(file)]) == 1
    err = capsys.readouterr().err
    for number, why in (
        (4, "sample 'sim-turn-0001' has 4 turn(s): no turn 4"),
        (5, "sample 'nope' is not in the benchmark"),
        (6, "field 'turn': -1 is not an integer >= 0"),
        (7, "field 'answer' must be a string or null, not int"),
        (8, "neither 'answer' nor 'error'"),
        (9, "expected a JSON object, not list"),
        (11, "not JSON"),
    ):
        assert f"refused {file}:{number}: {why}" in err, err
    assert "3 answer(s) of run 'r' stored" in err and "7 line(s) refused" in err
    got = {(a.sample_id, a.trial, a.turn): (a.answer, a.error) for a in answers_of(db, "r")}
    assert got == {
        ("sim-turn-0001", 1, 3): ("last turn", None),
        ("sim-single-0001", 0, 0): ("run, turn and trial by default", None),
        ("sim-single-0002", 0, 0): (None, "gave up"),
    }
    assert all(a.source == "import:answers.jsonl" for a in answers_of(db, "r"))


def test_bad_stores_files_and_proxies_are_said(db: Path, tmp_path: Path, capsys) -> None:
    file = tmp_path / "a.jsonl"
    file.write_text("", "utf-8")
    assert main(["answers", "--run", "r", "--db", str(db), str(tmp_path / "none.jsonl")]) == 2
    assert "answers file not found" in capsys.readouterr().err
    assert main(["answers", "--run", "r", "--db", "postgresql://u@127.0.0.1:1/x", str(file)]) == 2
    assert "answers are stored in a SQLite trace store" in capsys.readouterr().err
    assert main(["answers", "--run", "r", "--db", str(tmp_path / "no.sqlite"), str(file)]) == 2
    assert "--db: trace store not found" in capsys.readouterr().err
    assert main(["answers", "--run", "r", "--db", str(db), str(file)]) == 0  # an empty file: nothing to store
    argv = [
        "tasks",
        "--run",
        "r",
        "--proxy",
        "http://127.0.0.1:9/mcp",
        "--limit",
        "1",
        "--workdir",
        str(tmp_path),
    ]
    assert main(argv) == 2
    assert "--proxy: cannot list the tools at http://127.0.0.1:9/r/r/mcp" in capsys.readouterr().err


def test_stored_answers_become_the_predictions_final_answers(db: Path) -> None:
    put_answers(
        db,
        [
            StoredAnswer("r", "a", 0, 0, "first"),
            StoredAnswer("r", "a", 0, 1, "final"),
            StoredAnswer("r", "b", 0, 0, "fine"),
            StoredAnswer("r", "b", 0, 1, None, "crashed"),
            StoredAnswer("r", "c", 2, 0, "no calls, an answer"),
        ],
    )
    preds = PredictionSet(
        {"a": [Prediction("a", [[]])], "b": [Prediction("b", [[]])]}, "trace_db", str(db), "r"
    )
    assert attach_answers(preds, stored_answers(db, "r")) == 2
    assert preds.by_sample["a"][0].answer == "final" and preds.by_sample["a"][0].error is None
    assert preds.by_sample["b"][0].answer is None and preds.by_sample["b"][0].error == "crashed"
    [c] = preds.by_sample["c"]
    assert (c.trial, c.turns, c.answer) == (2, [], "no calls, an answer")
