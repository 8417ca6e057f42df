"""The third-party MCP servers the record/replay/audit tests run, as users run them, and what a test does with each.

Each :class:`ThirdParty` names a server from the registries (provisioned by ``tests/clients/provision.py``,
server-everything by ``tests/conformance/provision.sh``), how it starts (its command, its environment, the
state it starts from in a test's folder), a **stateful session** (calls in order, acting ones among them,
and calls that fail: a JSON-RPC error or an ``isError`` result) and **read-only calls** that the audit
re-issues against the live server once the session has left its state.

:func:`observe` drives a script of calls with the mcp SDK's client and returns what the client saw (each
outcome as JSON values; the answers' ``_meta`` apart: a replaying server says there which sequence it
used), so a live run and its replay compare with ``==``; :func:`record_stdio` records a script through
a stdio ``finmcp-proxy``, :func:`replayed_over_both_transports` checks the documented replay.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from finmcp.proxy.testing import stdio_args
from finmcp.server.testing import ServerProcess
from tests.clients import provision
from tests.support.postgres import require_or_skip

Call = tuple[str, dict[str, Any]]
"""A tool call: the tool's name and its arguments (``{dir}`` in a string is the test's state folder)."""


@dataclass(frozen=True)
class ThirdParty:
    """One third-party server and the calls a test makes of it."""

    name: str
    provisioned_as: str  # tests/clients/provision.py name
    executable: str  # the command the package installs
    args: tuple[str, ...] = ()
    state_env: Mapping[str, str] = field(default_factory=dict)  # variable -> file under the state folder
    prepare: Callable[[Path], None] | None = None
    session: tuple[Call, ...] = ()
    read_only: tuple[Call, ...] = ()
    audit_flags: tuple[str, ...] = ()  # normalisers the audit needs for this server's volatile fields

    def binary(self) -> Path:
        """The installed command; skips (fails in CI) when the environment was not provisioned."""
        env = provision.ENVIRONMENTS[self.provisioned_as]
        path = (
            provision.folder(self.provisioned_as) / "bin" / self.executable
            if env.kind == "python"
            else provision.node_bin(self.provisioned_as, self.executable)
        )
        if not provision.ready(self.provisioned_as) or not path.exists():
            require_or_skip(
                f"{env.label} is not provisioned ({path} missing); "
                f"run python3 tests/clients/provision.py {self.provisioned_as}"
            )
        return path

    def command(self, state: Path) -> list[str]:
        """The command line that starts the server on the state folder ``state``."""
        return [str(self.binary()), *(arg.replace("{dir}", str(state)) for arg in self.args)]

    def env(self, state: Path) -> dict[str, str]:
        """The caller's environment plus the server's state variables."""
        return {**os.environ, **{k: str(state / v) for k, v in self.state_env.items()}}

    def start_state(self, state: Path) -> None:
        """Make the state folder the session starts from."""
        state.mkdir(parents=True, exist_ok=True)
        if self.prepare is not None:
            self.prepare(state)

    def calls(self, state: Path, which: tuple[Call, ...]) -> list[Call]:
        """``which`` with ``{dir}`` filled in."""
        return [(tool, _fill(args, str(state))) for tool, args in which]


def _fill(value: Any, folder: str) -> Any:
    if isinstance(value, str):
        return value.replace("{dir}", folder)
    if isinstance(value, list):
        return [_fill(v, folder) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, folder) for k, v in value.items()}
    return value


def _git_repo(state: Path) -> None:
    repo = state / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=finmcp", "-c", "user.email=finmcp@example.invalid"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    (repo / "README.md").write_text("a repository for the audit tests\n")
    subprocess.run([*git, "add", "README.md"], check=True)
    env = {
        **os.environ,
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    }
    subprocess.run([*git, "commit", "-q", "-m", "first"], check=True, env=env)
    (repo / "notes.txt").write_text("one line\n")


def _files(state: Path) -> None:
    files = state / "files"
    files.mkdir()
    (files / "a.txt").write_text("alpha\n")
    (files / "sub").mkdir()
    (files / "sub" / "b.txt").write_text("beta\n")


TIME = ThirdParty(
    name="time",
    provisioned_as="server-time",
    executable="mcp-server-time",
    args=("--local-timezone", "UTC"),
    session=(
        ("get_current_time", {"timezone": "Europe/London"}),
        ("convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
        ("convert_time", {"source_timezone": "UTC"}),  # missing arguments: the server's own error
        ("get_current_time", {"timezone": "Not/AZone"}),  # an invalid zone: an error result
        ("get_local_time", {}),  # no such tool: a JSON-RPC error
        ("convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
    ),
    read_only=(
        ("convert_time", {"source_timezone": "UTC", "time": "08:30", "target_timezone": "Europe/Paris"}),
        ("get_current_time", {"timezone": "Asia/Tokyo"}),
    ),
    audit_flags=("--volatile",),  # get_current_time's datetime: now
)

GIT = ThirdParty(
    name="git",
    provisioned_as="server-git",
    executable="mcp-server-git",
    args=("--repository", "{dir}/repo"),
    prepare=_git_repo,
    session=(
        ("git_status", {"repo_path": "{dir}/repo"}),
        ("git_add", {"repo_path": "{dir}/repo", "files": ["notes.txt"]}),
        ("git_status", {"repo_path": "{dir}/repo"}),  # the same call, another answer: order matters
        ("git_diff_staged", {"repo_path": "{dir}/repo"}),
        ("git_show", {"repo_path": "{dir}/repo", "revision": "no-such-revision"}),
    ),
    read_only=(
        ("git_diff_staged", {"repo_path": "{dir}/repo"}),
        ("git_branch", {"repo_path": "{dir}/repo", "branch_type": "local"}),
    ),
)

MEMORY = ThirdParty(
    name="memory",
    provisioned_as="server-memory",
    executable="mcp-server-memory",
    state_env={"MEMORY_FILE_PATH": "memory.jsonl"},
    session=(
        ("read_graph", {}),
        (
            "create_entities",
            {"entities": [{"name": "Fund A", "entityType": "fund", "observations": ["NAV 1.0"]}]},
        ),
        ("read_graph", {}),  # the same call, another answer: order matters
        ("add_observations", {"observations": [{"entityName": "Fund A", "contents": ["NAV 1.1"]}]}),
        ("search_nodes", {"query": "Fund"}),
        ("open_nodes", {}),  # missing argument: an input-validation error
    ),
    read_only=(("read_graph", {}), ("search_nodes", {"query": "NAV"})),
)

FILESYSTEM = ThirdParty(
    name="filesystem",
    provisioned_as="server-filesystem",
    executable="mcp-server-filesystem",
    args=("{dir}/files",),
    prepare=_files,
    session=(
        ("list_directory", {"path": "{dir}/files"}),
        ("write_file", {"path": "{dir}/files/c.txt", "content": "gamma\n"}),
        ("list_directory", {"path": "{dir}/files"}),  # the same call, another answer
        ("read_text_file", {"path": "{dir}/files/c.txt"}),
        ("read_text_file", {"path": "{dir}/outside.txt"}),  # outside the allowed folder: an error
    ),
    read_only=(
        ("read_text_file", {"path": "{dir}/files/sub/b.txt"}),
        ("directory_tree", {"path": "{dir}/files"}),
    ),
)

STDIO_SERVERS = (TIME, GIT, MEMORY, FILESYSTEM)


Script = list[Call]
RUN = "live"
REPLAY_META = "io.finmcp/replay"  # server.sequence.REPLAY_META: which sequence and step an answer came from


def _counter(seen: list[float]) -> Any:
    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        seen.append(value)

    return on_progress


async def observe(
    target: str | StdioServerParameters, script: Script, mode: str = "legacy"
) -> dict[str, Any]:
    # mode: the SDK Client's ("legacy": the initialize handshake; a 2026 version: that era, no probe)
    """Everything one SDK client session sees: serverInfo, the tool list, each call's outcome (its
    result or JSON-RPC error as JSON values, and how many progress notifications came), and apart,
    each result's ``_meta`` (a replaying server says there which sequence it used)."""
    async with Client(target, mode=mode) as client:
        info, capabilities, instructions = client.server_info, client.server_capabilities, client.instructions
        listing = await client.list_tools()
        outcomes: list[dict[str, Any]] = []
        metas: list[Any] = []
        for tool, arguments in script:
            progress: list[float] = []
            try:
                result = await client.call_tool(tool, arguments, progress_callback=_counter(progress))
            except MCPError as exc:
                error = {"code": exc.error.code, "message": exc.error.message, "data": exc.error.data}
                outcomes.append({"error": error, "progress": len(progress)})
                metas.append(None)
                continue
            dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
            metas.append(dumped.pop("_meta", None))
            outcomes.append({"result": dumped, "progress": len(progress)})
    return {
        "serverInfo": info and info.model_dump(mode="json", by_alias=True, exclude_none=True),
        "capabilities": capabilities.model_dump(mode="json", by_alias=True, exclude_none=True),
        "instructions": instructions,
        "tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listing.tools],
        "outcomes": outcomes,
        "metas": metas,
    }


def seen(observed: dict[str, Any]) -> dict[str, Any]:
    """What the client saw, without the answers' ``_meta``."""
    return {k: v for k, v in observed.items() if k != "metas"}


def replay_stdio(rec: Path) -> StdioServerParameters:
    """The documented replay of a recordings file over stdio (no inventory: the recorded server)."""
    args = ["-m", "finmcp.server", "--transport", "stdio", "--recordings", str(rec)]
    return StdioServerParameters(
        command=sys.executable, args=[*args, "--replay", "sequence", "--miss", "strict"]
    )


def record_stdio(
    command: list[str], tmp: Path, script: Script, env: dict[str, str] | None = None, run: str = RUN
) -> dict[str, Any]:
    """Run ``script`` through a stdio ``finmcp-proxy`` in record mode in front of ``command`` (as an
    MCP host launches it): the trace in ``tmp/t.sqlite``, the recordings in ``tmp/rec.sqlite``."""
    recordings = ["--recordings", str(tmp / "rec.sqlite"), "--run", run]
    proxy = stdio_args(["--upstream-cmd", shlex.join(command)], tmp / "t.sqlite", *recordings)
    params = StdioServerParameters(command=sys.executable, args=proxy, env=env)
    return anyio.run(observe, params, script)


def replayed_over_both_transports(rec: Path, script: Script, live: dict[str, Any]) -> None:
    """Replaying ``rec`` over stdio and over HTTP (two programs, each its own sequence from step 0;
    and a third in the 2026-07-28 era) shows the client exactly what ``live`` showed, a repeated key
    getting its next recorded answer."""
    over_stdio = anyio.run(observe, replay_stdio(rec), script)
    assert seen(over_stdio) == seen(live)
    with ServerProcess(["--recordings", str(rec), "--replay", "sequence", "--miss", "strict"]) as server:
        first = anyio.run(observe, server.url, script)
        second = anyio.run(observe, server.url, script)  # a second program: its own sequence, from step 0
        stateless = anyio.run(observe, server.url, script, "2026-07-28")  # a 2026 client: same answers
    assert seen(first) == seen(live) and seen(second) == seen(live)
    assert stateless["outcomes"] == live["outcomes"]
    # (its tool list holds the same tools in that era's shape: 2025-11-25 fields such as execution are not in it)
    assert [t["name"] for t in stateless["tools"]] == [t["name"] for t in live["tools"]]
    labels = {m[REPLAY_META]["sequence"] for m in first["metas"] + second["metas"] if m and REPLAY_META in m}
    assert len(labels) == 2  # each session's answers name its own sequence
    steps = [m[REPLAY_META]["step"] for m in first["metas"] if m and REPLAY_META in m]
    assert 1 in steps  # a repeated key got its second recorded answer
