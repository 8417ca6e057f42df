"""Executors: where a trajectory's calls run.

- :class:`SimExecutor` runs calls in process with ``server.sim.Simulator`` after the same argument
  validation the server applies (fast and deterministic; used to build the shipped benchmark).
- :class:`McpExecutor` runs them against a live MCP endpoint (``finmcp-server``, or ``finmcp-proxy`` in
  front of it) with the SDK client. Run/sample/turn tags go into the URL path when ``tag_template`` is
  given (``http://host:port/r/{run}/s/{sample}/t/{turn}/mcp``: the proxy reads them; the server itself
  only serves ``/mcp``), and the group number into ``params._meta["io.finmcp/group"]``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Protocol
from urllib.parse import quote

import anyio
import jsonschema

from finmcp.server.sim.simulator import Simulator, error_result
from finmcp.tool_specs.inventory import Inventory

GROUP_META_KEY = "io.finmcp/group"

Call = tuple[str, dict[str, Any]]


class Session(Protocol):
    """Runs the calls of one turn, group by group."""

    async def call_group(self, calls: list[Call], group: int) -> list[dict[str, Any]]:
        """Run one group's calls concurrently; return their MCP results ``{content, structuredContent, isError}``."""
        ...


class Executor(Protocol):
    """Opens a session per (sample, turn)."""

    def session(self, sample: str, turn: int) -> Any:
        """An async context manager yielding a :class:`Session`."""
        ...

    def shared(self) -> Any:
        """An async context manager inside which sessions may reuse one connection."""
        ...


class _SimSession:
    def __init__(self, executor: SimExecutor) -> None:
        self.executor = executor

    async def call_group(self, calls: list[Call], group: int) -> list[dict[str, Any]]:
        return [self.executor.call(tool, args) for tool, args in calls]


class SimExecutor:
    """In-process execution with the simulator (validation as the server does it)."""

    def __init__(self, inventory: Inventory, simulator: Simulator) -> None:
        self.inventory = inventory
        self.simulator = simulator
        self._validators: dict[str, jsonschema.protocols.Validator] = {}

    def validator(self, tool: str) -> jsonschema.protocols.Validator:
        """The compiled input-schema validator of ``tool``."""
        if tool not in self._validators:
            schema = self.inventory.require(tool).input_schema
            self._validators[tool] = jsonschema.Draft202012Validator(schema)
        return self._validators[tool]

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """One call: an ``isError`` result for unknown tools and invalid arguments, else the simulation."""
        if tool not in self.inventory:
            return error_result(f"Unknown tool: {tool!r}")
        errors = sorted(self.validator(tool).iter_errors(arguments), key=lambda e: list(e.path))
        if errors:
            where = ".".join(str(p) for p in errors[0].path) or "<arguments>"
            return error_result(f"Invalid arguments for {tool}: {where}: {errors[0].message}")
        return self.simulator.simulate(tool, arguments)

    @asynccontextmanager
    async def session(self, sample: str, turn: int) -> AsyncIterator[_SimSession]:
        yield _SimSession(self)

    @asynccontextmanager
    async def shared(self) -> AsyncIterator[None]:
        """Nothing to share in process."""
        yield None


class _McpSession:
    def __init__(self, client: Any) -> None:
        self.client = client

    async def call_group(self, calls: list[Call], group: int) -> list[dict[str, Any]]:
        results: list[dict[str, Any] | None] = [None] * len(calls)

        async def one(index: int, tool: str, args: dict[str, Any]) -> None:
            result = await self.client.call_tool(tool, args, meta={GROUP_META_KEY: group})
            results[index] = result_dict(result)

        async with anyio.create_task_group() as tg:
            for index, (tool, args) in enumerate(calls):
                tg.start_soon(one, index, tool, args)
        return [r for r in results if r is not None]


def result_dict(result: Any) -> dict[str, Any]:
    """An SDK ``CallToolResult`` as ``{content, structuredContent, isError}`` (no ``_meta``)."""
    data = result.model_dump(by_alias=True, exclude_none=True, mode="json")
    return {
        "content": data.get("content", []),
        "structuredContent": data.get("structuredContent"),
        "isError": bool(data.get("isError", False)),
    }


class McpExecutor:
    """Execution over MCP with the SDK client (``mcp.client.Client(url, mode="auto")``)."""

    def __init__(
        self, url: str, run_id: str = "synth", tag_template: str | None = None, mode: str = "auto"
    ) -> None:
        self.url = url
        self.run_id = run_id
        self.tag_template = tag_template
        self.mode = mode
        self._shared: Any = None

    def url_for(self, sample: str, turn: int) -> str:
        """The endpoint for one (sample, turn): the tagged URL when a template is set, else ``url``."""
        if not self.tag_template:
            return self.url
        return self.tag_template.format(
            run=quote(self.run_id, safe=""), sample=quote(sample, safe=""), turn=turn
        )

    @asynccontextmanager
    async def session(self, sample: str, turn: int) -> AsyncIterator[_McpSession]:
        """A client for this (sample, turn): the shared one when untagged and open, else a new one."""
        from mcp.client import Client

        if self._shared is not None and not self.tag_template:
            yield _McpSession(self._shared)
            return
        async with Client(self.url_for(sample, turn), mode=self.mode) as client:
            yield _McpSession(client)

    @asynccontextmanager
    async def shared(self) -> AsyncIterator[None]:
        """Keep one client open for every untagged session inside this block (tagged URLs differ)."""
        from mcp.client import Client

        if self.tag_template:
            yield None
            return
        async with Client(self.url, mode=self.mode) as client:
            self._shared = client
            try:
                yield None
            finally:
                self._shared = None
