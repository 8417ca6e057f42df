"""Child processes that fail the test when something went wrong inside them.

:class:`Children` starts ``finmcp-server`` and ``finmcp-proxy`` (through ``server.testing.ServerProcess``
and ``proxy.testing.ProxyProcess``) and, when closed, stops them newest first and reports every problem:

- the child is no longer running when the test ends (it died on its own);
- for a proxy: ``/healthz`` (read before stopping) reports ``write_failures`` other than 0;
- after SIGTERM it does not exit, or exits with another code than it does today: the proxy returns 0
  (:data:`PROXY_SIGTERM_EXIT`), the server dies by the re-raised signal, -15
  (:data:`SERVER_SIGTERM_EXIT`: uvicorn shuts down gracefully, then re-raises the signal it caught);
- its stderr holds a traceback or an ERROR/CRITICAL log record.

A test that breaks a child on purpose says so: ``allow=`` lists regular expressions of the stderr
records it expects, ``killed=True`` marks a child the test kills itself (its exit is the test's to
assert; stderr is still checked), and ``check=False`` turns every check off.
"""

from __future__ import annotations

import re
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from finmcp.proxy.testing import ProxyProcess
from finmcp.server.testing import ServerProcess

SERVER_SIGTERM_EXIT = -signal.SIGTERM
PROXY_SIGTERM_EXIT = 0
STOP_TIMEOUT_S = 15.0

# A log record starts with the line format both CLIs configure ("2026-01-01 12:00:00,123 name LEVEL msg"),
# uvicorn's own ("ERROR:    msg"), or the programs' plain notices ("finmcp-proxy: ...").
_RECORD_START = re.compile(r"^(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} \S+ [A-Z]+ |[A-Z]+:\s|finmcp-\w+[ :])")
_BAD_RECORD = re.compile(
    r"^(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} \S+ (?:ERROR|CRITICAL) |(?:ERROR|CRITICAL):\s)"
)
_TRACEBACK = "Traceback (most recent call last)"


def stderr_records(text: str) -> list[str]:
    """Split a child's stderr into log records (continuation lines such as tracebacks join their record)."""
    records: list[str] = []
    for line in text.splitlines():
        if records and not _RECORD_START.match(line):
            records[-1] += "\n" + line
        else:
            records.append(line)
    return records


def stderr_problems(text: str, allow: Sequence[str] = ()) -> list[str]:
    """The records of ``text`` holding an ERROR/CRITICAL level or a traceback, except those ``allow``ed."""
    return [
        record
        for record in stderr_records(text)
        if (_BAD_RECORD.match(record) or _TRACEBACK in record)
        and not any(re.search(pattern, record) for pattern in allow)
    ]


def health(proc: ServerProcess | ProxyProcess) -> dict[str, Any]:
    """The child's ``/healthz`` JSON (needs no token on either program; https trusts the child's ``ca_file``)."""
    return proc.health()


@dataclass
class Child:
    """A started process and what its end must look like."""

    proc: ServerProcess | ProxyProcess
    name: str
    sigterm_exit: int
    allow: Sequence[str] = ()
    killed: bool = False
    check: bool = True
    problems: list[str] = field(default_factory=list)
    stderr: str = ""  # everything the process wrote to stderr, once it is stopped

    def close(self) -> list[str]:
        """Stop the process and return what went wrong in it (empty when all is well)."""
        try:
            process = self.proc.process
            assert process is not None
            found: list[str] = []
            running = process.poll() is None
            if running and isinstance(self.proc, ProxyProcess):
                found += self._write_failures()
            if running:
                process.send_signal(signal.SIGTERM)
                try:
                    code = process.wait(timeout=STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    found.append(f"did not exit within {STOP_TIMEOUT_S} s of SIGTERM")
                else:
                    if code != self.sigterm_exit:
                        found.append(f"exited with {code} after SIGTERM (expected {self.sigterm_exit})")
            elif not self.killed:
                found.append(f"had already exited with {process.returncode} before the test ended")
            self.stderr = self.proc.stderr_text()
            found += [f"stderr holds:\n{record}" for record in stderr_problems(self.stderr, self.allow)]
            if found and self.check:
                tail = "\n".join(self.stderr.splitlines()[-40:])
                self.problems = [f"{self.name} (pid {process.pid}): {problem}" for problem in found]
                self.problems.append(f"{self.name} stderr (last 40 lines):\n{tail}")
        finally:
            self.proc.stop()  # kills what is left, removes the stderr log
        return self.problems

    def _write_failures(self) -> list[str]:
        try:
            failures = health(self.proc).get("write_failures")
        except OSError as exc:
            return [f"/healthz did not answer before the stop: {exc}"]
        return [] if failures == 0 else [f"/healthz reports write_failures={failures}"]


class Children:
    """Start servers and proxies for one test or module; :meth:`close` stops them and reports problems.

    Use it as a context manager (the ``with`` block fails when a child misbehaved) or through the
    ``server_process``/``proxy_process`` fixtures of ``tests/conftest.py``.
    """

    def __init__(self) -> None:
        self._children: list[Child] = []
        self._stopped: list[Child] = []

    def server(
        self,
        args: Sequence[str],
        *,
        allow: Sequence[str] = (),
        killed: bool = False,
        check: bool = True,
        **options: Any,
    ) -> ServerProcess:
        """Start ``finmcp-server ARGS`` on a free loopback port (``options`` go to ``ServerProcess``)."""
        proc = ServerProcess(list(args), **options).start()
        self._children.append(Child(proc, "finmcp-server", SERVER_SIGTERM_EXIT, allow, killed, check))
        return proc

    def proxy(
        self,
        args: Sequence[str],
        *,
        allow: Sequence[str] = (),
        killed: bool = False,
        check: bool = True,
        **options: Any,
    ) -> ProxyProcess:
        """Start ``finmcp-proxy ARGS`` on a free loopback port (``options`` go to ``ProxyProcess``)."""
        proc = ProxyProcess(list(args), **options).start()
        self._children.append(Child(proc, "finmcp-proxy", PROXY_SIGTERM_EXIT, allow, killed, check))
        return proc

    def stop(self, proc: ServerProcess | ProxyProcess) -> str:
        """Stop and check one child now (its problems are reported at :meth:`close`); its whole stderr."""
        child = next(c for c in self._children if c.proc is proc)
        self._children.remove(child)
        self._stopped.append(child)
        child.close()
        return child.stderr

    def close(self) -> list[str]:
        """Stop every child, newest first (a proxy before its upstream); the problems found."""
        problems = [p for child in self._stopped for p in child.problems]
        self._stopped.clear()
        while self._children:
            problems += self._children.pop().close()
        return problems

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        problems = self.close()
        if not problems:
            return
        report = "a child process misbehaved:\n" + "\n".join(problems)
        if exc is not None:  # keep the test's own failure; the children's problems ride along
            exc.add_note(report)
            return
        raise ChildProblem(report)


class ChildProblem(AssertionError):
    """A child process died, logged an error, failed a write or stopped badly."""
