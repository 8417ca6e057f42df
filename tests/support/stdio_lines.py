"""``finmcp-proxy --transport stdio`` driven by raw JSON-RPC lines, as a host (or a script) would drive it.

``with StdioLines(["--upstream", url], db, "--run", "r") as proxy: proxy.ask(message)`` starts the
installed console script, writes one line per message and reads its stdout lines on a thread. On
exit it closes stdin (the host went away) and checks that the process ended cleanly: exit code 0 and
no traceback or ERROR record on its stderr.
"""

from __future__ import annotations

import json
import queue
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

from tests.support.processes import stderr_problems
from tests.support.scripts import proxy_stdio_command


class StdioLines:
    """A stdio proxy process and its stdout lines; see the module docstring."""

    def __init__(
        self, upstream: Sequence[str], db: str | Path, *extra: str, hang_guard: float = 10.0
    ) -> None:
        self.command = proxy_stdio_command(upstream, db, *extra)
        self.hang_guard = hang_guard  # not a speed limit: only ends a wait for a line that never comes
        self.stderr = ""
        self._lines: queue.Queue[bytes] = queue.Queue()

    def __enter__(self) -> Self:
        self._log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log
        )
        threading.Thread(target=self._pump, daemon=True).start()
        return self

    def _pump(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        for line in stdout:
            self._lines.put(line)

    def send(self, message: Any) -> None:
        """Write one message as one line."""
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(json.dumps(message).encode() + b"\n")
        stdin.flush()

    def send_raw(self, line: bytes) -> None:
        """Write ``line`` (any bytes, not necessarily JSON) and a newline."""
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(line + b"\n")
        stdin.flush()

    def read(self) -> Any:
        """The next stdout line, parsed."""
        return json.loads(self._lines.get(timeout=self.hang_guard))

    def ask(self, message: Any) -> Any:
        """Send one request and read the next line (its answer, when nothing else is in flight)."""
        self.send(message)
        return self.read()

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        code = self.process.wait(timeout=self.hang_guard)
        self._log.seek(0)
        self.stderr = self._log.read().decode(errors="replace")
        self._log.close()
        if exc_type is None:
            assert code == 0 and stderr_problems(self.stderr) == [], self.stderr
