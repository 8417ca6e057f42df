"""``--agent cmd:``/``python:`` parsing and a callable's answers: what is refused up front (clear
messages), what a callable may return, and a sync callable that never returns failing only its task."""

from __future__ import annotations

import asyncio
import time

import pytest

from finmcp.evaluator.cli import build_parser
from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.harness.agent_factory import make_agent
from finmcp.evaluator.harness.cli import agent_options
from finmcp.evaluator.tasks.external import (
    CommandAgent,
    ExternalAgentError,
    PythonAgent,
    result_answer,
    split_agent,
)
from finmcp.evaluator.tasks.model import AgentResult, Limits, Task

TASK = Task(
    "r", "s-0002", 0, 0, 1, "finmcp", "q", [{"role": "user", "content": "q"}], "http://h/mcp", "http://h/v1"
)


def _agent(*flags: str):
    args = build_parser().parse_args(["run", "--proxy", "http://127.0.0.1:1/mcp", "--run", "r", *flags])
    return make_agent(agent_options(args))


def test_the_agent_flag_takes_programs_and_callables() -> None:
    assert split_agent("oracle") == ("oracle", None)
    assert split_agent("cmd:python a.py --x 'y z'") == ("cmd", "python a.py --x 'y z'")
    agent = _agent("--agent", "cmd:python a.py --x 'y z'", "--task-timeout", "7", "--max-steps", "5")
    assert isinstance(agent, CommandAgent) and agent.argv == ["python", "a.py", "--x", "y z"]
    assert agent.timeout == 7 and agent.limits == Limits(20, 5)
    assert isinstance(_agent("--agent", "python:tests.support.byo_agent:solve"), PythonAgent)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--agent", "shell:ls"], "expected oracle, noisy, openai, cmd:COMMAND or python:MODULE:FUNCTION"),
        (["--agent", "claude"], "expected oracle, noisy, openai, cmd:COMMAND or python:MODULE:FUNCTION"),
        (["--agent", "cmd:"], "needs what to run after the colon"),
        (["--agent", "cmd:python 'a.py"], "No closing quotation"),
        (["--agent", "python:no_such_module_x:f"], "cannot import no_such_module_x"),
        (["--agent", "python:tests.support.byo_agent:nothing"], "has no 'nothing'"),
        (["--agent", "python:tests.support.byo_agent"], "expected python:MODULE:FUNCTION"),
        (["--agent", "cmd:x", "--task-timeout", "0"], "--task-timeout must be > 0"),
    ],
)
def test_bad_agents_are_refused_up_front(flags: list[str], message: str) -> None:
    with pytest.raises(EvalInputError, match=message):
        _agent(*flags)


def test_what_a_callable_may_return() -> None:
    assert result_answer("42", "f") == "42"
    assert result_answer(AgentResult("A"), "f") == "A"
    assert result_answer({"answer": "B"}, "f") == "B"
    with pytest.raises(ExternalAgentError, match="reported an error: down"):
        result_answer(AgentResult(None, "down"), "f")
    with pytest.raises(ExternalAgentError, match="returned no answer"):
        result_answer("  ", "f")
    with pytest.raises(ExternalAgentError, match="returned int, not an answer"):
        result_answer(3, "f")


def test_a_sync_callable_that_never_returns_fails_its_task_and_the_loop_still_ends() -> None:
    agent = PythonAgent("tests.support.byo_agent:stuck", Limits(), None, 0.5)
    start = time.monotonic()
    with pytest.raises(ExternalAgentError, match="timed out after 0.5 s"):
        asyncio.run(agent.answer(TASK))  # returns: the stuck thread does not hold up the loop's exit
    assert time.monotonic() - start < 5
    assert asyncio.run(agent.answer(Task(**{**TASK.__dict__, "sample": "s-0001"}))) == "constant"
