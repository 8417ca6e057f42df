"""``finmcp-server`` start-up: inventories, recordings, simulator, models, transport, as the options say.

:func:`serve` takes :class:`server.options.ServeOptions` (built by ``server/cli.py`` from the command
line) and runs the server until it is stopped.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from finmcp.recordings.errors import RecordingsError
from finmcp.recordings.plumbing.launch import announce_ready, announce_warm
from finmcp.recordings.plumbing.listener import ListenError, bind_listener, socket_url
from finmcp.recordings.store import RecordingStore
from finmcp.server.app import HttpApp, build_http_app
from finmcp.server.faults import FaultSpecError, parse_faults
from finmcp.server.latency import LatencySpecError, parse_latency
from finmcp.server.mcp_server import build_mcp_server
from finmcp.server.options import (
    DEFAULT_PORT,
    PRODUCT_STACK,
    SSE_PAGE_BYTES,
    TOKEN_ENV,
    ServeError,
    ServeOptions,
    ServingStack,
)
from finmcp.server.recorded import RecordedServerError, RecordedService, pick_server
from finmcp.server.recorded_mcp import build_recorded_server
from finmcp.server.security import SecuritySettings
from finmcp.server.service import SimulateFn, ToolService
from finmcp.server.transports import run_http, run_stdio
from finmcp.server.warmup import Warmup
from finmcp.tool_specs.errors import InventoryError
from finmcp.tool_specs.inventory import Inventory, builtin_names, load_inventory

__all__ = ["DEFAULT_PORT", "SSE_PAGE_BYTES", "TOKEN_ENV", "ServeError", "build_services", "serve"]


def _inventories(names: tuple[str, ...]) -> dict[str, Inventory]:
    inventories: dict[str, Inventory] = {}
    for name in names:
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


def _world(seed: int, store: RecordingStore | None, entities: tuple[Path, ...] = ()) -> tuple[Any, Any]:
    """One seeded world for every served inventory, and what near misses are answered from: the world
    adopts the funds and strategies the recordings and the ``--entities`` files name
    (``server.sim.entity_harvest``); the second item is None without recordings, else a
    :class:`~server.sim.near_miss.NearMisses` (the harvest and the recorded answers, read in one pass)."""
    try:
        from finmcp.server.sim.entity_harvest import Harvest, harvest_recordings, harvest_samples
        from finmcp.server.sim.near_miss import NearMisses, RecordedAnswers
        from finmcp.server.world import World
    except ImportError as exc:
        raise ServeError(
            f"--miss simulate needs the simulator (server.sim), which cannot be imported ({exc}); "
            "run with --miss strict --recordings FILE"
        ) from None
    if store is None and not entities:
        return World(seed=seed), None
    kept: list[tuple[str, Any, Any]] = []
    harvest = harvest_recordings(store, keep=kept) if store is not None else Harvest()
    try:
        harvest_samples(entities, harvest)
    except ValueError as exc:
        raise ServeError(f"--entities: {exc}") from None
    try:
        world = World(seed=seed, **harvest.world_arguments())
    except ValueError as exc:
        raise ServeError(f"the entities of --recordings/--entities: {exc}") from None
    return world, (NearMisses(harvest, RecordedAnswers(kept)) if store is not None else None)


def _simulators(
    inventories: Mapping[str, Inventory],
    seed: int,
    world: Any,
    near_misses: Any = None,
) -> tuple[dict[str, SimulateFn], Warmup]:
    """A simulator per inventory over the shared world, and their warm-up, started in one background thread.

    Search indexes are start-up work: they are built beside the serving loop, not in the first call.
    One thread warms the simulators in turn (they share the world, so the first does most of the
    work), rather than a thread each racing to build the same entities in their own malloc arenas.
    The :class:`Warmup` says when it has finished (``/healthz`` ``warm``, the ``warm`` line).
    """
    from finmcp.server.sim.simulator import Simulator, freeze_heap

    simulators: list[Any] = [
        Simulator(inventory, seed=seed, world=world) for inventory in inventories.values()
    ]
    if near_misses is not None:  # a call next to a recorded one agrees with it
        from finmcp.server.sim.near_miss import NearMissSimulator

        simulators = [NearMissSimulator(s, near_misses.answers, near_misses.harvest) for s in simulators]

    def warm_all() -> None:
        for simulator in simulators:
            simulator.warm()
        freeze_heap()

    warmup = Warmup().start(warm_all, name="warm-simulators")
    simulate: dict[str, SimulateFn] = {
        name: simulator.simulate for name, simulator in zip(inventories, simulators, strict=True)
    }
    return simulate, warmup


def recorded_service(options: ServeOptions) -> RecordedService | None:
    """The recorded server to serve, when the options ask for one (else None: serve inventories).

    ``--server NAME`` asks for it; so does a ``--recordings`` file, when ``--inventory`` is not given,
    that declares a server which is not a built-in inventory (finmcp's own recordings keep today's
    inventory serving). Several such servers without ``--server``: an error listing them.
    """
    if options.recordings is None:
        if options.server is not None:
            raise ServeError(f"--server {options.server}: needs --recordings FILE (the recording to serve)")
        return None
    if options.inventory_given and options.server is not None:
        raise ServeError("--server serves a recorded server instead of inventories: drop --inventory")
    if options.inventory_given:
        return None
    store = _store(options.recordings)
    assert store is not None
    declared = store.declared_servers()
    foreign = [name for name in declared if name not in builtin_names()]
    if options.server is None and not foreign:
        store.close()
        return None
    try:
        if options.server is None and len(foreign) > 1:
            raise RecordedServerError(
                f"--recordings {options.recordings} declares {len(foreign)} servers ({', '.join(foreign)});"
                " pick one with --server NAME"
            )
        name = options.server or foreign[0]
        pick_server(store, name, options.recordings)
        latency = parse_latency(options.latency, seed=options.seed)
        page_bytes = SSE_PAGE_BYTES if options.page_size is None and options.transport == "sse" else None
        return RecordedService.from_store(
            store,
            name,
            replay=options.replay,
            exhausted=options.replay_exhausted,
            latency=latency,
            page_size=options.page_size or None,
            page_bytes=page_bytes,
        )
    except (RecordedServerError, LatencySpecError) as exc:
        store.close()
        raise ServeError(str(exc)) from None


def build_services(options: ServeOptions) -> tuple[dict[str, ToolService], Warmup]:
    """One :class:`ToolService` per served inventory, configured from the options, and the warm-up of
    their simulators (already finished when nothing is simulated)."""
    try:
        latency = parse_latency(options.latency, seed=options.seed)
        faults = parse_faults(options.faults, seed=options.seed)
    except (LatencySpecError, FaultSpecError) as exc:
        raise ServeError(str(exc)) from None
    page_size = options.page_size or None  # 0: one page
    page_bytes = SSE_PAGE_BYTES if options.page_size is None and options.transport == "sse" else None
    inventories = _inventories(options.inventories)
    schedule = _schedule(options.fault_schedule, inventories)  # a bad schedule fails before the world loads
    store = _store(options.recordings)
    world, near_misses = (
        _world(options.seed, store, options.entities) if options.miss == "simulate" else (None, None)
    )
    simulate, warmup = (
        _simulators(inventories, options.seed, world, near_misses) if world is not None else ({}, None)
    )
    services = {}
    for name, inventory in inventories.items():
        services[name] = ToolService(
            inventory,
            store=store,
            recording_inventories=options.recordings_inventories,
            miss=options.miss,
            simulate=simulate.get(name),
            latency=latency,
            faults=faults,
            page_size=page_size,
            page_bytes=page_bytes,
            output_schemas=options.output_schemas,
            replay=options.replay,
            exhausted=options.replay_exhausted,
            schedule=schedule,
        )
    return services, warmup or Warmup.finished()


def _schedule(path: Path | None, inventories: Mapping[str, Any]) -> Any:
    """The injector of ``--fault-schedule`` (its tool globs checked against every served tool), or None."""
    if path is None:
        return None
    from finmcp.server.fault_schedule import ScheduleError, load_injector

    tools = {spec.name for inventory in inventories.values() for spec in inventory.tools}
    try:
        return load_injector(path, tools)
    except ScheduleError as exc:
        raise ServeError(str(exc)) from None


def _announce_warm(warmup: Warmup, base: str) -> None:
    """Once the warm-up has finished: ``finmcp-server warm: BASE (warm-up N.N s)`` on stderr (``(nothing
    to warm)`` without a simulator)."""
    warmup.wait()
    detail = f"warm-up {warmup.seconds or 0.0:.1f} s" + (", stopped early" if warmup.error else "")
    if not warmup.needed:
        detail = "nothing to warm"
    announce_warm("finmcp-server", base, detail)


def serve(
    options: ServeOptions,
    environ: Mapping[str, str] | None = None,
    *,
    stack: ServingStack = PRODUCT_STACK,
) -> int:
    """Start serving as the options say; returns the exit status.

    Over HTTP the socket is bound first, so an address in use is reported (:class:`ServeError`, one
    line naming ``--port``) before anything loads. ``stack`` is for tests and benchmarks only
    (:class:`server.options.ServingStack`).
    """
    if options.tls is not None and options.transport == "stdio":
        raise ServeError("--tls-cert/--tls-key need an HTTP transport (--transport http or sse)")
    if options.cors_origins and options.transport == "stdio":
        raise ServeError("--cors-origin needs an HTTP transport (--transport http or sse)")
    recorded = recorded_service(options)
    if recorded is not None:
        if options.fault_schedule is not None:
            raise ServeError(
                "--fault-schedule: a recorded server is replayed as recorded (no injected faults)"
            )
        if options.faults:
            raise ServeError("--faults: a recorded server is replayed as recorded (no injected faults)")
        if options.transport == "stdio":
            run_stdio(build_recorded_server(recorded))
            return 0
    if options.transport == "stdio":
        stdio_services, _ = build_services(options)
        if len(stdio_services) != 1:
            raise ServeError("--transport stdio serves exactly one inventory")
        run_stdio(build_mcp_server(next(iter(stdio_services.values()))))
        return 0
    token = options.token or (environ or {}).get(TOKEN_ENV) or None
    try:
        security = SecuritySettings.build(
            options.host,
            token,
            options.max_body,
            allow_hosts=list(options.allow_hosts),
            allow_origins=list(options.allow_origins),
            cors_origins=list(options.cors_origins),
        )
    except ValueError as exc:
        raise ServeError(f"--max-body: {exc}") from None
    try:
        sock = bind_listener(
            "finmcp-server",
            options.host,
            options.port,
            exposes="reach this server",
            token=token,
            blocking=True,
            inheritable=True,
        )
    except ListenError as exc:
        raise ServeError(str(exc)) from None
    try:
        services: dict[str, ToolService | RecordedService]
        if recorded is not None:
            services, warmup = {recorded.name: recorded}, Warmup.finished()
        else:
            built, warmup = build_services(options)
            services = dict(built)
        app = build_http_app(
            services,
            options.transport,
            options.json_response,
            security,
            fast_path=stack.fast_path,
            warmup=warmup,
        )
    except BaseException:
        sock.close()
        raise
    base = socket_url(sock, "https" if options.tls else "http")

    http_app = app.app
    assert isinstance(http_app, HttpApp)  # build_http_app wraps an HttpApp

    def announce() -> None:
        routes: list[Any] = sorted(http_app.routes)
        for path in routes:
            print(f"finmcp-server: {base}{path}", file=sys.stderr)
        announce_ready("finmcp-server", base, options.transport)
        threading.Thread(
            target=_announce_warm, args=(warmup, base), name="announce-warm", daemon=True
        ).start()

    run_http(app, sock, announce, tls=options.tls, loop=stack.loop, http=stack.http)
    return 0
