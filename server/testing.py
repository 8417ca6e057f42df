"""Run ``finmcp-server`` as a real subprocess on loopback, and stand-ins for tests of any component.

``with ServerProcess(["--inventory", "finmcp65", "--miss", "strict"]) as proc: proc.url`` starts the
installed ``finmcp-server ... --host 127.0.0.1 --port 0`` (or ``python -m MODULE`` for another module
that prints the same ready line), waits (bounded) until it announces its port and ``/healthz``
answers, and stops it on exit (:class:`recordings.plumbing.launch.FinmcpProcess`: stderr goes to a
file, and it and the exit status stay readable after the stop). ``ServerProcess(args, wait_warm=True)``
also waits for the server's warm line (its start-up warm-up has finished: ``/healthz`` ``"warm":
true``); measurements do, tests that only need answers do not (docs/server.md, "Warm-up").
"""

from __future__ import annotations

import json
from typing import Any

from finmcp.recordings.plumbing.launch import LaunchError, LaunchSpec, LoopbackProcess


class ServerStartError(LaunchError):
    """The server process exited or did not become ready in time (message holds its stderr)."""


class ServerProcess(LoopbackProcess):
    """A ``finmcp-server`` HTTP/SSE subprocess bound to 127.0.0.1 on a free port.

    ``ServerProcess(args, timeout=30.0, env=None, module=None, ca_file=None, wait_warm=None)``;
    ``/healthz`` must answer at start; ``wait_warm`` (default off) waits for the warm line too.
    """

    spec = LaunchSpec(
        "finmcp-server", ("--host", "127.0.0.1", "--port", "0"), health_check=True, stop_timeout=5.0
    )
    error_type = ServerStartError


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
