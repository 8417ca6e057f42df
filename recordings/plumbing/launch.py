"""The ready line finmcp programs print, and launching one as a child process on loopback.

``finmcp-server`` and ``finmcp-proxy`` announce on stderr that they accept requests with one line,
``PROGRAM ready: WHERE (DETAIL)`` (WHERE is ``http://HOST:PORT[/mcp]`` or ``stdio``);
:func:`announce_ready` prints it and :func:`parse_ready` reads it back. ``finmcp-server`` goes on
warming its caches after that, and says when it has finished with a second line, ``PROGRAM warm:
WHERE (DETAIL)`` (:func:`announce_warm`, :func:`parse_warm`; its ``/healthz`` says ``"warm": true``).

:class:`FinmcpProcess` starts the installed console script (``finmcp-server`` / ``finmcp-proxy`` next
to ``sys.executable``; ``python -m finmcp.server|proxy`` only when the script is absent, or ``python -m
MODULE`` for another module that prints the same ready line, such as the bench's relay), sends its
stderr to a temporary file (a pipe could fill up and block the child), waits a bounded time for the
ready line, optionally probes ``/healthz`` and waits for the warm line (``wait_warm``), and stops it
with SIGTERM, then SIGKILL. After :meth:`FinmcpProcess.stop` the exit status
(:attr:`FinmcpProcess.returncode`) and everything the child wrote to stderr
(:meth:`FinmcpProcess.stderr_text`) stay available.
"""

from __future__ import annotations

import json
import os
import re
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any, ClassVar, NoReturn, Self
from urllib.parse import urlsplit

FALLBACK_MODULES = {
    "finmcp-server": "finmcp.server",
    "finmcp-proxy": "finmcp.proxy",
    "finmcp-eval": "finmcp.evaluator",
}
"""``python -m`` module of each console script, for environments where the script is absent."""

# a whole line only (up to its newline): a line read while being written never counts
_ANNOUNCED = re.compile(
    r"^(?P<program>finmcp-[\w-]+) (?P<state>ready|warm): (?P<where>\S+)"
    r"(?: \((?P<detail>[^\n]*)\))?[ \t\r]*\n",
    re.M,
)


def ready_line(program: str, where: str, detail: str, state: str = "ready") -> str:
    """``PROGRAM ready: WHERE (DETAIL)`` (``state`` ``warm``: the warm line)."""
    return f"{program} {state}: {where} ({detail})"


def announce_ready(program: str, where: str, detail: str, stream: IO[str] | None = None) -> None:
    """Print the ready line on stderr (or ``stream``) and flush it: the program now accepts requests."""
    print(ready_line(program, where, detail), file=stream or sys.stderr, flush=True)


def announce_warm(program: str, where: str, detail: str, stream: IO[str] | None = None) -> None:
    """Print the warm line, ``PROGRAM warm: WHERE (DETAIL)``, after the ready line: start-up work is done."""
    print(ready_line(program, where, detail, "warm"), file=stream or sys.stderr, flush=True)


@dataclass(frozen=True)
class Ready:
    """A parsed ready line."""

    program: str
    where: str
    detail: str

    @property
    def base(self) -> str:
        """``scheme://host:port`` of an HTTP listener (``""`` for stdio)."""
        parts = urlsplit(self.where)
        return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""

    @property
    def port(self) -> int:
        """The listener's port (0 for stdio)."""
        return (urlsplit(self.where).port or 0) if self.base else 0


def parse_ready(text: str, program: str | None = None, state: str = "ready") -> Ready | None:
    """The first complete ready line in ``text`` (of ``program`` when given), or None.

    ``state="warm"``: the first warm line instead (:func:`parse_warm`).
    """
    for match in _ANNOUNCED.finditer(text):
        if match["state"] == state and (program is None or match["program"] == program):
            return Ready(match["program"], match["where"], match["detail"] or "")
    return None


def parse_warm(text: str, program: str | None = None) -> Ready | None:
    """The first complete warm line in ``text`` (of ``program`` when given), or None."""
    return parse_ready(text, program, "warm")


def command_for(program: str, module: str | None = None) -> list[str]:
    """The argv prefix that runs ``program``: its console script, else ``python -m`` its module."""
    if module is not None:
        return [sys.executable, "-m", module]
    script = Path(sys.executable).parent / program
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", FALLBACK_MODULES[program]]


WARM_TIMEOUT = 180.0
"""Seconds :class:`FinmcpProcess` waits for the warm line after the ready line (``wait_warm``): the
server's warm-up takes ~6 s of CPU alone, several times that on a loaded 2-core machine."""


class LaunchError(RuntimeError):
    """The process exited or did not become ready in time (the message holds its stderr)."""


class StartStop:
    """``with thing:`` runs ``start()`` (which returns the thing) and, on the way out, ``stop()``."""

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> object:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


@dataclass(frozen=True)
class LaunchSpec:
    """How to run one program on loopback: its name, the arguments that bind it, waits and checks."""

    program: str
    listen: tuple[str, ...]
    timeout: float = 30.0
    health_check: bool = False
    stop_timeout: float = 10.0
    wait_warm: bool = False
    warm_timeout: float = WARM_TIMEOUT


class FinmcpProcess(StartStop):
    """One finmcp program as a child process that announces itself with a ready line.

    ``args`` are passed as given (the caller adds ``--host 127.0.0.1 --port 0``). ``error``
    is the :class:`LaunchError` subclass raised when start-up fails. ``wait_warm``: :meth:`start`
    returns only once the program has also printed its warm line (at most ``warm_timeout`` s more):
    for measurements, which the server's start-up warm-up would otherwise share the CPU with.
    """

    def __init__(
        self,
        program: str,
        args: Sequence[str],
        *,
        timeout: float = 30.0,
        env: Mapping[str, str] | None = None,
        module: str | None = None,
        health_check: bool = False,
        stop_timeout: float = 10.0,
        error: type[LaunchError] = LaunchError,
        ca_file: str | None = None,
        wait_warm: bool = False,
        warm_timeout: float = WARM_TIMEOUT,
    ) -> None:
        self.program = program
        self.wait_warm = wait_warm
        self.warm_timeout = warm_timeout
        self.warm: Ready | None = None
        """The warm line, once seen (:meth:`start` with ``wait_warm``, or :meth:`wait_until_warm`)."""
        self.ca_file = ca_file  # trusted for the /healthz check of an https listener
        self.args = list(args)
        self.module = module
        self.timeout = timeout
        self.env = {**os.environ, **(env or {})}
        self.health_check = health_check
        self.stop_timeout = stop_timeout
        self.error = error
        self.process: subprocess.Popen[bytes] | None = None
        self.ready: Ready | None = None
        self.base = ""
        self.port = 0
        self._log = tempfile.NamedTemporaryFile(prefix=f"{program}-", suffix=".log", delete=False)  # noqa: SIM115
        self._stderr: str | None = None  # the whole stderr, kept once the log file is gone

    @property
    def url(self) -> str:
        """The Streamable HTTP endpoint ``base + /mcp``."""
        return f"{self.base}/mcp"

    def endpoint(self, path: str) -> str:
        """``base + path``."""
        return f"{self.base}{path}"

    def tagged(self, run: str | None = None, sample: str | None = None, turn: int | None = None) -> str:
        """The endpoint with the proxy's ``/r/{run}/s/{sample}/t/{turn}`` tags (each optional)."""
        parts = [
            f"/r/{run}" if run else "",
            f"/s/{sample}" if sample else "",
            "" if turn is None else f"/t/{turn}",
        ]
        return self.base + "".join(parts) + "/mcp"

    @property
    def log_path(self) -> Path:
        """The temporary file that receives stderr (removed by :meth:`stop`, its text kept)."""
        return Path(self._log.name)

    @property
    def returncode(self) -> int | None:
        """The exit status once the process has ended (negative: killed by that signal), else None."""
        return self.process.poll() if self.process is not None else None

    def stderr_text(self) -> str:
        """Everything the process wrote to stderr so far (all of it, after :meth:`stop`)."""
        if self._stderr is not None:
            return self._stderr
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def command(self) -> list[str]:
        """The full command line this launcher runs."""
        return [*command_for(self.program, self.module), *self.args]

    def start(self) -> Self:
        """Start the process and wait until it is ready (raises ``self.error``)."""
        self.process = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._log,
            env=self.env,
        )
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self._fail(f"{self.program} exited with {self.process.returncode}")
            ready = parse_ready(self.stderr_text(), self.program)
            if ready is not None:
                self.ready, self.base, self.port = ready, ready.base, ready.port
                if self.health_check:
                    try:
                        self.health()
                    except OSError as exc:  # urllib's HTTPError/URLError are OSErrors
                        self._fail(f"{self.program} at {self.base} has no working /healthz ({exc})")
                if self.wait_warm:
                    self.wait_until_warm()
                return self
            time.sleep(0.03)
        self._fail(f"{self.program} not ready after {self.timeout} s")

    def wait_until_warm(self, timeout: float | None = None) -> Ready:
        """Wait for the warm line (at most ``timeout``, default ``warm_timeout``, seconds); raises
        ``self.error`` (and stops the process) when it exits or stays cold that long."""
        if self.process is None:
            raise self.error(f"{self.program} was not started")
        limit = self.warm_timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        while self.warm is None:
            self.warm = parse_warm(self.stderr_text(), self.program)
            if self.warm is not None:
                break
            if self.process.poll() is not None:
                self._fail(f"{self.program} exited with {self.process.returncode} before it was warm")
            if time.monotonic() >= deadline:
                self._fail(f"{self.program} not warm {limit} s after it was ready")
            time.sleep(0.03)
        return self.warm

    def _fail(self, what: str) -> NoReturn:
        message = f"{what}:\n{self.stderr_text()}"
        self.stop()
        raise self.error(message) from None

    def health(self) -> dict[str, Any]:
        """The ``/healthz`` JSON."""
        handlers: list[urllib.request.BaseHandler] = [urllib.request.ProxyHandler({})]  # loopback: no proxy
        if self.base.startswith("https:"):
            handlers.append(
                urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=self.ca_file))
            )
        opener = urllib.request.build_opener(*handlers)
        with opener.open(f"{self.base}/healthz", timeout=5) as response:
            return json.loads(response.read())

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after ``stop_timeout`` s; keeps stderr in memory, removes the log file.

        Returns the exit status (None when the process never started).
        """
        process = self.process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        if self._stderr is None:
            path = self.log_path
            self._log.close()
            try:
                self._stderr = path.read_text(encoding="utf-8", errors="replace")
            except FileNotFoundError:
                self._stderr = ""
            path.unlink(missing_ok=True)
        return self.returncode


class LoopbackProcess(FinmcpProcess):
    """A program on 127.0.0.1 and a free port, configured by the subclass's ``spec`` and ``error_type``."""

    spec: ClassVar[LaunchSpec]
    error_type: ClassVar[type[LaunchError]] = LaunchError

    def __init__(
        self,
        args: Sequence[str],
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        module: str | None = None,
        ca_file: str | None = None,
        wait_warm: bool | None = None,
    ) -> None:
        """``wait_warm`` None: the spec's (:class:`LaunchSpec`)."""
        spec = self.spec
        super().__init__(
            spec.program,
            [*args, *spec.listen],
            timeout=spec.timeout if timeout is None else timeout,
            env=env,
            module=module,
            health_check=spec.health_check,
            stop_timeout=spec.stop_timeout,
            error=self.error_type,
            ca_file=ca_file,
            wait_warm=spec.wait_warm if wait_warm is None else wait_warm,
            warm_timeout=spec.warm_timeout,
        )
