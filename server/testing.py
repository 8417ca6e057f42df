"""Run ``finmcp-server`` as a real subprocess on loopback (for tests and benchmarks of any component).

``with ServerProcess(["--inventory", "finmcp65", "--miss", "strict"]) as proc: proc.url`` starts
``python -m server ... --host 127.0.0.1 --port 0`` (or another module that prints the same ready
line), waits (bounded) until it announces its port and
``/healthz`` answers, and stops it on exit. stderr goes to a file so the pipe can never block.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

_READY = re.compile(r"finmcp-server ready: (http://127\.0\.0\.1:(\d+))")


class ServerStartError(RuntimeError):
    """The server process exited or did not become ready in time (message holds its stderr)."""


class ServerProcess:
    """A ``finmcp-server`` HTTP/SSE subprocess bound to 127.0.0.1 on a free port."""

    def __init__(
        self,
        args: Sequence[str],
        timeout: float = 30.0,
        env: dict[str, str] | None = None,
        module: str = "server",
    ) -> None:
        self.module = module
        self.args = [*args, "--host", "127.0.0.1", "--port", "0"]
        self.timeout = timeout
        self.env = {**os.environ, **(env or {})}
        self.process: subprocess.Popen[bytes] | None = None
        self.base = ""
        self.port = 0
        self._log = tempfile.NamedTemporaryFile(prefix="finmcp-server-", suffix=".log", delete=False)  # noqa: SIM115

    @property
    def url(self) -> str:
        """The Streamable HTTP endpoint of a single-inventory server."""
        return f"{self.base}/mcp"

    def endpoint(self, path: str) -> str:
        """``base + path``."""
        return f"{self.base}{path}"

    def stderr_text(self) -> str:
        """Everything the server wrote to stderr so far."""
        return Path(self._log.name).read_text(encoding="utf-8", errors="replace")

    def start(self) -> Self:
        """Start the process and wait until it is ready (raises :class:`ServerStartError`)."""
        command = [sys.executable, "-m", self.module, *self.args]
        self.process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._log, env=self.env
        )
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                message = f"finmcp-server exited with {self.process.returncode}:\n{self.stderr_text()}"
                self.stop()
                raise ServerStartError(message)
            match = _READY.search(self.stderr_text())
            if match:
                self.base, self.port = match.group(1), int(match.group(2))
                try:
                    self.health()
                except OSError as exc:  # urllib's HTTPError/URLError are OSErrors
                    message = (
                        f"finmcp-server at {self.base} has no working /healthz ({exc}):\n{self.stderr_text()}"
                    )
                    self.stop()
                    raise ServerStartError(message) from None
                return self
            time.sleep(0.05)
        message = f"finmcp-server not ready after {self.timeout} s:\n{self.stderr_text()}"
        self.stop()
        raise ServerStartError(message)

    def health(self) -> dict[str, Any]:
        """The ``/healthz`` JSON."""
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never via a proxy
        with opener.open(f"{self.base}/healthz", timeout=5) as response:
            return json.loads(response.read())

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 5 s; removes the log file."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=5)
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


def minimal_instance(schema: Any) -> Any:
    """The smallest value valid for a simple JSON schema (required properties only; first enum value)."""
    if not isinstance(schema, dict):
        return None
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties") or {}
        return {name: minimal_instance(props.get(name, {})) for name in schema.get("required") or []}
    return {"string": "x", "integer": 0, "number": 0.0, "boolean": False, "array": [], "null": None}.get(kind)


class SchemaSimulator:
    """A stand-in simulator for tests: answers every tool with the minimal valid output for its schema.

    Same contract as ``server.sim.Simulator``: ``simulate(tool, arguments) -> MCP result dict``.
    """

    def __init__(self, inventory: Any, seed: int = 0) -> None:
        self.inventory = inventory
        self.seed = seed
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def simulate(self, tool_name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """A deterministic result: the minimal output, as text and as structured content."""
        self.calls.append((tool_name, dict(arguments)))
        spec = self.inventory.get(tool_name)
        structured = minimal_instance(spec.output_schema) if spec and spec.output_schema else None
        text = json.dumps(
            {"tool": tool_name, "arguments": arguments, "output": structured}, ensure_ascii=False
        )
        return {
            "content": [{"type": "text", "text": text}],
            "structuredContent": structured,
            "isError": False,
        }
