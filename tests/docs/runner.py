"""Run a Markdown document's code blocks as a reader would, in document order, in one folder.

Shell blocks (indented, or fenced as ``sh``/``bash``/``shell``/``console``) hold one command a line
(``# comments`` dropped). ``$ cmd`` lines make a transcript: the lines shown after the command must
appear in its output, in that order (an excerpt). A command runs as written, with two rewrites only:

- ports: a server or proxy that serves HTTP listens on a free loopback port instead of the one the
  document shows (its ``--port N``, or the program's default), and every ``127.0.0.1:N`` /
  ``localhost:N`` later in the document is rewritten to that port; naming a port no process of the
  document listens on is an error (a command that only works with something else on that port);
- placeholders a ``<!-- readme-test: placeholder OLD = tmp -->`` directive declares.

What runs how:

- ``finmcp-server`` / ``finmcp-proxy`` serving over HTTP or SSE: started and left running (checked
  child processes: no error in their stderr, a clean stop), as in a terminal of their own;
- serving over stdio: launched by the mcp SDK's stdio client, which lists every tool (following
  ``nextCursor``), then closed;
- any other command (``finmcp-eval ...``, ``finmcp-server recordings ...``): run to completion in the
  document's folder; it must exit 0;
- ``python`` blocks: written to a file and run with this interpreter; they must exit 0 (a block
  marked ``file NAME`` is saved as ``NAME`` instead: an agent program a later command runs);
- ``json`` blocks: an MCP host configuration (a desktop host's ``mcpServers``, VS Code's ``servers``);
  the SDK client launches each stdio entry's command or reaches each HTTP entry's URL and lists the
  tools (how entries and absolute paths are read: :mod:`tests.docs.hosts`); a block marked ``file
  NAME`` is saved as ``NAME`` in the folder instead, for a later command;
- ``npx @modelcontextprotocol/inspector ...``: MCP Inspector's command line, read with its flags and
  carried out by the SDK client (:mod:`tests.docs.hosts`; Node is not needed);
- ``parse-only`` blocks: ``make -n TARGET`` in the repository, or the finmcp program's own argument
  parser (unknown or malformed flags fail); nothing runs;
- ``text`` blocks are skipped; an unlabelled fenced block without ``text`` is an error, so a new
  block is either run or consciously left out.

Input files a command names that no earlier command produced come from ``inputs`` (name -> a function
writing the file), e.g. the official ``demo_infer.json`` from ``../shared``.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from finmcp.evaluator.cli import build_parser as eval_parser
from finmcp.proxy.cli import COMMANDS as PROXY_COMMANDS
from finmcp.proxy.cli import DEFAULT_PORT as PROXY_PORT
from finmcp.proxy.cli import build_inspect_parser, build_serve_parser, command_after_dashes
from finmcp.recordings.plumbing.launch import LaunchError
from finmcp.server.cli import build_parser as server_parser
from finmcp.server.serve import DEFAULT_PORT as SERVER_PORT
from tests.docs import hosts
from tests.docs.markdown import Block
from tests.support.processes import Children
from tests.support.scripts import SCRIPTS, run_script, script
from tests.support.source import REPO

SHELL_LANGS = frozenset({"indented", "sh", "bash", "shell", "console"})
SERVING_DEFAULT_PORTS = {"finmcp-server": SERVER_PORT, "finmcp-proxy": PROXY_PORT}
PROXY_SUBCOMMANDS = frozenset(PROXY_COMMANDS[1:])  # every verb but serve
_ADDRESS = re.compile(r"\b(127\.0\.0\.1|localhost):(\d+)\b")

Inputs = Mapping[str, Callable[[Path], None]]


class DocumentError(AssertionError):
    """A block of the document does not run as written."""


class DocumentRun:
    """One reader working through a document: a folder, the processes left running, the ports they took."""

    def __init__(self, folder: Path, children: Children | None = None, inputs: Inputs | None = None) -> None:
        self.folder = folder
        self.children = children
        self.inputs = dict(inputs or {})
        self.ports: dict[int, int] = {}  # the document's port -> the port the process took
        self.log: list[str] = []  # what ran, for the test's own report

    # ------------------------------------------------------------------ blocks

    def run(self, blocks: list[Block], where: str) -> None:
        """Run every block in order; raises :class:`DocumentError` naming the first that fails."""
        for block in blocks:
            try:
                self.block(block)
            except DocumentError as exc:
                raise DocumentError(f"{where}, block at line {block.line}:\n{block.text}\n-> {exc}") from None

    def block(self, block: Block) -> None:
        """Run one block as its language and directives say."""
        if block.has("text"):
            return
        text = block.text
        for old, new in block.placeholders().items():
            text = text.replace(old, str(self.folder) if new == "tmp" else new)
        parse_only = block.has("parse-only")
        if block.lang in SHELL_LANGS:
            self.shell(text, parse_only)
        elif block.lang == "python":
            compile(text, f"<block at line {block.line}>", "exec")
            if (name := block.file()) is not None:  # a program a later command runs
                (self.folder / name).write_text(self.rewrite(text), encoding="utf-8")
                self.log.append(f"saved {name}")
            elif not parse_only:
                self.python(text, block.line)
        elif block.lang == "json":
            config = json.loads(text)
            if (name := block.file()) is not None:
                (self.folder / name).write_text(text, encoding="utf-8")  # ports: rewritten where read
                self.log.append(f"saved {name}")
            elif not parse_only:
                self.host_config(config)
        elif block.lang == "":
            raise DocumentError(
                "an unlabelled block: give it a language, or mark it <!-- readme-test: text -->"
            )
        else:
            raise DocumentError(f"no way to run a {block.lang!r} block")

    def shell(self, text: str, parse_only: bool) -> None:
        """Each command of a shell block, or each ``$`` command of a transcript with its shown output."""
        lines = [line for line in text.splitlines() if line.strip()]
        if not any(line.startswith("$ ") for line in lines):
            for line in lines:
                self.command(shlex.split(line, comments=True), parse_only)
            return
        if not lines[0].startswith("$ "):
            raise DocumentError("a transcript must start with a '$ ' command")
        for index, line in enumerate(lines):
            if line.startswith("$ "):
                shown = []
                for out in lines[index + 1 :]:
                    if out.startswith("$ "):
                        break
                    shown.append(out.rstrip())
                self.command(shlex.split(line[2:], comments=True), parse_only, shown)

    # ------------------------------------------------------------------ commands

    def command(self, argv: list[str], parse_only: bool, shown: list[str] | None = None) -> None:
        """Parse or run one command line."""
        if not argv:
            return
        self.log.append(("parse " if parse_only else "run ") + shlex.join(argv))
        if parse_only:
            self.parse(argv)
            return
        if argv[0] == "npx":  # its ports are rewritten where the server is reached
            self.inspector(argv[1:])
            return
        program, args = argv[0], [self.rewrite(arg) for arg in argv[1:]]
        if program == "make":
            raise DocumentError("make targets run the demo and the suite: mark the block parse-only")
        if program in SERVING_DEFAULT_PORTS and (not args or args[0].startswith("-") or args[0] == "serve"):
            self.serve(program, args)
            return
        self.provide_inputs(args)
        if program in SCRIPTS:
            done = run_script(program, *args, cwd=self.folder)
        elif program in ("python", "python3"):
            done = subprocess.run(
                [sys.executable, *args],
                capture_output=True,
                text=True,
                cwd=self.folder,
                stdin=subprocess.DEVNULL,
            )
        else:
            raise DocumentError(f"unknown program {program!r}")
        if done.returncode != 0:
            raise DocumentError(f"exit status {done.returncode}\n{done.stderr[-3000:]}")
        if shown:
            excerpt(shown, done.stdout)

    def parse(self, argv: list[str]) -> None:
        """``make -n`` for make targets; a finmcp program's argument parser for its command line."""
        program, args = argv[0], argv[1:]
        if program == "npx":
            inspector_args(args)
            return
        if program == "make":
            done = subprocess.run(
                ["make", "-n", "-C", str(REPO), *args],
                capture_output=True,
                text=True,
                stdin=subprocess.DEVNULL,
            )
            if done.returncode != 0:
                raise DocumentError(f"make -n {' '.join(args)}: {done.stderr.strip()}")
            return
        if program == "finmcp-server":
            parser = server_parser()
        elif program == "finmcp-eval":
            parser = eval_parser()
        elif program == "finmcp-proxy" and args[:1] and args[0] in PROXY_SUBCOMMANDS:
            parser, args = build_inspect_parser(), command_after_dashes(args)
        elif program == "finmcp-proxy":
            parser, args = (
                build_serve_parser(),
                command_after_dashes(args[1:] if args[:1] == ["serve"] else args),
            )
        else:
            raise DocumentError(f"no parser for {program!r}")
        errors = io.StringIO()
        try:
            with contextlib.redirect_stderr(errors):
                parser.parse_args(args)
        except SystemExit as exc:
            if exc.code:
                raise DocumentError(
                    f"{program} does not accept these arguments:\n{errors.getvalue()}"
                ) from None

    def serve(self, program: str, args: list[str]) -> None:
        """A server or proxy: over stdio, listed once through the SDK client; otherwise left running."""
        self.provide_inputs(args)
        if option(args, "--transport") == "stdio":
            count = anyio.run(
                list_tools, StdioServerParameters(command=script(program), args=args, cwd=self.folder)
            )
            self.log.append(f"  listed {count} tools over stdio")
            return
        port = option(args, "--port")
        shown = int(port) if port is not None else SERVING_DEFAULT_PORTS[program]
        if shown in self.ports:
            raise DocumentError(f"port {shown} is taken by an earlier command of the document")
        if self.children is None:
            raise DocumentError("this run starts no processes")
        start = self.children.server if program == "finmcp-server" else self.children.proxy
        try:
            proc = start(args)  # appends --host 127.0.0.1 --port 0: the one rewrite, a free port
        except LaunchError as exc:
            raise DocumentError(str(exc)) from None
        self.ports[shown] = proc.port
        self.log.append(f"  listening: {shown} -> {proc.port}")

    def python(self, code: str, line: int) -> None:
        """A Python block, run as a script in the document's folder."""
        path = self.folder / f"block_line_{line}.py"
        path.write_text(self.rewrite(code), encoding="utf-8")
        done = subprocess.run(
            [sys.executable, str(path)],
            capture_output=True,
            text=True,
            cwd=self.folder,
            stdin=subprocess.DEVNULL,
        )
        if done.returncode != 0:
            raise DocumentError(
                f"exit status {done.returncode}\n{done.stdout[-1000:]}\n{done.stderr[-3000:]}"
            )
        self.log.append(f"  python block printed: {done.stdout.strip()[:200]}")

    def host_config(self, config: Any) -> None:
        """Launch or reach every server entry of an MCP host configuration and list its tools."""
        try:
            for name, entry in hosts.entries(config).items():
                where = hosts.target(entry, self.folder, self.rewrite)
                shown = where if isinstance(where, str) else shlex.join([where.command, *where.args])
                self.log.append(f"host config {name}: {shown}")
                over = "HTTP" if isinstance(where, str) else "stdio"
                self.log.append(f"  listed {anyio.run(list_tools, where)} tools over {over}")
        except hosts.HostError as exc:
            raise DocumentError(str(exc)) from None

    def inspector(self, args: list[str]) -> None:
        """An MCP Inspector command line, carried out by the SDK client."""
        run = inspector_args(args)
        try:
            where = hosts.inspector_target(run, self.folder, self.rewrite)
            self.log.append(f"  inspector {anyio.run(hosts.carry_out, where, run)}")
        except hosts.HostError as exc:
            raise DocumentError(str(exc)) from None

    # ------------------------------------------------------------------ rewrites and inputs

    def rewrite(self, text: str) -> str:
        """``text`` with every loopback port of the document replaced by the port its process took."""

        def port(match: re.Match[str]) -> str:
            shown = int(match[2])
            if shown not in self.ports:
                raise DocumentError(f"{match[0]}: no process of the document listens on port {shown}")
            return f"{match[1]}:{self.ports[shown]}"

        return _ADDRESS.sub(port, text)

    def provide_inputs(self, args: list[str]) -> None:
        """Write the input files the arguments name that are not in the folder yet."""
        for arg in args:
            if "/" not in arg and arg in self.inputs and not (self.folder / arg).exists():
                self.inputs[arg](self.folder / arg)


def option(args: list[str], name: str) -> str | None:
    """The value of the last ``name VALUE`` or ``name=VALUE`` in ``args``."""
    value = None
    for index, arg in enumerate(args):
        if arg == name and index + 1 < len(args):
            value = args[index + 1]
        elif arg.startswith(name + "="):
            value = arg.partition("=")[2]
    return value


def excerpt(shown: list[str], output: str) -> None:
    """Each shown line appears in ``output``, in the same order (other lines may come between)."""
    actual = iter(line.rstrip() for line in output.splitlines())
    for line in shown:
        if not any(candidate == line for candidate in actual):
            raise DocumentError(f"the output does not show {line!r} where the document does:\n{output}")


def inspector_args(args: list[str]) -> hosts.InspectorRun:
    """``npx`` arguments naming MCP Inspector, read (anything else ``npx`` would run is an error)."""
    args = args[1:] if args[:1] in (["-y"], ["--yes"]) else args
    if not args or args[0].split("@")[:2] != ["", "modelcontextprotocol/inspector"]:
        raise DocumentError(f"npx {' '.join(args[:1])}: only {hosts.INSPECTOR} is known")
    try:
        return hosts.parse_inspector(args[1:])
    except hosts.HostError as exc:
        raise DocumentError(str(exc)) from None


async def list_tools(params: StdioServerParameters | str) -> int:
    """How many tools an MCP server (stdio command or URL) lists (every page); at least one, each once."""
    names: list[str] = []
    async with Client(params) as client:
        cursor: str | None = None
        for _ in range(100):
            page = await client.list_tools(cursor=cursor)
            names += [tool.name for tool in page.tools]
            if (cursor := page.next_cursor) is None:
                break
    if not names or len(set(names)) != len(names):
        raise DocumentError(f"the stdio server listed {len(names)} tools ({len(set(names))} distinct)")
    return len(names)
