"""The installed console scripts (``finmcp-server``, ``finmcp-proxy``, ``finmcp-eval``), as users run them.

They live next to the interpreter running the tests (the venv's ``bin``); end-to-end tests launch
them rather than ``python -m ...``, so a broken entry point fails the suite.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from mcp.client.stdio import StdioServerParameters

BIN = Path(sys.executable).parent
SCRIPTS = ("finmcp-server", "finmcp-proxy", "finmcp-eval")


def script(name: str) -> str:
    """The path of an installed console script (fails clearly when it is not installed)."""
    path = BIN / name
    if not path.is_file():
        raise AssertionError(f"{name} is not installed next to {sys.executable} (run make .venv/.installed)")
    return str(path)


def run_script(
    name: str, *args: str, cwd: str | Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run a console script to completion; stdout and stderr are captured as text."""
    return subprocess.run(
        [script(name), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )


def server_stdio_command(*args: str) -> str:
    """``finmcp-server --transport stdio ARGS`` as one command line (for ``--upstream-cmd``)."""
    return " ".join([script("finmcp-server"), "--transport", "stdio", *args])


def proxy_stdio_command(upstream: Sequence[str], db: str | Path, *extra: str) -> list[str]:
    """The command line an MCP host launches for ``finmcp-proxy --transport stdio``."""
    return [script("finmcp-proxy"), "--transport", "stdio", *upstream, "--db", str(db), *extra]


def proxy_stdio(upstream: Sequence[str], db: str | Path, *extra: str) -> StdioServerParameters:
    """:func:`proxy_stdio_command` as the SDK client's stdio parameters."""
    command, *args = proxy_stdio_command(upstream, db, *extra)
    return StdioServerParameters(command=command, args=args)


def server_stdio(*args: str) -> StdioServerParameters:
    """``finmcp-server --transport stdio ARGS`` as the SDK client's stdio parameters."""
    return StdioServerParameters(command=script("finmcp-server"), args=["--transport", "stdio", *args])
