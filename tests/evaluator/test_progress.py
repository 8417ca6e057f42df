"""Progress of long work: a redrawn line on a terminal, plain periodic lines with rate and ETA otherwise
(the real ``finmcp-eval`` on a pipe and on a pseudo-terminal), and the LLM judge's bounded concurrency
and retry policy."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import select
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from finmcp.evaluator.inputs.references import load_references
from finmcp.evaluator.llm import Endpoint, RetryPolicy
from finmcp.evaluator.metrics.judges import JudgeCache, LLMJudge, make_judge
from finmcp.evaluator.progress import Progress, clock_text
from tests.evaluator.fake_llm import Reply, completion

PLAIN = re.compile(r"^(\S+) (\d+)/(\d+) \((\d+)%\) (\d+\.\d)(?: \w+)?/s (ETA \d+:\d\d|done in \d+:\d\d)$")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_plain_lines_every_tenth_with_rate_and_eta():
    clock, stream = Clock(), io.StringIO()
    with Progress("run", 20, stream=stream, tty=False, clock=clock, unit="samples") as bar:
        for _ in range(20):
            clock.now += 0.5
            bar.advance()
    text = stream.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    assert lines[0] == "run 2/20 (10%) 2.0 samples/s ETA 0:09"
    assert [int(PLAIN.match(line).group(2)) for line in lines] == [2, 4, 6, 8, 10, 12, 14, 16, 18, 20]
    assert lines[-1] == "run 20/20 (100%) 2.0 samples/s done in 0:10"


def test_plain_lines_also_every_interval_when_work_is_slow():
    clock, stream = Clock(), io.StringIO()
    with Progress("x", 1000, stream=stream, tty=False, clock=clock, interval=5.0) as bar:
        for _ in range(30):  # 3 % of the work, 15 s
            clock.now += 0.5
            bar.advance()
    counts = [int(PLAIN.match(line).group(2)) for line in stream.getvalue().splitlines()]
    assert counts == [10, 20, 30, 30]  # every 5 s, then the last line


def test_tty_redraws_one_line_and_disabled_is_silent():
    clock, stream = Clock(), io.StringIO()
    with Progress("judge", 4, stream=stream, tty=True, clock=clock) as bar:
        for _ in range(4):
            clock.now += 1
            bar.advance()
    text = stream.getvalue()
    assert text.count("\r") == 6 and text.endswith("\n") and text.count("\n") == 1  # open, 4 steps, close
    assert "[##########..........] judge 2/4 (50%) 1.0/s ETA 0:02" in text
    silent = io.StringIO()
    with Progress("x", 2, enabled=False, stream=silent) as bar:
        bar.advance()
    assert silent.getvalue() == ""
    assert clock_text(3725) == "1:02:05" and clock_text(float("inf")) == "?"


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-c", "import sys; from evaluator.cli import main; sys.exit(main())", *args]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1", "NO_PROXY": "127.0.0.1"}


@pytest.mark.slow
def test_demo_on_a_pipe_writes_plain_progress_lines(tmp_path):
    """``finmcp-eval demo`` with stderr to a pipe: plain lines with count, rate and ETA; no \\r."""
    proc = subprocess.run(
        _cli("demo", "--limit", "9", "--out-dir", str(tmp_path), "--bootstrap", "20", "--concurrency", "1"),
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(),
    )
    assert proc.returncode == 0, proc.stderr
    assert "\r" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if PLAIN.match(line)]
    for agent in ("oracle", "noisy-light", "noisy-heavy"):
        mine = [PLAIN.match(line) for line in lines if line.startswith(agent + " ")]
        assert len(mine) >= 3, proc.stderr  # several periodic lines, then the last one
        assert all(m.group(3) == "9" for m in mine)
        assert any(m.group(6).startswith("ETA") for m in mine) and mine[-1].group(6).startswith("done in")
    assert (tmp_path / "leaderboard.html").is_file()


def _judge_refs(shared_dir: Path, tmp_path: Path) -> tuple[Path, Path]:
    questions = shared_dir / "fintoolbench" / "questions_sample.jsonl"
    refs = load_references(questions)
    lines = [
        {
            "id": ref.id,
            "question": ref.question,
            "execution_result": ref.ground_truth,
            "ground_truth": ref.ground_truth,
            "error": None,
            "tool_calls": [
                {"step": 1, "tool_name": c.tool, "parameters": {}, "output": "rows"}
                for c in ref.turns[0].calls[0]
            ],
        }
        for ref in refs.samples
    ]
    preds = tmp_path / "result.jsonl"
    preds.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines), encoding="utf-8")
    return questions, preds


def _read_pty(fd: int, proc: subprocess.Popen, timeout: float) -> bytes:
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the child closed its end
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    return out


@pytest.mark.slow
def test_score_with_llm_judge_on_a_terminal_redraws_one_line(tmp_path, shared_dir, fake_openai):
    """``finmcp-eval score --judge llm`` with stderr on a pseudo-terminal: carriage-return frames."""

    def script(body: dict[str, Any], n: int) -> Reply:
        time.sleep(0.01)
        if "match" in body["messages"][0]["content"]:
            return 200, completion('{"match": "yes", "reason": "fits"}'), 0.0
        return 200, completion('{"score": 1.0, "label": "correct", "reason": "same"}'), 0.0

    server = fake_openai(script)
    questions, preds = _judge_refs(shared_dir, tmp_path)
    primary, secondary = pty.openpty()
    argv = ["score", "--bench", str(questions), "--preds", str(preds), "--report-dir", str(tmp_path / "o")]
    argv += ["--bootstrap", "20", "--judge", "llm", "--llm-url", server.url, "--llm-model", "m"]
    argv += ["--tool-manifest", str(shared_dir / "fintoolbench" / "tools.jsonl")]
    proc = subprocess.Popen(_cli(*argv), stdout=subprocess.DEVNULL, stderr=secondary, env=_env())
    os.close(secondary)
    try:
        seen = _read_pty(primary, proc, 120).decode("utf-8", "replace")
        assert proc.wait(timeout=30) == 0, seen
    finally:
        os.close(primary)
    asked = len(server.requests)
    assert asked > 10
    frames = [f for f in seen.split("\r") if "judge " in f]
    assert len(frames) >= 2 and seen.count("\r") >= 2, seen
    assert re.search(rf"judge {asked}/{asked} \(100%\) \d+\.\d judgments/s done in \d+:\d\d", seen), seen
    assert re.search(r"judge \d+/\d+ \(\d+%\) \d+\.\d judgments/s ETA", seen), seen


def test_judge_prefetch_never_exceeds_its_bound(fake_openai):
    """Twelve judgments, three at a time: the fake server sees exactly three in flight at most."""
    lock = threading.Lock()
    started: list[float] = []

    def script(body: dict[str, Any], n: int) -> Reply:
        with lock:
            started.append(time.monotonic())
        time.sleep(0.05)  # held while in flight
        return 200, completion('{"match": "yes", "reason": "fits"}'), 0.0

    server = fake_openai(script)
    chat = Endpoint(server.url, "m", None, 10.0, 0).client(temperature=0.8, max_tokens=500)
    judge = LLMJudge(chat, JudgeCache(None), concurrency=3)
    asks = [("intent", {"question": "q", "tool_name": f"t{i}", "tag": "x"}, 0) for i in range(12)]
    judge.prefetch(asks)
    assert len(server.requests) == 12
    assert server.max_in_flight == 3


def test_llm_judge_retries_like_the_agent():
    endpoint = Endpoint("http://127.0.0.1:9/v1", "m", None, 5.0, 4)
    judge = make_judge("llm", endpoint)
    agent_chat = endpoint.client(temperature=0.0)
    assert judge.chat.retry == agent_chat.retry == RetryPolicy(retries=4)


def test_slow_items_show_seconds_per_item():
    clock, stream = Clock(), io.StringIO()
    with Progress("smollm2", 2, stream=stream, tty=False, clock=clock, unit="samples") as bar:
        for _ in range(2):
            clock.now += 170.0
            bar.advance()
    lines = stream.getvalue().splitlines()
    assert lines[0] == "smollm2 1/2 (50%) 170 s/sample ETA 2:50"
    assert lines[-1] == "smollm2 2/2 (100%) 170 s/sample done in 5:40"
