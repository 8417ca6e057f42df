"""The official MCP conformance suite and server-everything, as provisioned by ``provision.sh``.

:func:`provisioned` finds Node 22, ``@modelcontextprotocol/conformance`` and
``@modelcontextprotocol/server-everything`` under ``~/.cache/finmcp/conformance`` (or
``$FINMCP_CONFORMANCE_HOME``); when they are missing the test skips, or fails under ``FINMCP_CI=1``
(``.ci/run`` runs ``tests/conformance/provision.sh`` before ``make test``). Nothing is installed here.

:meth:`Suite.start_server_run` starts the suite's server scenarios against a URL (``--suite all``:
the pending ones too) and :meth:`Suite.start_client_run` one client scenario with a client command;
each run writes ``checks.json`` files that :func:`results` reads into one :class:`Outcome` per
scenario. Every Node process gets ``loopback.mjs`` preloaded, so whatever it listens on is bound to
127.0.0.1. :class:`Everything` runs server-everything over Streamable HTTP on a free loopback port.
"""

from __future__ import annotations

import functools
import json
import os
import re
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from tests.support.net import free_port
from tests.support.postgres import require_or_skip

HERE = Path(__file__).resolve().parent
LOOPBACK = HERE / "loopback.mjs"
PROVISION = HERE / "provision.sh"
RUN_TIMEOUT_S = 120.0  # not a speed limit: only ends a run that hangs
_STAMPED = re.compile(r"^(?:server-)?(?P<name>.+?)-\d{4}-\d\d-\d\dT[\d-]+Z$")


def home() -> Path:
    """Where ``provision.sh`` installs (``$FINMCP_CONFORMANCE_HOME`` or ``~/.cache/finmcp/conformance``)."""
    env = os.environ.get("FINMCP_CONFORMANCE_HOME")
    return Path(env) if env else Path.home() / ".cache" / "finmcp" / "conformance"


@dataclass(frozen=True)
class Outcome:
    """One scenario's checks: how many ran, passed, failed and warned, and the failures' messages."""

    checks: int
    passed: int
    failed: int
    warnings: int
    failures: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """The scenario passed: it ran checks and none failed (a warning is an unmet SHOULD)."""
        return self.checks > 0 and self.failed == 0


@dataclass
class Run:
    """A suite process writing its results into ``out``."""

    process: subprocess.Popen[bytes]
    out: Path
    label: str

    def wait(self) -> dict[str, Outcome]:
        """Wait for the run to end; its outcome per scenario (the run fails the test when it wrote none)."""
        try:
            stdout, _ = self.process.communicate(timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            stdout, _ = self.process.communicate()
            raise AssertionError(f"{self.label}: the suite did not finish in {RUN_TIMEOUT_S} s") from None
        found = results(self.out)
        assert found, f"{self.label}: the suite wrote no results\n{stdout.decode(errors='replace')[-3000:]}"
        return found


def results(out: Path) -> dict[str, Outcome]:
    """Every scenario's outcome under a results folder (``<scenario>-<timestamp>/checks.json``)."""
    outcomes: dict[str, Outcome] = {}
    for checks_file in sorted(out.rglob("checks.json")):
        folder = checks_file.parent.relative_to(out).as_posix()
        match = _STAMPED.match(folder)
        name = match.group("name") if match else folder
        checks = json.loads(checks_file.read_text())
        statuses = [check.get("status") for check in checks]
        failures = tuple(
            f"{check.get('id')}: {check.get('errorMessage') or check.get('description')}"
            for check in checks
            if check.get("status") == "FAILURE"
        )
        outcomes[name] = Outcome(
            len(statuses),
            statuses.count("SUCCESS"),
            statuses.count("FAILURE"),
            statuses.count("WARNING"),
            failures,
        )
    return outcomes


@dataclass(frozen=True)
class Suite:
    """The provisioned Node 22 and the suite's CLI."""

    root: Path

    @property
    def node(self) -> Path:
        return self.root / "node_modules" / "node" / "bin" / "node"

    @property
    def cli(self) -> Path:
        return self.root / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"

    @property
    def everything(self) -> Path:
        return (
            self.root / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
        )

    def node_command(self, script: Path, *args: str) -> list[str]:
        """``node --import loopback.mjs SCRIPT ARGS`` with the provisioned Node 22."""
        return [str(self.node), "--import", LOOPBACK.as_uri(), str(script), *args]

    def _start(self, args: Sequence[str], out: Path, label: str, env: Mapping[str, str] | None = None) -> Run:
        out.mkdir(parents=True, exist_ok=True)
        process = subprocess.Popen(
            self.node_command(self.cli, *args, "--output-dir", str(out)),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=out,
            env=None if env is None else dict(env),
        )
        return Run(process, out, label)

    def start_server_run(self, url: str, out: Path, label: str) -> Run:
        """Start every server scenario (``--suite all``) against ``url``."""
        return self._start(["server", "--url", url, "--suite", "all"], out, label)

    def start_client_run(
        self, scenario: str, command: str, out: Path, label: str, env: Mapping[str, str] | None = None
    ) -> Run:
        """Start one client scenario; the suite runs ``command <its server's URL>`` (with ``env``)."""
        return self._start(["client", "--scenario", scenario, "--command", command], out, label, env)

    @functools.cache  # noqa: B019  (a few frozen Suite values per session: nothing to leak)
    def scenarios(self, side: str) -> list[str]:
        """The suite's scenario names for ``side`` (``server`` or ``client``), as ``list`` prints them."""
        shown = subprocess.run(
            [str(self.node), str(self.cli), "list"], capture_output=True, text=True, check=True, timeout=60
        ).stdout
        heading = "Server scenarios" if side == "server" else "Client scenarios"
        section = shown.split(heading, 1)[1].split("\n\n", 1)[0]
        return re.findall(r"^\s*-\s+(\S+)", section, re.MULTILINE)


def provisioned() -> Suite:
    """The provisioned suite; skips (fails under ``FINMCP_CI=1``) when ``provision.sh`` has not run."""
    suite = Suite(home())
    missing = [p for p in (suite.node, suite.cli, suite.everything) if not p.exists()]
    if missing:
        require_or_skip(
            f"the MCP conformance suite is not provisioned (missing {missing[0]}); run {PROVISION}"
        )
    return suite


@dataclass
class Everything:
    """``@modelcontextprotocol/server-everything`` over Streamable HTTP on 127.0.0.1 (``with`` stops it)."""

    suite: Suite
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stdio_command(self) -> list[str]:
        """The command that runs server-everything over stdio."""
        return self.suite.node_command(self.suite.everything, "stdio")

    def __enter__(self) -> Self:
        env = {**os.environ, "PORT": str(self.port)}
        self.process = subprocess.Popen(
            self.suite.node_command(self.suite.everything, "streamableHttp"),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    err = self.process.stderr.read().decode(errors="replace") if self.process.stderr else ""
                    self.__exit__()
                    raise AssertionError(f"server-everything did not start on {self.url}:\n{err}") from None
                time.sleep(0.05)

    def __exit__(self, *exc: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
