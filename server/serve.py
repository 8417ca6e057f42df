"""``finmcp-server`` serving options and start-up: inventories, recordings, simulator, models, transport."""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from recordings.errors import RecordingsError
from recordings.plumbing.flags import add_listener_options, add_log_level, add_recordings
from recordings.plumbing.launch import announce_ready
from recordings.plumbing.listener import LOOPBACK_HOSTS, bind_socket
from recordings.plumbing.tls import TlsConfigError, add_tls_options, check_tls_args
from recordings.store import RecordingStore
from server.app import HttpApp, build_http_app, build_mcp_server
from server.faults import FaultSpecError, parse_faults
from server.latency import DEFAULT_LATENCY, LatencySpecError, parse_latency
from server.security import SecuritySettings
from server.sequence import EXHAUSTED_POLICIES, REPLAY_MODES
from server.service import SimulateFn, ToolService
from server.transports import run_http, run_stdio
from tool_specs.errors import InventoryError
from tool_specs.inventory import Inventory, load_inventory

DEFAULT_PORT = 8765
TOKEN_ENV = "FINMCP_SERVER_TOKEN"
# The mcp SDK's legacy SSE client (``sse_client``) refuses an SSE event over 1 MiB and has no option to
# raise the cap; over that transport every answer is one event on the GET stream, so by default
# ``tools/list`` pages stay well under it (the 760-tool listing is ~1.7 MB: 4 pages).
SSE_PAGE_BYTES = 512 * 1024


class ServeError(Exception):
    """A start-up problem, reported as one line on stderr (exit status 2)."""


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


def _inventories(names: list[str] | None) -> dict[str, Inventory]:
    inventories: dict[str, Inventory] = {}
    for name in names or ["finmcp65"]:
        try:
            inventory = load_inventory(name)
        except (InventoryError, KeyError) as exc:
            raise ServeError(f"--inventory {name}: {exc}") from None
        if inventory.name in inventories:
            raise ServeError(f"--inventory {name}: inventory {inventory.name!r} is given twice")
        inventories[inventory.name] = inventory
    return inventories


def _store(path: Path | None) -> RecordingStore | None:
    if path is None:
        return None
    if not path.is_file():
        raise ServeError(f"--recordings {path}: no such file")
    try:
        return RecordingStore.open(path)
    except RecordingsError as exc:
        raise ServeError(f"--recordings {path}: {exc}") from None


def _world(seed: int, store: RecordingStore | None) -> Any:
    """One seeded world for every served inventory; it knows the codes the recordings mention."""
    try:
        from server.sim.known_codes import codes_from_recordings
        from server.world import World
    except ImportError as exc:
        raise ServeError(
            f"--miss simulate needs the simulator (server.sim), which cannot be imported ({exc}); "
            "run with --miss strict --recordings FILE"
        ) from None
    if store is None:
        return World(seed=seed)
    funds, strategies = codes_from_recordings(store)
    return World(seed=seed, extra_fund_codes=sorted(funds), extra_strategy_codes=sorted(strategies))


def _simulators(inventories: Mapping[str, Inventory], seed: int, world: Any) -> dict[str, SimulateFn]:
    """A simulator per inventory over the shared world, warmed in one background thread.

    Search indexes are start-up work: they are built beside the serving loop, not in the first call.
    One thread warms the simulators in turn (they share the world, so the first does most of the
    work), rather than a thread each racing to build the same entities in their own malloc arenas.
    """
    from server.sim.simulator import Simulator, freeze_heap

    simulators = [Simulator(inventory, seed=seed, world=world) for inventory in inventories.values()]

    def warm_all() -> None:
        for simulator in simulators:
            simulator.warm()
        freeze_heap()

    threading.Thread(target=warm_all, name="warm-simulators", daemon=True).start()
    return {name: simulator.simulate for name, simulator in zip(inventories, simulators, strict=True)}


def build_services(args: argparse.Namespace) -> dict[str, ToolService]:
    """One :class:`ToolService` per ``--inventory``, configured from the parsed options."""
    try:
        latency = parse_latency(args.latency, seed=args.seed)
        faults = parse_faults(args.faults, seed=args.seed)
    except (LatencySpecError, FaultSpecError) as exc:
        raise ServeError(str(exc)) from None
    page_size = args.page_size or None  # 0: one page
    page_bytes = SSE_PAGE_BYTES if args.page_size is None and args.transport == "sse" else None
    inventories = _inventories(args.inventories)
    store = _store(args.recordings)
    world = _world(args.seed, store) if args.miss == "simulate" else None
    simulate = _simulators(inventories, args.seed, world) if world is not None else {}
    services = {}
    for name, inventory in inventories.items():
        services[name] = ToolService(
            inventory,
            store=store,
            recording_inventories=args.recordings_inventory,
            miss=args.miss,
            simulate=simulate.get(name),
            latency=latency,
            faults=faults,
            page_size=page_size,
            page_bytes=page_bytes,
            output_schemas=not args.no_output_schemas,
            replay=args.replay,
            exhausted=args.replay_exhausted,
        )
    return services


def serve(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> int:
    """Start serving as the options say; returns the exit status."""
    try:  # checked before the inventories load: a bad file fails at once
        tls = check_tls_args(args)
    except TlsConfigError as exc:
        raise ServeError(str(exc)) from None
    if tls is not None and args.transport == "stdio":
        raise ServeError("--tls-cert/--tls-key need an HTTP transport (--transport http or sse)")
    if args.cors_origin and args.transport == "stdio":
        raise ServeError("--cors-origin needs an HTTP transport (--transport http or sse)")
    services = build_services(args)
    if args.transport == "stdio":
        if len(services) != 1:
            raise ServeError("--transport stdio serves exactly one inventory")
        run_stdio(build_mcp_server(next(iter(services.values()))))
        return 0
    token = args.token or (environ or {}).get(TOKEN_ENV) or None
    try:
        security = SecuritySettings.build(
            args.host,
            token,
            args.max_body,
            allow_hosts=args.allow_host,
            allow_origins=args.allow_origin,
            cors_origins=args.cors_origin,
        )
    except ValueError as exc:
        raise ServeError(f"--max-body: {exc}") from None
    app = build_http_app(services, args.transport, args.json_response, security)
    if args.host not in LOOPBACK_HOSTS:
        print(
            f"finmcp-server: warning: binding {args.host}, not loopback; other machines can reach this server"
            + ("" if token else " (consider --token)"),
            file=sys.stderr,
        )
    try:
        sock = bind_socket(args.host, args.port, blocking=True, inheritable=True)
    except OSError as exc:
        raise ServeError(f"cannot bind {args.host}:{args.port}: {exc}") from None
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    base = f"{'https' if tls else 'http'}://{shown}:{port}"

    http_app = app.app
    assert isinstance(http_app, HttpApp)  # build_http_app wraps an HttpApp

    def announce() -> None:
        routes: list[Any] = sorted(http_app.routes)
        for path in routes:
            print(f"finmcp-server: {base}{path}", file=sys.stderr)
        announce_ready("finmcp-server", base, args.transport)

    run_http(app, sock, announce, tls=(args.tls_cert, args.tls_key) if tls else None)
    return 0
