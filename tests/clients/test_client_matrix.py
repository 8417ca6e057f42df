"""Third-party MCP clients through finmcp-proxy: each lists, calls, and the trace holds exactly its calls.

One ``finmcp-server`` and one HTTP ``finmcp-proxy`` serve the module; each client (in its own
provisioned environment, ``tests/clients/provision.py``) runs its driver (``tests/clients/drivers/``) as
a subprocess, all at once: it lists the tools, then makes a valid call, a call with invalid arguments
and a call to a tool that does not exist, tagged with its own run and a sample (path tags, or the
``X-Finmcp-*`` headers for pydantic-ai and openai-agents; ``--run/--sample`` for the stdio proxy a
client launches). The test checks what the client saw and that the trace holds exactly those three
calls with their arguments and statuses, in the protocol era the client spoke. docs/proxy.md has the
matrix as a table. A client whose environment is not provisioned skips (fails under ``FINMCP_CI=1``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from finmcp.proxy.testing import ProxyProcess
from finmcp.recordings.trace_store import open_trace_store
from finmcp.server.testing import ServerProcess
from tests.clients import provision
from tests.support.postgres import require_or_skip
from tests.support.processes import Children
from tests.support.traces import wait_calls

REPO = Path(__file__).resolve().parents[2]
DRIVERS = Path(__file__).parent / "drivers"
SAMPLE = "s1"
VALID: tuple[str, dict[str, Any]] = ("SearchFunds", {"keyword": "红利", "size": 3})
INVALID: tuple[str, dict[str, Any]] = ("SearchFunds", {"sortOrder": "up"})
UNKNOWN: tuple[str, dict[str, Any]] = ("NoSuchTool", {"fund": "x"})
CALLS = [VALID, INVALID, UNKNOWN]
STATUSES = ["ok", "tool_error", "rpc_error"]
DRIVER_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class Case:
    """One cell of the matrix: a provisioned client, the transport it reaches the proxy by, the era it speaks."""

    client: str
    transport: str  # "http": the module's HTTP proxy; "stdio": a finmcp-proxy --transport stdio it launches
    era: str  # "handshake" or "stateless"
    driver: str
    tags: str = "path"  # "path" (/r/RUN/s/SAMPLE/mcp) or "headers" (X-Finmcp-Run, X-Finmcp-Sample)

    @property
    def id(self) -> str:
        return f"{self.client}-{self.transport}-{self.era}"

    @property
    def run(self) -> str:
        return f"matrix-{self.id}"


CASES = [
    Case("fastmcp", "http", "handshake", "fastmcp_client.py"),
    Case("fastmcp", "http", "stateless", "fastmcp_client.py"),
    Case("fastmcp", "stdio", "handshake", "fastmcp_client.py"),
    Case("pydantic-ai", "http", "handshake", "pydantic_ai_agent.py", tags="headers"),
    Case("pydantic-ai", "http", "stateless", "pydantic_ai_agent.py", tags="headers"),
    Case("openai-agents", "http", "stateless", "openai_agents_server.py", tags="headers"),  # mode "auto"
    Case("langchain", "http", "handshake", "langchain_adapters.py"),
    Case("langchain", "stdio", "handshake", "langchain_adapters.py"),
    Case("ts-sdk", "http", "handshake", "ts_sdk.mjs"),
    Case("ts-sdk", "stdio", "handshake", "ts_sdk.mjs"),
    Case("inspector", "http", "handshake", "inspector.py"),
    Case("inspector", "stdio", "handshake", "inspector.py"),
]


@dataclass
class Stack:
    """The module's server, HTTP proxy and trace file."""

    server: ServerProcess
    proxy: ProxyProcess
    db: Path


@dataclass
class Outcome:
    """A driver's run: its exit status, output and the JSON line it printed (None when it printed none)."""

    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    report: dict[str, Any] | None


def missing(case: Case) -> str | None:
    """Why ``case`` cannot run here (its environment is not provisioned, or Node is absent), or None."""
    if not provision.ready(case.client):
        return (
            f"client {case.client!r} is not provisioned in {provision.folder(case.client)}; "
            f"run python3 tests/clients/provision.py"
        )
    if provision.CLIENTS[case.client].kind == "node" and shutil.which("node") is None:
        return "node is not installed (the TypeScript clients need Node.js 20)"
    return None


def command(case: Case, stack: Stack) -> list[str]:
    """The driver's command line for ``case`` against ``stack``."""
    env = provision.CLIENTS[case.client]
    if case.client == "inspector":
        head = [
            sys.executable,
            str(DRIVERS / case.driver),
            "--bin",
            str(provision.node_bin("inspector", "mcp-inspector")),
        ]
    elif env.kind == "node":
        head = ["node", str(DRIVERS / case.driver), "--modules", str(provision.node_modules(case.client))]
    else:
        head = [str(provision.python_of(case.client)), str(DRIVERS / case.driver)]
    head += ["--calls", json.dumps(CALLS, ensure_ascii=False)]
    if case.transport == "stdio":
        proxy = [sys.executable, "-m", "finmcp.proxy", "--transport", "stdio", "--upstream", stack.server.url]
        return [*head, "--stdio", *proxy, "--db", str(stack.db), "--run", case.run, "--sample", SAMPLE]
    if case.tags == "headers":
        headers = ["--header", f"X-Finmcp-Run={case.run}", "--header", f"X-Finmcp-Sample={SAMPLE}"]
        return [*head, "--url", stack.proxy.url, "--era", case.era, *headers]
    return [*head, "--url", stack.proxy.endpoint(f"/r/{case.run}/s/{SAMPLE}/mcp"), "--era", case.era]


def run_all(cases: list[Case], stack: Stack) -> dict[str, Outcome]:
    """Start every driver at once and wait for all (each bounded by ``DRIVER_TIMEOUT_S``)."""
    started = time.monotonic()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1"}
    procs = {
        case.id: subprocess.Popen(
            command(case, stack),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=DRIVERS,
        )
        for case in cases
    }
    outcomes: dict[str, Outcome] = {}
    for name, proc in procs.items():
        try:
            stdout, stderr = proc.communicate(
                timeout=max(1.0, DRIVER_TIMEOUT_S - (time.monotonic() - started))
            )
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
            stderr += f"\n(killed after {DRIVER_TIMEOUT_S} s)"
        lines = [line for line in stdout.splitlines() if line.startswith("{")]
        report = json.loads(lines[-1]) if lines else None
        outcomes[name] = Outcome(proc.returncode, stdout, stderr, time.monotonic() - started, report)
    return outcomes


@pytest.fixture(scope="module")
def stack(module_children: Children, tmp_path_factory: pytest.TempPathFactory) -> Stack:
    db = tmp_path_factory.mktemp("matrix") / "runs.sqlite"
    server = module_children.server(["--inventory", "finmcp65", "--latency", "none"])
    proxy = module_children.proxy(["--upstream", server.url, "--db", str(db)])
    return Stack(server, proxy, db)


@pytest.fixture(scope="module")
def outcomes(request: pytest.FixtureRequest, stack: Stack) -> dict[str, Outcome]:
    """Every selected case that can run here, run concurrently once for the module."""
    selected = [
        item.callspec.params["case"]
        for item in request.session.items
        if getattr(item, "module", None) is request.module and hasattr(item, "callspec")
    ]
    return run_all([case for case in selected if missing(case) is None], stack)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_client_lists_calls_and_is_traced_exactly(
    case: Case, outcomes: dict[str, Outcome], stack: Stack
) -> None:
    reason = missing(case)
    if reason is not None:
        require_or_skip(reason)
    done = outcomes[case.id]
    context = (
        f"{case.id} exited {done.returncode}\nstdout: {done.stdout[-2000:]}\nstderr: {done.stderr[-3000:]}"
    )
    assert done.returncode == 0 and done.report is not None, context

    # what the client saw
    assert done.report["tools"] == 65, context
    seen = done.report["calls"]
    assert [c["tool"] for c in seen] == [tool for tool, _ in CALLS], context
    assert [c["is_error"] for c in seen] == [False, True, True], context
    assert "sortOrder" in seen[1]["error"] and "NoSuchTool" in seen[2]["error"], context

    # what the trace holds: exactly these calls, tagged, with their statuses, in the era spoken
    rows = wait_calls(stack.db, case.run, len(CALLS), settled=True)
    assert [(r["tool"], r["arguments"], r["status"]) for r in rows] == [
        (tool, expected_arguments(case, tool, arguments), status)
        for (tool, arguments), status in zip(CALLS, STATUSES, strict=True)
    ], context
    assert {r["sample_id"] for r in rows} == {SAMPLE}
    versions = {r["protocol_version"] for r in rows}
    if case.era == "stateless":
        assert versions == {"2026-07-28"}, versions
    else:
        assert len(versions) == 1 and versions.pop() < "2026", versions
    with open_trace_store(str(stack.db)) as reader:
        methods = [m["method"] for m in reader.messages(run_id=case.run)]
    assert "tools/list" in methods, methods
    if case.era == "handshake":
        assert "initialize" in methods, methods
    else:
        assert "initialize" not in methods, methods


def expected_arguments(case: Case, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments the client sends: the Inspector CLI sends a tool it did not list its values as strings."""
    if case.client == "inspector" and tool == UNKNOWN[0]:
        return {
            key: value if isinstance(value, str) else json.dumps(value) for key, value in arguments.items()
        }
    return arguments


def test_docs_matrix_has_one_row_per_case_with_the_pinned_versions() -> None:
    """docs/proxy.md's table is this module's matrix: one row per case, naming each pinned version."""
    text = (REPO / "docs" / "proxy.md").read_text(encoding="utf-8")
    section = text.split("## Client matrix", 1)[1].split("\n## ", 1)[0]
    rows = [
        line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| client")
    ]
    assert len(rows) == len(CASES)
    for row, case in zip(rows, CASES, strict=True):
        transport = "stdio" if "stdio" in row.split("|")[3] else "http"
        era = "stateless" if "stateless" in row.split("|")[4] else "handshake"
        assert (transport, era) == (case.transport, case.era), row
    for env in provision.CLIENTS.values():
        name, _, version = env.label.rpartition("==" if env.kind == "python" else "@")
        assert version in section and name.split("/")[-1] in section, env.label
