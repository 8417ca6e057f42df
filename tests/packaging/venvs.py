"""Install the wheel as users do, outside the checkout, and run its commands there.

:func:`make_venv` is ``python -m venv DIR`` then ``DIR/bin/pip install WHEEL`` (dependencies from the
package index or pip's cache); :func:`uv_tool_install` is an isolated tool install (``uv tool install
WHEEL``) whose tool and bin folders are temporary, so the user's own tools are untouched. Commands run
with a clean environment (no ``PYTHONPATH``, no active venv) and a working folder outside the checkout;
:class:`InstalledServer`/:class:`InstalledProxy` launch the installed programs through the tests'
usual launchers, with the installed bin folder in place of this interpreter's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from uv import find_uv_bin

from finmcp.proxy.testing import ProxyProcess
from finmcp.recordings.plumbing.launch import FinmcpProcess
from finmcp.server.testing import ServerProcess

INSTALL_TIMEOUT_S = 900  # a cold cache downloads the dependencies (~60 MB)
_INHERITED_PYTHON = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "PYTHONSAFEPATH")


def clean_env(bin_dir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without Python's path settings or an active venv; ``bin_dir`` first on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in _INHERITED_PYTHON}
    env["PATH"] = os.pathsep.join([str(bin_dir), env.get("PATH", "")])
    return {**env, **(extra or {})}


@dataclass
class Installed:
    """Where an install put its commands (``bin``), the environment to run them with, and timings."""

    root: Path
    bin: Path
    env: dict[str, str]
    seconds: dict[str, float] = field(default_factory=dict)

    def run(self, *argv: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` (its first word a command of :attr:`bin`) to completion in ``cwd``."""
        command = [str(self.bin / argv[0]), *argv[1:]]
        return subprocess.run(
            command,
            capture_output=True,
            text=True,
            cwd=cwd,
            env=self.env,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )


def _timed(
    seconds: dict[str, float], what: str, argv: Sequence[str], env: Mapping[str, str], cwd: Path
) -> None:
    started = time.monotonic()
    done = subprocess.run(
        list(argv),
        capture_output=True,
        text=True,
        cwd=cwd,
        env=dict(env),
        timeout=INSTALL_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )
    seconds[what] = time.monotonic() - started
    assert done.returncode == 0, f"{what} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


def make_venv(root: Path, wheel: Path, cwd: Path) -> Installed:
    """A fresh venv at ``root`` with the wheel installed by its own pip (``cwd``: outside the checkout)."""
    bin_dir = root / "bin"
    env = clean_env(bin_dir)
    installed = Installed(root, bin_dir, env)
    _timed(installed.seconds, "python -m venv", [sys.executable, "-m", "venv", str(root)], env, cwd)
    pip_install = [str(bin_dir / "python"), "-m", "pip", "install", "--quiet", str(wheel)]
    _timed(installed.seconds, "pip install", pip_install, env, cwd)
    return installed


def uv_tool_install(root: Path, wheel: Path, cwd: Path) -> Installed:
    """``uv tool install WHEEL`` with its tool and bin folders under ``root`` (uv's cache stays shared)."""
    bin_dir = root / "bin"
    uv_dirs = {
        "UV_TOOL_DIR": str(root / "tools"),
        "UV_TOOL_BIN_DIR": str(bin_dir),
        "UV_PYTHON_DOWNLOADS": "never",  # the machine's Python, as pip's venv uses
    }
    env = clean_env(bin_dir, uv_dirs)
    installed = Installed(root, bin_dir, env)
    argv = [find_uv_bin(), "tool", "install", "--python", sys.executable, str(wheel)]
    _timed(installed.seconds, "uv tool install", argv, env, cwd)
    return installed


class InstalledCommand(FinmcpProcess):
    """A launcher that runs the program from an install's bin folder (set by :func:`launch_from`)."""

    installed: Installed

    def command(self) -> list[str]:
        return [str(self.installed.bin / self.program), *self.args]


class InstalledServer(InstalledCommand, ServerProcess):
    """:class:`ServerProcess` (loopback, a free port, ``/healthz`` at start) of an installed ``finmcp-server``."""


class InstalledProxy(InstalledCommand, ProxyProcess):
    """:class:`ProxyProcess` (loopback, a free port) of an installed ``finmcp-proxy``."""


P = TypeVar("P", bound=InstalledCommand)


def launch_from(process: P, installed: Installed) -> P:
    """Point ``process`` (not started yet) at ``installed``'s bin folder and clean environment."""
    process.installed = installed
    process.env = dict(installed.env)
    return process
