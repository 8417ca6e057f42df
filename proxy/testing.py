"""Run ``finmcp-proxy`` as a real subprocess on loopback (tests and benchmarks).

``with ProxyProcess(["--upstream", url, "--db", db]) as proxy: proxy.url`` starts
``python -m proxy ... --listen 127.0.0.1:0``, waits (bounded) for its ready line and stops it on exit
(SIGTERM, so the trace writer commits what is queued). ``stdio_args`` builds the command line a
host would launch for ``--transport stdio``.
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
from pathlib import Path
from types import TracebackType
from typing import Self

_READY = re.compile(r"finmcp-proxy ready: (http://127\.0\.0\.1:(\d+))/mcp")


class ProxyStartError(RuntimeError):
    """The proxy exited or did not become ready in time (message holds its stderr)."""


class ProxyProcess:
    """A ``finmcp-proxy`` HTTP listener on 127.0.0.1 and a free port."""

    def __init__(
        self,
        args: Sequence[str],
        timeout: float = 20.0,
        env: dict[str, str] | None = None,
        module: str = "proxy",
    ) -> None:
        self.args = [*args, "--listen", "127.0.0.1:0"]
        self.module = module  # another module printing the same ready line (the bench's bare relay)
        self.timeout = timeout
        self.env = {**os.environ, **(env or {})}
        self.process: subprocess.Popen[bytes] | None = None
        self.base = ""
        self.port = 0
        self._log = tempfile.NamedTemporaryFile(prefix="finmcp-proxy-", suffix=".log", delete=False)  # noqa: SIM115

    @property
    def url(self) -> str:
        """The proxy's untagged endpoint."""
        return f"{self.base}/mcp"

    def tagged(self, run: str | None = None, sample: str | None = None, turn: int | None = None) -> str:
        """The endpoint with ``/r/{run}/s/{sample}/t/{turn}`` tags (each optional)."""
        parts = [
            f"/r/{run}" if run else "",
            f"/s/{sample}" if sample else "",
            "" if turn is None else f"/t/{turn}",
        ]
        return self.base + "".join(parts) + "/mcp"

    def stderr_text(self) -> str:
        return Path(self._log.name).read_text(encoding="utf-8", errors="replace")

    def start(self) -> Self:
        command = [sys.executable, "-m", self.module, *self.args]
        self.process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._log, env=self.env
        )
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                message = f"finmcp-proxy exited with {self.process.returncode}:\n{self.stderr_text()}"
                self.stop()
                raise ProxyStartError(message)
            match = _READY.search(self.stderr_text())
            if match:
                self.base, self.port = match.group(1), int(match.group(2))
                return self
            time.sleep(0.03)
        message = f"finmcp-proxy not ready after {self.timeout} s:\n{self.stderr_text()}"
        self.stop()
        raise ProxyStartError(message)

    def stop(self) -> None:
        """SIGTERM (the writer commits what is queued), SIGKILL after 10 s; removes the log file."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        self._log.close()
        Path(self._log.name).unlink(missing_ok=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def stdio_args(upstream: Sequence[str], db: str | Path, *extra: str) -> list[str]:
    """Arguments for ``python -m proxy --transport stdio`` (what an MCP host launches)."""
    return ["-m", "proxy", "--transport", "stdio", *upstream, "--db", str(db), *extra]
