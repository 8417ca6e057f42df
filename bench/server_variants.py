"""finmcp-server with pieces of its HTTP stack switched off: the baselines the bench and tests compare to.

``python -m bench.server_variants --stack NAME [finmcp-server serving options]`` parses the options as
``finmcp-server`` does and serves with :data:`STACKS` ``[NAME]`` instead of the product's stack
(:class:`server.options.ServingStack`; the product itself has no switch for these):

- ``sdk-path``: every call takes the SDK's path (no tools/call fast path); the fast path's reference
  in ``tests/server/test_fastpath.py`` and ``tests/conformance/test_fastpath_conformance.py``;
- ``finmcp-before``: asyncio's loop, h11 and the SDK's path, as the server ran before issue 19;
- ``finmcp-uvloop``: then uvloop; ``finmcp-uvloop-httptools``: then the httptools parser.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from finmcp.server.cli import build_parser, serve_options
from finmcp.server.options import SDK_PATH, ServingStack
from finmcp.server.serve import ServeError, serve

STACKS = {
    "sdk-path": SDK_PATH,
    "finmcp-before": ServingStack(fast_path=False, loop="asyncio", http="h11"),
    "finmcp-uvloop": ServingStack(fast_path=False, http="h11"),
    "finmcp-uvloop-httptools": SDK_PATH,
}
"""The stacks by name; the last three are the issue 19 changes switched off one by one, in the order
they landed (``finmcp`` itself, the product, adds the tools/call fast path)."""


def main(argv: list[str] | None = None) -> int:
    """Serve as ``finmcp-server`` would, on the named stack."""
    choose = argparse.ArgumentParser(prog="bench.server_variants", add_help=False)
    choose.add_argument("--stack", choices=sorted(STACKS), required=True)
    chosen, rest = choose.parse_known_args(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(rest)
    if args.command not in (None, "serve"):
        print("bench.server_variants: only serving takes a stack", file=sys.stderr)
        return 2
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr)
    try:
        return serve(serve_options(args), environ=os.environ, stack=STACKS[chosen.stack])
    except ServeError as exc:
        print(f"finmcp-server: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
