"""Start ``finmcp-server`` and ``finmcp-proxy`` as child processes on free 127.0.0.1 ports (``--spawn``).

The harness talks to them only over HTTP: the installed console scripts are launched with
``--host 127.0.0.1 --port 0`` and the ports are read from their ready lines on stderr
(:class:`recordings.plumbing.launch.FinmcpProcess`: stderr goes to a file, so a full pipe can never
block a child).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from finmcp.recordings.plumbing.launch import FinmcpProcess, LaunchError, StartStop


class SpawnError(LaunchError):
    """A child process exited or did not announce itself in time (the message holds its stderr)."""


def _child(program: str, args: list[str], wait_warm: bool = False) -> FinmcpProcess:
    return FinmcpProcess(
        program, args, timeout=60.0, stop_timeout=10.0, error=SpawnError, wait_warm=wait_warm
    )


@dataclass
class SpawnConfig:
    """What ``--spawn`` starts: a server over one inventory and a logging proxy in front of it."""

    db: Path
    inventory: str = "finmcp65"
    recordings: Path | None = None
    miss: str = "simulate"
    latency: str = "none"
    seed: int = 0
    group_gap_ms: float = 0.0
    """0: the proxy joins groups only by overlap (the harness issues dependent calls back to back)."""
    extra_server_args: list[str] = field(default_factory=list)
    extra_proxy_args: list[str] = field(default_factory=list)
    """More ``finmcp-proxy`` flags (e.g. ``--fault-schedule FILE``: the proxy injects the faults)."""
    ship_to: str | None = None
    """A ``postgresql://`` URL: the proxy treats ``db`` as its outbox and ships it there (``--ship-to``)."""
    llm_upstream: str | None = None
    """A model upstream: the proxy also opens its model door to it (``--llm-upstream``, docs/proxy.md)."""
    wait_warm: bool = False
    """Start the proxy (and return) only once the server has finished its start-up warm-up (its warm
    line): for measurements; calls are answered before, the first ones more slowly."""


class Stack(StartStop):
    """Server + proxy children; ``proxy_url`` is the untagged proxy endpoint base (``http://host:port``)."""

    def __init__(self, config: SpawnConfig) -> None:
        self.config = config
        self.server: FinmcpProcess | None = None
        self.proxy: FinmcpProcess | None = None

    @property
    def proxy_base(self) -> str:
        """``http://127.0.0.1:PORT`` of the proxy."""
        return self.proxy.base if self.proxy else ""

    @property
    def server_url(self) -> str:
        """The server's ``/mcp`` endpoint."""
        return f"{self.server.base}/mcp" if self.server else ""

    def start(self) -> Self:
        """Start the server, then the proxy pointing at it."""
        c = self.config
        server_args = [
            "--inventory",
            c.inventory,
            "--miss",
            c.miss,
            "--latency",
            c.latency,
            "--seed",
            str(c.seed),
        ]
        if c.recordings is not None:
            server_args += ["--recordings", str(c.recordings)]
        server_args += [*c.extra_server_args, "--host", "127.0.0.1", "--port", "0"]
        self.server = _child("finmcp-server", server_args, c.wait_warm).start()
        proxy_args = [
            "--upstream",
            self.server_url,
            "--db",
            str(c.db),
            "--group-gap-ms",
            str(c.group_gap_ms),
            *(["--ship-to", c.ship_to] if c.ship_to else []),
            *c.extra_proxy_args,
            *(["--llm-upstream", c.llm_upstream] if c.llm_upstream else []),
            "--host",
            "127.0.0.1",
            "--port",
            "0",
        ]
        try:
            self.proxy = _child("finmcp-proxy", proxy_args).start()
        except BaseException:
            self.server.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the proxy first (it commits its queue), then the server."""
        for child in (self.proxy, self.server):
            if child is not None:
                child.stop()
