"""Run ``finmcp-proxy`` as a real subprocess on loopback (tests and benchmarks).

``with ProxyProcess(["--upstream", url, "--db", db]) as proxy: proxy.url`` starts the installed
``finmcp-proxy ... --host 127.0.0.1 --port 0``, waits (bounded) for its ready line and stops it on exit
(SIGTERM, so the trace writer commits what is queued; stderr and the exit status stay readable, see
:class:`recordings.plumbing.launch.FinmcpProcess`). ``stdio_args`` builds the command line a host
would launch for ``--transport stdio``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from finmcp.recordings.plumbing.launch import LaunchError, LaunchSpec, LoopbackProcess


class ProxyStartError(LaunchError):
    """The proxy exited or did not become ready in time (message holds its stderr)."""


class ProxyProcess(LoopbackProcess):
    """A ``finmcp-proxy`` HTTP listener on 127.0.0.1 and a free port.

    ``ProxyProcess(args, timeout=20.0, env=None, module=None)``; ``module`` runs another module that
    prints the same ready line (the bench's bare relay).
    """

    spec = LaunchSpec("finmcp-proxy", ("--host", "127.0.0.1", "--port", "0"), timeout=20.0)
    error_type = ProxyStartError


def stdio_args(upstream: Sequence[str], db: str | Path, *extra: str) -> list[str]:
    """Arguments for ``python -m finmcp.proxy --transport stdio`` (what an MCP host launches)."""
    return ["-m", "finmcp.proxy", "--transport", "stdio", *upstream, "--db", str(db), *extra]
