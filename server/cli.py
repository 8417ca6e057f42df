"""Command line of ``finmcp-server``.

``finmcp-server [serve] --inventory finmcp65 --transport http --port 8765`` serves an inventory (see
docs/server.md); ``finmcp-server inventories`` summarises the built-in inventories, ``finmcp-server
tools`` lists one inventory's tools (or dumps them as MCP ``tools/list`` JSON), ``finmcp-server
graph`` exports and queries the typed dependency graph; ``bake``, ``import`` and ``export`` fill and
move recordings files (see :mod:`server.recording_cli`).

The serving flags are parsed here into :class:`server.options.ServeOptions` (:func:`serve_options`),
and serving is :func:`server.serve.serve` called with them: nothing below the CLI reads ``argparse``.

The parser is built from light modules only: the SDK, the inventories and the simulator are imported
when a command runs, so ``--help`` is instant (tests/reliability/test_help_is_light.py checks what it loads).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

from finmcp.recordings.errors import RecordingsError
from finmcp.recordings.plumbing.flags import add_listener_options, add_log_level, add_recordings, add_version
from finmcp.recordings.plumbing.pipes import quiet_on_broken_pipe
from finmcp.recordings.plumbing.tls import TlsConfigError, add_tls_options, check_tls_files
from finmcp.server.latency import DEFAULT_LATENCY
from finmcp.server.options import DEFAULT_PORT, SSE_PAGE_BYTES, TOKEN_ENV, ServeError, ServeOptions
from finmcp.server.recording_cli import add_recording_commands, run_recording_command
from finmcp.server.sequence import EXHAUSTED_POLICIES, REPLAY_MODES
from finmcp.tool_specs.errors import InventoryError


def page_size_option(value: str) -> int | None:
    """``--page-size``: ``auto`` (None), ``0`` (one page) or a number of tools per page."""
    if value == "auto":
        return None
    try:
        size = int(value)
    except ValueError:
        size = -1
    if size < 0:
        raise argparse.ArgumentTypeError(f"{value!r}: expected auto, 0 (no pagination) or a number of tools")
    return size


def add_serve_options(parser: argparse.ArgumentParser) -> None:
    """The serving options (shared by the bare command and ``serve``)."""
    group = parser.add_argument_group("serving")
    group.add_argument(
        "--inventory",
        dest="inventories",
        action="append",
        metavar="NAME_OR_FILE",
        help="inventory to serve (built-in name or file); repeat for several (default finmcp65)",
    )
    group.add_argument("--transport", choices=("http", "stdio", "sse"), default="http")
    add_listener_options(
        group,
        default_port=DEFAULT_PORT,
        token_help=f"require 'Authorization: Bearer TOKEN' (or set {TOKEN_ENV})",
        cors=True,
    )
    add_tls_options(group)
    add_recordings(group, type=Path, help="recordings file (SQLite) to replay answers from")
    group.add_argument(
        "--recordings-inventory",
        action="append",
        metavar="NAME",
        help="inventory name(s) to look recordings up under (default: the inventory, then its base)",
    )
    group.add_argument(
        "--server",
        metavar="NAME",
        help="serve the recorded server NAME of the --recordings file as it was (its serverInfo, tools and"
        " answers, no inventory); without --inventory a file declaring one other server is served so",
    )
    group.add_argument(
        "--entities",
        action="append",
        type=Path,
        default=[],
        metavar="FILE",
        help="benchmark samples (official FinMCP-Bench JSON or finmcp JSONL, may be gzipped) whose funds and"
        " strategies the simulated world adopts, beside those of --recordings (repeatable)",
    )
    group.add_argument("--seed", type=int, default=0, help="seed of the simulator, latency and fault draws")
    group.add_argument(
        "--miss", choices=("simulate", "strict"), default="simulate", help="what an unrecorded call gets"
    )
    group.add_argument(
        "--replay",
        choices=REPLAY_MODES,
        default="key",
        help="key (default): one recorded answer per (tool, arguments); sequence: repeated identical calls "
        "get the recorded answers in order, errors as errors, per session (docs/server.md)",
    )
    group.add_argument(
        "--replay-exhausted",
        choices=EXHAUSTED_POLICIES,
        default="repeat-last",
        help="with --replay sequence, when a key's recorded answers run out: repeat-last (default), "
        "error, or simulate (the per-key recording, then --miss)",
    )
    group.add_argument(
        "--latency",
        default=DEFAULT_LATENCY,
        metavar="SPEC",
        help=f"none | recorded | fixed:MS | lognormal:P50,P99 (default {DEFAULT_LATENCY})",
    )
    group.add_argument(
        "--faults",
        action="append",
        default=[],
        metavar="RULES",
        help="PATTERN:KIND=RATE[,...] (see docs/server.md)",
    )
    group.add_argument(
        "--fault-schedule",
        type=Path,
        default=None,
        metavar="FILE",
        help="a fault schedule (JSON): seeded faults per sample and call position (see docs/server.md)",
    )
    group.add_argument(
        "--page-size",
        type=page_size_option,
        default=None,
        metavar="auto|0|N",
        help=(
            "tools/list pages: auto (default: one page, except over --transport sse, where pages stay"
            f" under {SSE_PAGE_BYTES // 1024} KiB for clients' 1 MiB event cap), 0 (never paginate) or N tools"
        ),
    )
    group.add_argument(
        "--json-response", action="store_true", help="HTTP: answer with JSON bodies instead of SSE streams"
    )
    group.add_argument(
        "--no-output-schemas",
        action="store_true",
        help="serve tools without outputSchema and results without structuredContent (text only, like Qieman)",
    )
    add_log_level(group)


def serve_options(args: argparse.Namespace) -> ServeOptions:
    """The typed serving options of parsed ``finmcp-server [serve]`` arguments.

    Checks the TLS files first (before anything loads), as a :class:`ServeError`.
    """
    try:
        tls = check_tls_files(args.tls_cert, args.tls_key)
    except TlsConfigError as exc:
        raise ServeError(str(exc)) from None
    return ServeOptions(
        inventories=tuple(args.inventories or ("finmcp65",)),
        inventory_given=args.inventories is not None,
        server=args.server,
        transport=args.transport,
        host=args.host,
        port=args.port,
        tls=(args.tls_cert, args.tls_key) if tls is not None else None,
        recordings=args.recordings,
        recordings_inventories=tuple(args.recordings_inventory) if args.recordings_inventory else None,
        entities=tuple(args.entities),
        seed=args.seed,
        miss=args.miss,
        replay=args.replay,
        replay_exhausted=args.replay_exhausted,
        latency=args.latency,
        faults=tuple(args.faults),
        fault_schedule=args.fault_schedule,
        page_size=args.page_size,
        json_response=args.json_response,
        output_schemas=not args.no_output_schemas,
        token=args.token,
        max_body=args.max_body,
        allow_hosts=tuple(args.allow_host),
        allow_origins=tuple(args.allow_origin),
        cors_origins=tuple(args.cors_origin),
    )


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``finmcp-server`` (serving options and the subcommands)."""
    serve_options = argparse.ArgumentParser(add_help=False)
    add_serve_options(serve_options)
    parser = argparse.ArgumentParser(
        prog="finmcp-server",
        description="finmcp MCP tool server: serves inventories (default command) or inspects them",
        parents=[serve_options],
    )
    add_version(parser)
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
    from finmcp.tool_specs.inventory import load_inventory

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
    from finmcp.tool_specs.graph import DependencyGraph
    from finmcp.tool_specs.inventory import load_inventory

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
            options = serve_options(args)
            from finmcp.server.serve import serve

            return serve(options, environ=os.environ)
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
            from finmcp.tool_specs.summary import main as print_summary

            return print_summary()
        if args.command == "tools":
            return _tools(args)
        return _graph(args)
    except (InventoryError, KeyError) as exc:
        print(f"finmcp-server: {exc}", file=sys.stderr)
        return 2
