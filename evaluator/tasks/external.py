"""Any program or Python callable as the harness's agent: ``--agent cmd:'…'`` and ``--agent python:m:f``.

Both are :class:`evaluator.agents.base.Agent` s: per (sample, trial, turn) they build the task
(:func:`evaluator.tasks.build.make_task`, what ``finmcp-eval tasks`` writes) and hand it over; the
agent makes its own tool calls at the task's ``mcp_url`` (through the proxy, so the trace has them)
and returns the answer. Everything else is the harness's: concurrency, trials, resume, shards, Ray,
progress, the report. A failure (see :mod:`evaluator.tasks.process`; a callable that raises,
returns nothing or runs past ``--task-timeout``) fails that sample, with its reason in the run state,
the ``answers`` table and the report; the run goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import os
import shlex
import sys
import threading
from collections.abc import Callable
from typing import Any

from finmcp.evaluator.agents.base import TurnContext, TurnResult
from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.tasks.build import Offer, make_task
from finmcp.evaluator.tasks.model import AgentResult, Limits, Task
from finmcp.evaluator.tasks.process import TaskProgramError, run_program

KINDS = ("cmd", "python")
DEFAULT_TIMEOUT = 600.0


class ExternalAgentError(RuntimeError):
    """An outside agent gave no answer for a task (the message says why)."""


def split_agent(spec: str) -> tuple[str, str | None]:
    """``--agent`` as ``(kind, target)``: ``oracle`` -> ``("oracle", None)``, ``cmd:prog arg`` ->
    ``("cmd", "prog arg")``, ``python:pkg.mod:fn`` -> ``("python", "pkg.mod:fn")``."""
    kind, sep, target = spec.partition(":")
    if not sep:
        return spec, None
    if kind not in KINDS:
        raise EvalInputError(
            f"--agent {spec!r}: expected oracle, noisy, openai, cmd:COMMAND or python:MODULE:FUNCTION"
        )
    if not target.strip():
        raise EvalInputError(
            f"--agent {kind}: needs what to run after the colon, e.g. {kind}:{_example(kind)}"
        )
    return kind, target


def _example(kind: str) -> str:
    return "'python my_agent.py'" if kind == "cmd" else "my_pkg.agent:solve"


def load_callable(target: str) -> Callable[..., Any]:
    """The function named ``pkg.module:function`` (an attribute path after the colon may be dotted);
    modules of the current folder are found as ``python -m`` finds them."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise EvalInputError(
            f"--agent python:{target}: expected python:MODULE:FUNCTION, e.g. python:my_pkg.agent:solve"
        )
    if os.getcwd() not in sys.path and "" not in sys.path:  # as `python -m` finds it: the folder's modules
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:  # ImportError, or the module's own error at import
        raise EvalInputError(
            f"--agent python:{target}: cannot import {module_name}: {type(exc).__name__}: {exc}"
        ) from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise EvalInputError(f"--agent python:{target}: {module_name} has no {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise EvalInputError(f"--agent python:{target}: {attr!r} is not callable")
    return obj


def result_answer(value: Any, label: str) -> str:
    """The answer of what a callable returned: a string, an :class:`AgentResult` (or any object with
    ``answer``/``error``), or a dict with those keys; :class:`ExternalAgentError` for none."""
    answer: Any
    error: Any
    if isinstance(value, str):
        answer, error = value, None
    elif isinstance(value, dict):
        answer, error = value.get("answer"), value.get("error")
    elif isinstance(value, AgentResult) or hasattr(value, "answer"):
        answer, error = getattr(value, "answer", None), getattr(value, "error", None)
    else:
        raise ExternalAgentError(f"returned {type(value).__name__}, not an answer (str or AgentResult)")
    if error:
        raise ExternalAgentError(f"reported an error: {error}")
    if answer is None or not str(answer).strip():
        raise ExternalAgentError("returned no answer")
    return str(answer)


class ExternalAgent:
    """The shared half of ``cmd:`` and ``python:``: the task of a turn, the timeout, the answer."""

    name = "external"

    def __init__(self, limits: Limits, top_k: int | None, timeout: float) -> None:
        if timeout <= 0:
            raise EvalInputError("--task-timeout must be > 0")
        self.limits = limits
        self.top_k = top_k
        self.timeout = timeout
        self._offer: tuple[int, Offer] | None = None

    def task(self, ctx: TurnContext) -> Task:
        """The task of this turn (the same as ``finmcp-eval tasks`` writes for it)."""
        if self._offer is None or self._offer[0] != id(ctx.tools):
            self._offer = (id(ctx.tools), Offer(ctx.tools))
        url = str(getattr(ctx.session, "url", ""))
        return make_task(
            ctx.sample,
            ctx.turn,
            ctx.trial,
            ctx.run,
            url,
            ctx.messages,
            self._offer[1],
            self.limits,
            self.top_k,
        )

    async def run_turn(self, ctx: TurnContext) -> TurnResult:
        """Hand the turn's task to the agent; its answer is the turn's reply."""
        return TurnResult(await self.answer(self.task(ctx)))

    async def answer(self, task: Task) -> str:
        """The agent's answer to ``task``."""
        raise NotImplementedError

    async def aclose(self) -> None:
        """Nothing to release."""


class CommandAgent(ExternalAgent):
    """``--agent cmd:COMMAND``: the command (split like a shell would, no shell) runs once per task."""

    def __init__(self, command: str, limits: Limits, top_k: int | None, timeout: float) -> None:
        super().__init__(limits, top_k, timeout)
        try:
            self.argv = shlex.split(command)
        except ValueError as exc:
            raise EvalInputError(f"--agent cmd:{command}: {exc}") from None
        if not self.argv:
            raise EvalInputError("--agent cmd: needs a command")
        self.name = f"cmd:{command}"
        self.label = repr(command)

    async def answer(self, task: Task) -> str:
        try:
            return await run_program(self.argv, task, self.timeout, self.label)
        except TaskProgramError as exc:
            raise ExternalAgentError(str(exc)) from None


class PythonAgent(ExternalAgent):
    """``--agent python:MODULE:FUNCTION``: ``FUNCTION(task)`` per task, awaited when it is async,
    else run in a worker thread (a sync call past the timeout fails the turn but cannot be stopped)."""

    def __init__(self, target: str, limits: Limits, top_k: int | None, timeout: float) -> None:
        super().__init__(limits, top_k, timeout)
        self.function = load_callable(target)
        self.name = f"python:{target}"
        self.label = target

    async def answer(self, task: Task) -> str:
        if inspect.iscoroutinefunction(self.function):
            pending: Any = self.function(task)
        else:
            pending = in_daemon_thread(self.function, task)
        try:
            value = await asyncio.wait_for(pending, self.timeout)
            if inspect.isawaitable(value):  # a sync function that returned a coroutine
                value = await asyncio.wait_for(value, self.timeout)
        except TimeoutError:
            raise ExternalAgentError(f"timed out after {self.timeout:g} s") from None
        return result_answer(value, self.label)


def in_daemon_thread(function: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
    """``function(*args)`` in a daemon thread of its own, as a future of this loop: a sync agent that
    never returns fails its task at the timeout without holding up the run's exit (as the loop's
    default executor, which waits for its threads at shutdown, would)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(value: Any, error: BaseException | None) -> None:
        if future.done():  # timed out meanwhile
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def work() -> None:
        try:
            value = function(*args)
        except BaseException as exc:  # handed to the awaiting task
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
                loop.call_soon_threadsafe(settle, None, exc)
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, value, None)

    threading.Thread(target=work, name="finmcp-python-agent", daemon=True).start()
    return future


def make_external_agent(
    kind: str, target: str, limits: Limits, top_k: int | None, timeout: float
) -> ExternalAgent:
    """The ``cmd:`` or ``python:`` agent of ``--agent``."""
    if kind == "cmd":
        return CommandAgent(target, limits, top_k, timeout)
    return PythonAgent(target, limits, top_k, timeout)
