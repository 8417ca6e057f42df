"""What pyproject.toml and server.json declare, read once for the packaging tests."""

from __future__ import annotations

import json
import tomllib
from functools import cache
from typing import Any

from tests.support.source import REPO

SERVER_JSON = REPO / "server.json"
README = REPO / "README.md"
CHANGELOG = REPO / "CHANGELOG.md"
COMMANDS = {
    "finmcp-server": "finmcp.server.cli:main",
    "finmcp-proxy": "finmcp.proxy.cli:main",
    "finmcp-eval": "finmcp.evaluator.cli:main",
    "finmcp-kit": "finmcp.server.cli:main",  # the registry's `uvx finmcp-kit` (pyproject [project.scripts])
}
"""Every console script the wheel installs, and its entry point."""


@cache
def pyproject() -> dict[str, Any]:
    """pyproject.toml, parsed."""
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def version() -> str:
    """The version (pyproject.toml is the one place it lives)."""
    return str(pyproject()["project"]["version"])


def distribution() -> str:
    """The distribution's name (``pip install NAME``)."""
    return str(pyproject()["project"]["name"])


def wheel_stem() -> str:
    """``finmcp_kit-0.2.0``: the name the wheel's files and its ``.dist-info`` folder start with."""
    return f"{distribution().replace('-', '_')}-{version()}"


def server_json() -> dict[str, Any]:
    """server.json, parsed (a fresh copy each call: tests mutate it)."""
    return json.loads(SERVER_JSON.read_text(encoding="utf-8"))
