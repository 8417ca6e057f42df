"""Run one task program (``--agent cmd:``): the task in, the answer out, every failure said plainly.

The program starts in its own process group with the task JSON on stdin and in a file
(``FINMCP_TASK_FILE``), and the tagged doors in its environment (:func:`task_env`). Its stdout is
the answer (at most :data:`STDOUT_LIMIT` bytes: a program that prints more is killed and the turn
fails, saying it was cut); its stderr is kept, the last :data:`STDERR_LIMIT` bytes, to explain a
failure. After ``timeout`` seconds the whole process group is killed (SIGKILL). A crash (non-zero
status), a kill, a hang or an empty stdout raise :class:`TaskProgramError` (an empty answer is given
explicitly, as ``{"answer": ""}``), whose message names the
program, what happened and the end of its stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import tempfile
from pathlib import Path
from typing import Any

from finmcp.evaluator.tasks.model import Task

STDOUT_LIMIT = 1 << 20
"""Bytes of stdout read as the answer (1 MiB)."""
STDERR_LIMIT = 64 << 10
"""Bytes of stderr kept (the last 64 KiB)."""
STDERR_SHOWN = 2000
"""Characters of the kept stderr an error message quotes (its end)."""
KILL_GRACE = 5.0
"""Seconds to wait for the pipes to close after the process group was killed."""


class TaskProgramError(RuntimeError):
    """A task program that gave no answer: crashed, hung, printed nothing or too much."""


def task_env(task: Task, task_file: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a task program: ``base`` (default: this process's) plus the task's doors.

    ``FINMCP_TASK_FILE``, ``FINMCP_MCP_URL``, ``FINMCP_MODEL_URL``, ``FINMCP_RUN``, ``FINMCP_SAMPLE``,
    ``FINMCP_TURN``, ``FINMCP_TRIAL``; the OpenAI SDKs' ``OPENAI_BASE_URL`` and LangChain's
    ``OPENAI_API_BASE`` (the tagged ``…/v1``), and ``ANTHROPIC_BASE_URL`` (the same without ``/v1``:
    the Anthropic SDK adds it)."""
    env = dict(os.environ if base is None else base)
    root = task.model_url.removesuffix("/v1")
    env.update(
        FINMCP_TASK_FILE=str(task_file),
        FINMCP_MCP_URL=task.mcp_url,
        FINMCP_MODEL_URL=task.model_url,
        FINMCP_RUN=task.run,
        FINMCP_SAMPLE=task.sample,
        FINMCP_TURN=str(task.turn),
        FINMCP_TRIAL=str(task.trial),
        OPENAI_BASE_URL=task.model_url,
        OPENAI_API_BASE=task.model_url,
        ANTHROPIC_BASE_URL=root,
    )
    return env


class _Bounded:
    """What a pipe gave: the first (``keep="head"``) or last (``"tail"``) ``limit`` bytes, and the total."""

    def __init__(self, limit: int, keep: str) -> None:
        self.limit = limit
        self.keep = keep
        self.data = bytearray()
        self.total = 0
        self.over = asyncio.Event()

    async def drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            self.total += len(chunk)
            if self.keep == "head":
                room = self.limit - len(self.data)
                self.data += chunk[: max(room, 0)]
                if self.total > self.limit:
                    self.over.set()
                    return
            else:
                self.data += chunk
                if len(self.data) > self.limit:
                    del self.data[: len(self.data) - self.limit]

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _stderr_note(stderr: _Bounded) -> str:
    text = stderr.text().strip()
    if not text:
        return "; stderr empty"
    shown = text[-STDERR_SHOWN:]
    whole = len(shown) == len(text) and stderr.total == len(stderr.data)
    cut = "stderr" if whole else f"stderr (last {len(shown)} characters of {stderr.total} bytes)"
    return f"; {cut}:\n{shown}"


def parse_answer(text: str) -> tuple[str | None, str | None]:
    """``(answer, error)`` of a program's stdout: the text (None when blank), or a JSON object's
    ``answer``/``error`` (``{"answer": ""}``: an explicit empty answer, e.g. a multi-turn sample's
    closing turn whose gold reply is empty)."""
    text = text.strip()
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict) and ("answer" in data or "error" in data):
            answer, error = data.get("answer"), data.get("error")
            return (None if answer is None else str(answer)), (None if error is None else str(error))
    return text or None, None


async def run_program(argv: list[str], task: Task, timeout: float, label: str) -> str:
    """Run ``argv`` on ``task``; its answer, or :class:`TaskProgramError` (see the module docstring)."""
    folder = Path(tempfile.mkdtemp(prefix="finmcp-task-"))
    try:
        task_file = folder / "task.json"
        text = task.to_json()
        task_file.write_text(text, "utf-8")
        return await _run(argv, text, task_env(task, task_file), timeout, label)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


async def _run(argv: list[str], text: str, env: dict[str, str], timeout: float, label: str) -> str:
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        raise TaskProgramError(f"cannot start {label}: {exc}") from None
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    stdout, stderr = _Bounded(STDOUT_LIMIT, "head"), _Bounded(STDERR_LIMIT, "tail")
    stdin = proc.stdin

    async def feed() -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # it need not read stdin
            stdin.write(text.encode("utf-8") + b"\n")
            await stdin.drain()
            stdin.close()

    readers = asyncio.gather(feed(), stdout.drain(proc.stdout), stderr.drain(proc.stderr))
    killed = ""
    try:
        overflow: asyncio.Future[Any] = asyncio.ensure_future(stdout.over.wait())
        finished: asyncio.Future[Any] = asyncio.ensure_future(asyncio.gather(readers, proc.wait()))
        done, _ = await asyncio.wait({overflow, finished}, timeout=timeout, return_when="FIRST_COMPLETED")
        if finished not in done:
            killed = (
                f"printed more than {STDOUT_LIMIT} bytes on stdout (cut there)"
                if overflow in done
                else f"timed out after {timeout:g} s"
            )
            _kill_group(proc.pid)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(finished), KILL_GRACE)
        overflow.cancel()
        if not finished.done():  # a grandchild left the group and holds the pipes: stop reading
            finished.cancel()
            readers.cancel()
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
    except BaseException:
        _kill_group(proc.pid)
        readers.cancel()
        raise
    finally:
        _kill_group(proc.pid)  # whatever it left running in its group
    if killed:
        raise TaskProgramError(f"{killed}; process group killed{_stderr_note(stderr)}")
    if proc.returncode != 0:
        how = (
            f"killed by signal {-proc.returncode}"
            if proc.returncode is not None and proc.returncode < 0
            else f"exited with status {proc.returncode}"
        )
        raise TaskProgramError(f"{how}{_stderr_note(stderr)}")
    answer, error = parse_answer(stdout.text())
    if error is not None:
        raise TaskProgramError(f"reported an error: {error}")
    if answer is None:
        raise TaskProgramError(f"printed no answer on stdout{_stderr_note(stderr)}")
    return answer
