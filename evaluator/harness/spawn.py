"""Start ``finmcp-server`` and ``finmcp-proxy`` as child processes on free 127.0.0.1 ports (``--spawn``).

The harness talks to them only over HTTP: ``python -m server`` and ``python -m proxy`` are launched
with ``--port 0`` / ``--listen 127.0.0.1:0`` and the ports are read from their ready lines on stderr
(stderr goes to a file, so a full pipe can never block a child).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Self

SERVER_READY = re.compile(r"finmcp-server ready: (http://127\.0\.0\.1:\d+)")
PROXY_READY = re.compile(r"finmcp-proxy ready: (http://127\.0\.0\.1:\d+)/mcp")


class SpawnError(RuntimeError):
    """A child process exited or did not announce itself in time (the message holds its stderr)."""


class ChildProcess:
    """``python -m MODULE ARGS`` with stderr in a temporary file; ``base`` is read from its ready line."""

    def __init__(
        self, module: str, args: Sequence[str], ready: re.Pattern[str], timeout: float = 60.0
    ) -> None:
        self.module = module
        self.args = list(args)
        self.ready = ready
        self.timeout = timeout
        self.process: subprocess.Popen[bytes] | None = None
        self.base = ""
        self._log = tempfile.NamedTemporaryFile(prefix=f"finmcp-{module}-", suffix=".log", delete=False)  # noqa: SIM115

    def stderr_text(self) -> str:
        """What the child wrote to stderr so far."""
        return Path(self._log.name).read_text(encoding="utf-8", errors="replace")

    def start(self) -> Self:
        """Launch and wait (bounded) for the ready line; raises :class:`SpawnError`."""
        command = [sys.executable, "-m", self.module, *self.args]
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._log,
            env=dict(os.environ),
        )
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                message = f"{self.module} exited with status {self.process.returncode}:\n{self.stderr_text()}"
                self.stop()
                raise SpawnError(message)
            match = self.ready.search(self.stderr_text())
            if match:
                self.base = match.group(1)
                return self
            time.sleep(0.03)
        message = f"{self.module} not ready after {self.timeout} s:\n{self.stderr_text()}"
        self.stop()
        raise SpawnError(message)

    def stop(self) -> None:
        """SIGTERM (the proxy's writer commits what is queued), SIGKILL after 10 s; removes the log."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        self._log.close()
        Path(self._log.name).unlink(missing_ok=True)


@dataclass
class SpawnConfig:
    """What ``--spawn`` starts: a server over one inventory and a logging proxy in front of it."""

    db: Path
    inventory: str = "finmcp65"
    recordings: Path | None = None
    miss: str = "simulate"
    latency: str = "none"
    seed: int = 0
    group_gap_ms: float = 0.0
    """0: the proxy joins groups only by overlap (the harness issues dependent calls back to back)."""
    extra_server_args: list[str] = field(default_factory=list)


class Stack:
    """Server + proxy children; ``proxy_url`` is the untagged proxy endpoint base (``http://host:port``)."""

    def __init__(self, config: SpawnConfig) -> None:
        self.config = config
        self.server: ChildProcess | None = None
        self.proxy: ChildProcess | None = None

    @property
    def proxy_base(self) -> str:
        """``http://127.0.0.1:PORT`` of the proxy."""
        return self.proxy.base if self.proxy else ""

    @property
    def server_url(self) -> str:
        """The server's ``/mcp`` endpoint."""
        return f"{self.server.base}/mcp" if self.server else ""

    def start(self) -> Self:
        """Start the server, then the proxy pointing at it."""
        c = self.config
        server_args = [
            "--inventory",
            c.inventory,
            "--miss",
            c.miss,
            "--latency",
            c.latency,
            "--seed",
            str(c.seed),
        ]
        if c.recordings is not None:
            server_args += ["--recordings", str(c.recordings)]
        server_args += [*c.extra_server_args, "--host", "127.0.0.1", "--port", "0"]
        self.server = ChildProcess("server", server_args, SERVER_READY).start()
        proxy_args = [
            "--upstream",
            self.server_url,
            "--db",
            str(c.db),
            "--group-gap-ms",
            str(c.group_gap_ms),
            "--listen",
            "127.0.0.1:0",
        ]
        try:
            self.proxy = ChildProcess("proxy", proxy_args, PROXY_READY).start()
        except BaseException:
            self.server.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the proxy first (it commits its queue), then the server."""
        for child in (self.proxy, self.server):
            if child is not None:
                child.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
