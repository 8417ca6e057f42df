"""What MCP hosts do with the configurations and command lines a document shows, done by the SDK client.

A host configuration is JSON: a desktop host's ``{"mcpServers": {NAME: {"command", "args", "env"}}}``
(Claude Desktop, MCP Inspector's ``--config`` file, whose entries may instead be ``{"type":
"streamable-http" | "http", "url"}``) or VS Code's ``.vscode/mcp.json`` ``{"servers": {NAME: {"type":
"stdio", "command", "args"} | {"type": "http", "url"}}}``. Each entry becomes what the SDK client
connects to: a stdio command it launches, or a Streamable HTTP URL.

Hosts need absolute paths (they do not see the reader's shell, its PATH or its venv), so documents show
``/home/me/finmcp/.venv/bin/finmcp-proxy`` or ``${workspaceFolder}/.venv/bin/...``: a path ending in
``.venv/bin/`` + a finmcp console script (or ``python``) is run as the one installed beside the
test's interpreter, and ``${workspaceFolder}`` is the document's folder.

``npx @modelcontextprotocol/inspector [--cli] (--config FILE [--server NAME] | URL [--transport http] |
CMD ARGS...) [--method tools/list | tools/call --tool-name T --tool-arg K=V ...]`` is read with
Inspector's own flags (an unknown one is an error) and carried out by the SDK client: the server it
names is launched or reached, and the method called (the web UI, without ``--cli``: the tools listed,
what its Connect does). Node and the Inspector package are not needed.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from tests.support.scripts import SCRIPTS, script

INSPECTOR = "@modelcontextprotocol/inspector"
HTTP_TYPES = frozenset({"http", "streamable-http", "streamableHttp"})
WORKSPACE = "${workspaceFolder}"
_VENV_PROGRAM = re.compile(r"(?:^|/)\.venv/bin/(?P<name>[\w.-]+)$")

Target = StdioServerParameters | str


class HostError(AssertionError):
    """A configuration or command line a host would not accept, or a server it could not use."""


def installed(path: str) -> str:
    """A ``.../.venv/bin/PROGRAM`` path as this test's installed program; anything else unchanged."""
    match = _VENV_PROGRAM.search(path)
    if match is None:
        return path
    name = match["name"]
    if name in SCRIPTS:
        return script(name)
    if name in ("python", "python3"):
        return sys.executable
    raise HostError(f"{path}: no such program in a finmcp venv")


def entries(config: Any) -> dict[str, dict[str, Any]]:
    """The server entries of a host configuration (``mcpServers`` or VS Code's ``servers``)."""
    servers = None
    if isinstance(config, dict):
        servers = config.get("mcpServers", config.get("servers"))
    if not isinstance(servers, dict) or not servers:
        raise HostError("an MCP host configuration needs a non-empty mcpServers (or VS Code servers) object")
    for name, entry in servers.items():
        if not isinstance(entry, dict):
            raise HostError(f"server {name!r}: expected an object")
    return servers


def target(entry: dict[str, Any], folder: Path, rewrite: Callable[[str], str]) -> Target:
    """What the SDK client connects to for one entry (``rewrite``: the document's port rewrite)."""

    def expand(text: str) -> str:
        return rewrite(text.replace(WORKSPACE, str(folder)))

    kind = entry.get("type", "stdio")
    if kind in HTTP_TYPES:
        if not isinstance(entry.get("url"), str):
            raise HostError(f"a {kind} entry needs a url")
        return expand(entry["url"])
    if kind != "stdio":
        raise HostError(f"unknown server type {kind!r} (stdio, http, streamable-http)")
    command = entry.get("command")
    args = entry.get("args", [])
    if (
        not isinstance(command, str)
        or not isinstance(args, list)
        or not all(isinstance(a, str) for a in args)
    ):
        raise HostError("a stdio entry needs a command string and an args list of strings")
    if not command.startswith("/") and not command.startswith(WORKSPACE):
        raise HostError(f"command {command!r} is not an absolute path: a host does not see the venv's PATH")
    return StdioServerParameters(
        command=installed(expand(command)),
        args=[installed(expand(arg)) for arg in args],
        env=entry.get("env"),
        cwd=folder,
    )


# ---------------------------------------------------------------------- MCP Inspector's command line


@dataclass
class InspectorRun:
    """An Inspector command line, read."""

    cli: bool = False
    config: str | None = None
    server: str | None = None
    method: str | None = None
    tool_name: str | None = None
    tool_args: dict[str, Any] = field(default_factory=dict)
    transport: str | None = None
    target: list[str] = field(default_factory=list)


_WITH_VALUE = {
    "--config",
    "--server",
    "--method",
    "--tool-name",
    "--tool-arg",
    "--transport",
    "-e",
    "--header",
}


def parse_inspector(args: list[str]) -> InspectorRun:
    """Inspector's arguments (after the package name); the first other word starts the target."""
    run = InspectorRun()
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--cli":
            run.cli = True
        elif arg in _WITH_VALUE:
            if index + 1 >= len(args):
                raise HostError(f"inspector: {arg} needs a value")
            value = args[index + 1]
            index += 1
            if arg == "--tool-arg":
                key, sep, raw = value.partition("=")
                if not sep:
                    raise HostError(f"inspector: --tool-arg {value!r}: expected KEY=VALUE")
                try:
                    run.tool_args[key] = json.loads(raw)
                except json.JSONDecodeError:
                    run.tool_args[key] = raw
            elif arg in ("--config", "--server", "--method", "--tool-name", "--transport"):
                setattr(run, arg[2:].replace("-", "_"), value)
        elif arg == "--":
            run.target += args[index + 1 :]
            break
        elif arg.startswith("-") and not run.target:
            raise HostError(f"inspector: unknown option {arg}")
        else:
            run.target.append(arg)
        index += 1
    if run.config and run.target:
        raise HostError("inspector: --config and a server command or URL are exclusive")
    if not run.config and not run.target:
        raise HostError("inspector: name a server (--config FILE --server NAME, a URL or a command)")
    if run.method not in (None, "tools/list", "tools/call"):
        raise HostError(f"inspector: method {run.method!r} is not one this document may use")
    if run.method == "tools/call" and not run.tool_name:
        raise HostError("inspector: --method tools/call needs --tool-name")
    if run.cli and run.method is None:
        raise HostError("inspector: --cli needs --method")
    return run


def inspector_target(run: InspectorRun, folder: Path, rewrite: Callable[[str], str]) -> Target:
    """The server an Inspector command line names."""
    if run.config:
        path = folder / run.config
        if not path.is_file():
            raise HostError(f"inspector: --config {run.config}: no such file (an earlier block writes it)")
        servers = entries(json.loads(path.read_text(encoding="utf-8")))
        if run.server is None and len(servers) != 1:
            raise HostError(f"inspector: {run.config} has {len(servers)} servers: name one with --server")
        name = run.server or next(iter(servers))
        if name not in servers:
            raise HostError(f"inspector: no server {name!r} in {run.config}")
        return target(servers[name], folder, rewrite)
    first = run.target[0]
    if first.startswith(("http://", "https://")):
        if run.transport not in ("http", "streamable-http"):
            raise HostError("inspector: a URL needs --transport http (Streamable HTTP)")
        return rewrite(first)
    return target({"command": first, "args": run.target[1:]}, folder, rewrite)


async def carry_out(where: Target, run: InspectorRun) -> str:
    """Do what the Inspector command asks of the server; a line for the log."""
    async with Client(where) as client:
        if run.method == "tools/call":
            assert run.tool_name is not None
            result = await client.call_tool(run.tool_name, run.tool_args)
            if result.is_error:
                raise HostError(f"inspector: {run.tool_name} answered an error: {result.content}")
            return f"called {run.tool_name}"
        tools = (await client.list_tools()).tools
        if not tools:
            raise HostError("inspector: the server lists no tools")
        return f"listed {len(tools)} tools"
