"""Command line of ``finmcp-server``.

``finmcp-server [serve] --inventory finmcp65 --transport http --port 8765`` serves an inventory (see
docs/server.md); ``finmcp-server inventories`` summarises the built-in inventories, ``finmcp-server
tools`` lists one inventory's tools (or dumps them as MCP ``tools/list`` JSON), ``finmcp-server
graph`` exports and queries the typed dependency graph; ``bake``, ``import`` and ``export`` fill and
move recordings files (see :mod:`server.recording_cli`).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

from recordings.errors import RecordingsError
from recordings.plumbing.pipes import quiet_on_broken_pipe
from server.recording_cli import add_recording_commands, run_recording_command
from server.serve import ServeError, add_serve_options, serve
from tool_specs.errors import InventoryError
from tool_specs.graph import DependencyGraph
from tool_specs.inventory import load_inventory
from tool_specs.summary import main as print_summary


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``finmcp-server`` (serving options and the subcommands)."""
    serve_options = argparse.ArgumentParser(add_help=False)
    add_serve_options(serve_options)
    parser = argparse.ArgumentParser(
        prog="finmcp-server",
        description="finmcp MCP tool server: serves inventories (default command) or inspects them",
        parents=[serve_options],
    )
    sub = parser.add_subparsers(dest="command")
    sub.add_parser(
        "serve", help="serve inventories over http, stdio or sse (the default)", parents=[serve_options]
    )
    sub.add_parser("inventories", help="summarise the built-in inventories")

    tools = sub.add_parser("tools", help="list an inventory's tools")
    tools.add_argument("--inventory", default="finmcp65", help="built-in name or inventory file")
    tools.add_argument("--json", action="store_true", help="print the MCP tools/list result as JSON")

    graph = sub.add_parser("graph", help="the typed data-flow dependency graph of an inventory")
    graph.add_argument("--inventory", default="finmcp65", help="built-in name or inventory file")
    graph.add_argument("--output", dest="out", type=Path, help="write the graph as JSON to this file")
    graph.add_argument("--successors", metavar="TOOL", help="print the tools that TOOL feeds")
    graph.add_argument("--paths", nargs=2, metavar=("FROM", "TO"), help="print paths between two tools")
    graph.add_argument("--max-length", type=int, default=3, help="longest path, in edges (default 3)")
    add_recording_commands(sub)
    return parser


def _tools(args: argparse.Namespace) -> int:
    inventory = load_inventory(args.inventory)
    if args.json:
        print(json.dumps({"tools": list(inventory.mcp_tools)}, ensure_ascii=False, indent=1))
        return 0
    for tool in inventory:
        tags = tool.tags
        print(
            f"{tool.name:<40} {tags.timeliness:<9} {tags.intent_type:<13} {','.join(tags.regulatory_domains)}"
        )
    print(f"{len(inventory)} tools in {inventory.name}")
    return 0


def _graph(args: argparse.Namespace) -> int:
    graph = DependencyGraph.from_inventory(load_inventory(args.inventory))
    if args.out:
        args.out.write_text(json.dumps(graph.to_json(), ensure_ascii=False, indent=1) + "\n", "utf-8")
    if args.successors:
        print("\n".join(graph.successors(args.successors)))
    elif args.paths:
        source, target = args.paths
        for path in graph.paths(source, target, max_length=args.max_length):
            print(" -> ".join(path))
    else:
        print(json.dumps(graph.counts()))
    return 0


@quiet_on_broken_pipe
def main(argv: list[str] | None = None) -> int:
    """Entry point of ``finmcp-server``."""
    args = build_parser().parse_args(argv)
    if args.command in (None, "serve"):
        logging.basicConfig(
            level=args.log_level.upper(),
            stream=sys.stderr,
            format="%(asctime)s %(name)s %(levelname)s %(message)s",
        )
        try:
            return serve(args, environ=os.environ)
        except ServeError as exc:
            print(f"finmcp-server: {exc}", file=sys.stderr)
            return 2
    if args.command == "recordings":
        try:
            return run_recording_command(args)
        except (RecordingsError, InventoryError, ValueError, OSError) as exc:
            print(f"finmcp-server recordings {args.recordings_command}: {exc}", file=sys.stderr)
            return 2
    try:
        if args.command == "inventories":
            return print_summary()
        if args.command == "tools":
            return _tools(args)
        return _graph(args)
    except (InventoryError, KeyError) as exc:
        print(f"finmcp-server: {exc}", file=sys.stderr)
        return 2
