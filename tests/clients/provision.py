"""Provision the third-party MCP clients of the client matrix, and the third-party MCP servers the
record/replay/audit tests run, each in its own cached environment.

Run by ``.ci/run`` before ``make test`` (and by hand): ``python3 tests/clients/provision.py [NAME...]``.
Each client gets a folder ``~/.cache/finmcp/clients/<name>`` (``FINMCP_CLIENTS_DIR`` overrides the
root): a Python venv (``python3 -m venv`` + pip) or an npm prefix (``npm install --prefix``). The
clients pin different ``mcp`` versions (langchain-mcp-adapters still needs mcp 1.x), so they cannot
share the project's venv. A stamp file holds the pins the folder was built from: a second run with the
same pins does nothing; changed pins rebuild that client's folder from scratch.

Standard library only, so it runs before the project's venv exists. Tests import :data:`CLIENTS` (:data:`SERVERS` for the servers),
:func:`ready` and :func:`python_of` / :func:`node_bin` to find the environments; nothing is fetched at
test time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

STAMP = ".finmcp-stamp.json"


@dataclass(frozen=True)
class ClientEnv:
    """One client's environment: ``kind`` is ``python`` (pip requirements) or ``node`` (npm packages)."""

    name: str
    kind: str
    pins: tuple[str, ...]
    label: str  # the package whose version the matrix names

    def stamp(self) -> dict[str, object]:
        """What the folder was built from; a different stamp means rebuild."""
        runtime = sys.version.split()[0] if self.kind == "python" else _node_version()
        return {"name": self.name, "kind": self.kind, "pins": list(self.pins), "runtime": runtime}


CLIENTS: dict[str, ClientEnv] = {
    env.name: env
    for env in (
        ClientEnv("fastmcp", "python", ("fastmcp==4.2.3", "mcp==2.3.0"), "fastmcp==4.2.3"),
        ClientEnv(
            "pydantic-ai",
            "python",
            ("pydantic-ai-slim[mcp]==2.68.0", "mcp==2.3.0"),
            "pydantic-ai-slim==2.68.0",
        ),
        ClientEnv(
            "openai-agents", "python", ("openai-agents==0.24.0", "mcp==2.3.0"), "openai-agents==0.24.0"
        ),
        ClientEnv(
            "langchain",
            "python",
            ("langchain-mcp-adapters==0.3.2", "mcp==1.30.0"),
            "langchain-mcp-adapters==0.3.2",
        ),
        ClientEnv(
            "ts-sdk", "node", ("@modelcontextprotocol/sdk@1.32.2",), "@modelcontextprotocol/sdk@1.32.2"
        ),
        # 0.15.0: the last Inspector whose CLI runs on Node 20 (0.16 and later ask for Node >= 22.7.5)
        ClientEnv(
            "inspector",
            "node",
            ("@modelcontextprotocol/inspector@0.15.0",),
            "@modelcontextprotocol/inspector@0.15.0",
        ),
    )
}

AGENTS: dict[str, ClientEnv] = {
    env.name: env
    for env in (
        # the agent matrix (tests/agents): each framework's real agent loop, model = the scripted model
        ClientEnv(
            "pydantic-ai-openai",
            "python",
            ("pydantic-ai-slim[mcp,openai]==2.68.0", "mcp==2.3.0"),
            "pydantic-ai-slim==2.68.0",
        ),
        ClientEnv(
            "langgraph",
            "python",
            ("langgraph==1.2.24", "langchain-openai==1.8.1", "langchain-mcp-adapters==0.3.2", "mcp==1.30.0"),
            "langgraph==1.2.24",
        ),
        ClientEnv(
            "smolagents",
            "python",
            ("smolagents[mcp,openai]==1.26.0", "mcpadapt==0.1.19", "mcp==1.30.0"),
            "smolagents==1.26.0",
        ),
    )
}
"""The agent frameworks of the agent matrix not already a client above (openai-agents is reused)."""

SERVERS: dict[str, ClientEnv] = {
    env.name: env
    for env in (
        ClientEnv("server-time", "python", ("mcp-server-time==2026.10.19",), "mcp-server-time==2026.10.19"),
        ClientEnv("server-git", "python", ("mcp-server-git==2026.10.19",), "mcp-server-git==2026.10.19"),
        ClientEnv(
            "server-memory",
            "node",
            ("@modelcontextprotocol/server-memory@2026.8.31",),
            "@modelcontextprotocol/server-memory@2026.8.31",
        ),
        ClientEnv(
            "server-filesystem",
            "node",
            ("@modelcontextprotocol/server-filesystem@2026.8.31",),
            "@modelcontextprotocol/server-filesystem@2026.8.31",
        ),
    )
}
"""The third-party MCP servers tests/thirdparty records, replays and audits, as users run them."""

ENVIRONMENTS: dict[str, ClientEnv] = {**CLIENTS, **AGENTS, **SERVERS}
"""Every environment this script provisions, by name."""


def root() -> Path:
    """The folder holding every client's environment."""
    env = os.environ.get("FINMCP_CLIENTS_DIR")
    return Path(env) if env else Path.home() / ".cache" / "finmcp" / "clients"


def folder(name: str) -> Path:
    """The environment folder of client ``name``."""
    return root() / name


def python_of(name: str) -> Path:
    """The Python interpreter of a Python client's venv."""
    return folder(name) / "bin" / "python"


def node_bin(name: str, command: str) -> Path:
    """An executable a Node client's packages installed (``node_modules/.bin/<command>``)."""
    return folder(name) / "node_modules" / ".bin" / command


def node_modules(name: str) -> Path:
    """The ``node_modules`` folder of a Node client (``NODE_PATH`` for a driver script)."""
    return folder(name) / "node_modules"


def _node_version() -> str:
    node = shutil.which("node")
    if node is None:
        return "absent"
    return subprocess.run([node, "--version"], capture_output=True, text=True, check=False).stdout.strip()


def ready(name: str) -> bool:
    """Whether client ``name``'s folder was built, completely, from today's pins."""
    stamp = folder(name) / STAMP
    try:
        return bool(json.loads(stamp.read_text()) == ENVIRONMENTS[name].stamp())
    except (OSError, ValueError):
        return False


def _run(cmd: list[str], attempts: int = 2) -> None:
    """Run an install command; a failed one is tried once more (a registry hiccup), then raises."""
    for _ in range(attempts):
        done = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
        if done.returncode == 0:
            return
    if done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd)} failed ({done.returncode}):\n{(done.stderr or done.stdout)[-2000:]}"
        )


def provision(name: str) -> str:
    """Build client ``name``'s folder unless its stamp matches; returns what was done."""
    env = ENVIRONMENTS[name]
    if ready(name):
        return f"{name}: up to date"
    start = time.monotonic()
    target = folder(name)
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    if env.kind == "python":
        _run([sys.executable, "-m", "venv", str(target)])
        pip = [
            str(target / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ]
        _run([*pip, *env.pins])
    else:
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError(f"{name}: npm is not installed (the Node clients need Node.js 20 and npm)")
        _run(
            [
                npm,
                "install",
                "--prefix",
                str(target),
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                *env.pins,
            ]
        )
    (target / STAMP).write_text(json.dumps(env.stamp()))
    return f"{name}: built in {time.monotonic() - start:.0f} s"


def main(argv: list[str] | None = None) -> int:
    """Provision the named clients (default: all), two at a time; print one line per client."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("names", nargs="*", metavar="NAME", help=", ".join(ENVIRONMENTS))
    parser.add_argument("--check", action="store_true", help="only report which clients are ready")
    args = parser.parse_args(argv)
    unknown = [name for name in args.names if name not in ENVIRONMENTS]
    if unknown:
        parser.error(f"unknown environment {', '.join(unknown)} (known: {', '.join(ENVIRONMENTS)})")
    names = args.names or list(ENVIRONMENTS)
    if args.check:
        for name in names:
            print(f"{name}: {'ready' if ready(name) else 'missing'} ({folder(name)})")
        return 0 if all(ready(name) for name in names) else 1
    failed = 0
    with ThreadPoolExecutor(max_workers=2) as pool:
        for name, outcome in zip(names, pool.map(_safe_provision, names), strict=True):
            print(outcome, flush=True)
            failed += outcome.startswith(f"{name}: FAILED")
    return 1 if failed else 0


def _safe_provision(name: str) -> str:
    try:
        return provision(name)
    except (OSError, RuntimeError) as exc:
        return f"{name}: FAILED: {exc}"


if __name__ == "__main__":
    sys.exit(main())
