"""Tasks out, answers in, on FinToolBench questions through a spawned finmcp-server + finmcp-proxy:
``finmcp-eval tasks`` names each question's BM25 top-20 and its URL lists exactly those (the test agent
checks it over the mcp SDK client), an agent run outside the harness answers, ``finmcp-eval answers``
stores the answers and refuses the bad lines one by one, and ``score`` then has a soft score and CSS
where before it had none."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from finmcp.evaluator.cli import main
from finmcp.evaluator.harness.spawn import SpawnConfig, Stack
from finmcp.evaluator.tasks.model import Task
from tests.support.byo_agent import solve

pytestmark = [pytest.mark.slow, pytest.mark.shared]


def _cap(out: Path) -> dict:
    report = json.loads((out / "report.json").read_text("utf-8"))
    return report["fintoolbench"]["fintoolbench"]["metrics"]["cap"]


def _score(questions: Path, db: Path, out: Path) -> dict:
    argv = ["score", "--bench", str(questions), "--db", str(db), "--run", "ext", "--inventory", "fintool760",
            "--report-dir", str(out), "--bootstrap", "0", "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    return _cap(out)


def test_tasks_out_answers_in_gives_fintoolbench_its_answer_scores(
    shared_dir: Path, tmp_path: Path, capsys
) -> None:
    questions = shared_dir / "fintoolbench" / "questions_sample.jsonl"
    db, tasks_file = tmp_path / "runs.sqlite", tmp_path / "tasks.jsonl"
    with Stack(SpawnConfig(db=db, inventory="fintool760")) as stack:
        argv = ["tasks", "--bench", str(questions), "--inventory", "fintool760", "--run", "ext", "--proxy",
                stack.proxy_base, "--max-steps", "5", "--output", str(tasks_file), "--workdir", str(tmp_path)]  # fmt: skip
        assert main(argv) == 0
        tasks = [Task.from_json(line) for line in tasks_file.read_text("utf-8").splitlines()]
        assert len(tasks) == 12 and all(
            t.benchmark == "fintoolbench" and len(t.tools or []) == 20 for t in tasks
        )
        assert all(t.limits.max_steps == 5 and "?tools=" in t.mcp_url for t in tasks)

        async def play() -> list[str]:
            return [await solve(task, str(questions)) for task in tasks]  # raises if a listing is not top-20

        answers = anyio.run(play)
    before = _score(questions, db, tmp_path / "before")
    assert before["soft_score"] is None and before["css"] is None  # a trace alone holds no answer

    lines = [json.dumps({"run": t.run, "sample": t.sample, "turn": t.turn, "trial": t.trial, "answer": a})
             for t, a in zip(tasks, answers, strict=True)]  # fmt: skip
    lines += [
        json.dumps({"run": "ext", "sample": "no-such-question", "turn": 0, "answer": "x"}),
        json.dumps({"run": "ext", "sample": tasks[0].sample, "turn": 3, "answer": "x"}),
        "{not json",
        json.dumps({"run": "another", "sample": tasks[0].sample, "turn": 0, "answer": "x"}),
    ]
    file = tmp_path / "answers.jsonl"
    file.write_text("\n".join(lines) + "\n", "utf-8")
    capsys.readouterr()
    assert main(["answers", "--run", "ext", "--db", str(db), "--bench", str(questions), str(file)]) == 1
    err = capsys.readouterr().err
    assert f"{file}:13: sample 'no-such-question' is not in the benchmark" in err
    assert f"{file}:14: sample {tasks[0].sample!r} has 1 turn(s): no turn 3" in err
    assert f"{file}:15: not JSON" in err and f"{file}:16: run 'another' is not --run 'ext'" in err
    assert "12 answer(s) of run 'ext' stored" in err and "4 line(s) refused" in err

    after = _score(questions, db, tmp_path / "after")
    assert after["soft_score"] == 1.0 and after["css"] is not None  # the gold answers, judged by rules


def test_a_program_run_by_the_harness_on_fintoolbench_gets_its_top_k_and_its_answers_scored(
    shared_dir: Path, tmp_path: Path
) -> None:
    import shlex
    import sys

    from finmcp.recordings.answers import answers_of

    questions = shared_dir / "fintoolbench" / "questions_sample.jsonl"
    agent = Path(__file__).resolve().parents[2] / "support" / "byo_agent.py"
    command = shlex.join([sys.executable, str(agent), "--refs", str(questions)])
    db, out = tmp_path / "runs.sqlite", tmp_path / "report"
    argv = ["run", "--bench", str(questions), "--inventory", "fintool760", "--agent", f"cmd:{command}",
            "--spawn", "--run", "cmd", "--db", str(db), "--limit", "4", "--report-dir", str(out),
            "--bootstrap", "0", "--no-progress"]  # fmt: skip
    assert main(argv) == 0  # the program fails its task when a listing is not the task's top-20
    stored = answers_of(db, "cmd")
    assert len(stored) == 4 and all(a.answer and a.error is None for a in stored)
    cap = _cap(out)
    assert cap["soft_score"] == 1.0 and cap["css"] is not None
