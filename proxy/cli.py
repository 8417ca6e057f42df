"""Command line of finmcp-proxy (filled by later issues)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    print("finmcp-proxy: not implemented yet", file=sys.stderr)
    return 2
