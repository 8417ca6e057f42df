"""What every Python driver of the client matrix shares (standard library only: each runs in its client's venv).

A driver is ``python DRIVER.py --calls JSON (--url URL [--era handshake|stateless] | --stdio CMD ARGS...)``.
It lists the tools, makes each ``[tool, arguments]`` call of ``--calls`` in order through its client's
own API, and prints one JSON line: ``{"tools": N, "calls": [{"tool", "is_error", "error", "raised"}]}``
(``raised``: the client raised instead of returning an error result).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from typing import Any


@dataclass
class DriverArgs:
    """A driver's command line: where the proxy is and which calls to make."""

    calls: list[tuple[str, dict[str, Any]]]
    url: str | None
    stdio: list[str]
    era: str


def parse(argv: list[str] | None = None) -> DriverArgs:
    """Parse a driver's command line (``--stdio`` takes the rest of the line as the command)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    stdio: list[str] = []
    if "--stdio" in argv:
        at = argv.index("--stdio")
        stdio, argv = argv[at + 1 :], argv[:at]
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", required=True)
    parser.add_argument("--url")
    parser.add_argument("--era", choices=["handshake", "stateless"], default="handshake")
    args = parser.parse_args(argv)
    if (args.url is None) == (not stdio):
        parser.error("give exactly one of --url URL and --stdio CMD ARGS...")
    calls = [(tool, arguments) for tool, arguments in json.loads(args.calls)]
    return DriverArgs(calls, args.url, stdio, args.era)


def outcome(tool: str, is_error: bool, error: str | None = None, raised: bool = False) -> dict[str, Any]:
    """One call as the client saw it."""
    return {"tool": tool, "is_error": is_error, "error": error, "raised": raised}


def emit(tools: int, calls: list[dict[str, Any]], **extra: Any) -> None:
    """Print the driver's one JSON line."""
    print(json.dumps({"tools": tools, "calls": calls, **extra}, ensure_ascii=False), flush=True)
