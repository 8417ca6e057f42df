"""A task program as a real process: its answer, and each way it can fail said plainly (crash, hang with
a child in its group, nothing printed, megabytes printed, a JSON error), the environment it gets."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest

from finmcp.evaluator.tasks.model import Limits, Task
from finmcp.evaluator.tasks.process import STDOUT_LIMIT, TaskProgramError, parse_answer, run_program

TASK = Task(
    run="r",
    sample="s-1",
    turn=1,
    trial=0,
    turns=2,
    benchmark="finmcp",
    user="hello",
    messages=[{"role": "user", "content": "hello"}],
    mcp_url="http://127.0.0.1:9/r/r/s/s-1/t/1/mcp",
    model_url="http://127.0.0.1:9/r/r/s/s-1/t/1/v1",
    limits=Limits(20, None),
)


def program(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "agent.py"
    path.write_text("import json, os, sys, time, subprocess\n" + body, "utf-8")
    return [sys.executable, str(path)]


def run(argv: list[str], timeout: float = 30.0) -> str:
    return asyncio.run(run_program(argv, TASK, timeout, "'agent.py'"))


def test_the_answer_is_stdout_and_the_program_sees_the_task_and_the_doors(tmp_path: Path) -> None:
    argv = program(
        tmp_path,
        "task = json.loads(sys.stdin.read())\n"
        "assert json.load(open(os.environ['FINMCP_TASK_FILE'])) == task\n"
        "env = {k: os.environ[k] for k in ('FINMCP_MCP_URL', 'OPENAI_BASE_URL', 'OPENAI_API_BASE',"
        " 'ANTHROPIC_BASE_URL', 'FINMCP_SAMPLE', 'FINMCP_TURN')}\n"
        "print(json.dumps({'answer': json.dumps([task['sample'], task['turn'], env])}))\n",
    )
    sample, turn, env = __import__("json").loads(run(argv))
    assert (sample, turn) == ("s-1", 1)
    assert env == {
        "FINMCP_MCP_URL": TASK.mcp_url,
        "OPENAI_BASE_URL": TASK.model_url,
        "OPENAI_API_BASE": TASK.model_url,
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/r/r/s/s-1/t/1",
        "FINMCP_SAMPLE": "s-1",
        "FINMCP_TURN": "1",
    }


def test_plain_text_is_the_answer_and_a_json_error_is_a_failure() -> None:
    assert parse_answer("  42 yuan\n") == ("42 yuan", None)
    assert parse_answer('{"answer": "A", "error": null}') == ("A", None)
    assert parse_answer('{"x": 1}') == ('{"x": 1}', None)  # any other JSON is the answer's text
    assert parse_answer('{"error": "down"}') == (None, "down")
    assert parse_answer(" \n") == (None, None)  # printed nothing: no answer
    assert parse_answer('{"answer": ""}') == ("", None)  # an explicit empty answer


def test_a_crash_gives_its_status_and_the_end_of_its_stderr(tmp_path: Path) -> None:
    argv = program(tmp_path, "sys.stderr.write('noise\\n' * 5000 + 'ValueError: broke\\n'); sys.exit(3)\n")
    with pytest.raises(TaskProgramError) as err:
        run(argv)
    text = str(err.value)
    assert text.startswith("exited with status 3; stderr (last 2000") and text.endswith("ValueError: broke")
    assert "stderr (last 2000 characters of 30018 bytes)" in text


def test_a_hang_is_killed_at_the_timeout_with_its_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    argv = program(
        tmp_path,
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "print('thinking', file=sys.stderr, flush=True)\ntime.sleep(300)\n",
    )
    start = time.monotonic()
    with pytest.raises(TaskProgramError) as err:
        run(argv, timeout=1.5)
    assert time.monotonic() - start < 15
    assert "timed out after 1.5 s; process group killed; stderr:\nthinking" in str(err.value)
    child = int(pid_file.read_text())
    for _ in range(50):  # the child (same group) is gone too
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"child {child} of the hung agent still runs")


def test_nothing_printed_is_a_failure(tmp_path: Path) -> None:
    with pytest.raises(TaskProgramError, match="printed no answer on stdout; stderr empty"):
        run(program(tmp_path, "sys.stdin.read()\n"))


def test_megabytes_are_cut_and_said(tmp_path: Path) -> None:
    argv = program(tmp_path, "sys.stdout.write('x' * (3 << 20)); sys.stdout.flush(); time.sleep(60)\n")
    start = time.monotonic()
    with pytest.raises(TaskProgramError, match=f"printed more than {STDOUT_LIMIT} bytes on stdout"):
        run(argv)
    assert time.monotonic() - start < 20  # killed when it overflowed, not at the timeout


def test_a_program_that_cannot_start(tmp_path: Path) -> None:
    with pytest.raises(TaskProgramError, match="cannot start"):
        run([str(tmp_path / "no-such-agent")])


def test_a_program_that_ignores_stdin_and_a_big_task(tmp_path: Path) -> None:
    big = Task(**{**TASK.__dict__, "messages": [{"role": "user", "content": "y" * (1 << 20)}]})
    argv = program(tmp_path, "print('fine')\n")
    assert asyncio.run(run_program(argv, big, 30.0, "a")) == "fine"
