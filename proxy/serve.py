"""Running the proxy: open the trace store and its writer, serve HTTP or stdio until stopped."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from finmcp.proxy.baseline import BaselineError, BaselineWatch
from finmcp.proxy.capture import Recorder, Tracer
from finmcp.proxy.defaults import (
    DEFAULT_BATCH_ROWS,
    DEFAULT_INTERVAL,
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_STREAM_MESSAGES,
    DEFAULT_PORT,
)
from finmcp.proxy.exports.live import LiveOtlp
from finmcp.proxy.fault_injection import ProxyFaults, ScheduleError
from finmcp.proxy.http_proxy import ProxyServer, serve
from finmcp.proxy.http_types import ClientLimits, Settings
from finmcp.proxy.model_door import ModelDoor
from finmcp.proxy.security import Policy
from finmcp.proxy.shipper import Shipper
from finmcp.proxy.tags import Tags
from finmcp.proxy.upstream_http import Target
from finmcp.proxy.upstream_tls import client_context
from finmcp.proxy.writer import TraceWriter
from finmcp.recordings.outbox import install_outbox, is_outbox
from finmcp.recordings.plumbing import eventloop
from finmcp.recordings.plumbing.launch import announce_ready
from finmcp.recordings.plumbing.listener import DEFAULT_MAX_BODY, ListenError, bind_listener
from finmcp.recordings.plumbing.tls import server_context
from finmcp.recordings.redact import MIN_SECRET_VALUE, redact_url, set_secret_values
from finmcp.recordings.schema import BUSY_TIMEOUT_MS
from finmcp.recordings.store import RecordingStore
from finmcp.recordings.trace_store import SqliteTraceStore

log = logging.getLogger("finmcp.proxy")
LOCK_WAIT_MS = 20
"""How long one flush may wait for another process's write lock before it is retried later."""
SHIP_DRAIN_TIMEOUT = 5.0
"""At a clean stop, how long the shipper may keep shipping what is left (PostgreSQL reachable)."""


@dataclass
class ProxyConfig:
    """The command line of ``finmcp-proxy`` (serve mode)."""

    db: str
    upstream: str | None = None
    upstream_cmd: str | None = None
    upstream_sse: str | None = None
    transport: str = "http"
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    record_into: str | None = None
    record_inventory: str | None = None
    group_gap_ms: float = 30.0
    group_sequence: bool = True
    timeout: float = 120.0
    max_body: int = DEFAULT_MAX_BODY
    limits: ClientLimits = field(default_factory=ClientLimits)
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES
    max_stream_messages: int = DEFAULT_MAX_STREAM_MESSAGES
    token: str | None = None
    allow_hosts: list[str] = field(default_factory=list)
    allow_origins: list[str] = field(default_factory=list)
    cors_origins: list[str] = field(default_factory=list)
    upstream_headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    defaults: Tags = field(default_factory=Tags)
    loop: str = "auto"
    ship_to: str | None = None
    ship_batch: int = DEFAULT_BATCH_ROWS
    ship_interval: float = DEFAULT_INTERVAL
    upstream_ca: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    otlp_endpoint: str | None = None
    otlp_headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    tool_baseline: str | None = None
    tool_baseline_update: bool = False
    llm_upstream: str | None = None
    llm_headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    fault_schedule: str | None = None

    @property
    def upstream_label(self) -> str:
        """The upstream as shown in logs and stored rows: URLs with their secrets redacted."""
        url = self.upstream or self.upstream_sse
        return redact_url(url) if url else f"cmd:{self.upstream_cmd}"


def named_record_inventory(upstream: str | None) -> str | None:
    """``NAME`` for a finmcp-server URL ``.../NAME/mcp`` or ``.../NAME/sse``, else None (the name is then
    learned from the upstream's ``serverInfo``, :mod:`proxy.declare`)."""
    if upstream:
        parts = [p for p in urlsplit(upstream).path.split("/") if p]
        if len(parts) >= 2 and parts[-1] in ("mcp", "sse"):
            return parts[-2]
    return None


def default_record_inventory(upstream: str | None) -> str:
    """``NAME`` for a finmcp-server URL ``.../NAME/mcp`` or ``.../NAME/sse``, else ``finmcp65``."""
    return named_record_inventory(upstream) or "finmcp65"


class ProxyRuntime:
    """Store, writer and tracer of one proxy process (also used in-process by tests)."""

    def __init__(self, config: ProxyConfig) -> None:
        self.config = config
        baseline = None  # read first: a bad baseline file stops the start before anything is opened
        if config.tool_baseline:
            baseline = BaselineWatch(config.tool_baseline, config.upstream_label, config.tool_baseline_update)
        self.faults: ProxyFaults | None = None  # read first too: a bad schedule is exit 2, nothing opened
        if config.fault_schedule:
            self.faults = ProxyFaults.load(config.fault_schedule)
        forget_upstream_headers(config.upstream_headers + config.llm_headers)
        self.store = SqliteTraceStore.open(config.db)
        if config.ship_to:  # before the short busy timeout: another proxy may be writing the file
            install_outbox(self.store.db.conn)
        self.store.checkpoint_in_background()  # no commit on the loop ever waits for a checkpoint
        self.store.set_busy_timeout(LOCK_WAIT_MS)  # a locked file: retried later, the loop goes on
        self.writer = TraceWriter(self.store)
        self.record_store: RecordingStore | None = None
        recorder = None
        if config.record_into:
            same = Path(config.record_into).resolve() == Path(config.db).resolve()
            self.record_store = (
                RecordingStore.sharing(self.store) if same else RecordingStore.open(config.record_into)
            )
            inventory = config.record_inventory or named_record_inventory(
                config.upstream or config.upstream_sse
            )
            recorder = Recorder(self.writer, self.record_store, inventory, config.upstream_label)
        self.tracer = Tracer(
            self.writer, config.upstream_label, config.group_gap_ms, recorder, config.group_sequence
        )
        self.tracer.baseline = baseline
        self.tracer.faults = self.faults
        self.otlp: LiveOtlp | None = None
        if config.otlp_endpoint:
            self.otlp = LiveOtlp(config.db, config.otlp_endpoint, headers=config.otlp_headers)
        self.shipper: Shipper | None = None
        if config.ship_to:
            self.shipper = Shipper(
                config.db,
                config.ship_to,
                label=f"pid {os.getpid()}",
                batch_rows=config.ship_batch,
                interval=config.ship_interval,
            )
        elif is_outbox(self.store.db.conn):
            log.info(
                "%s is a shipping outbox: rows keep queueing for PostgreSQL; ship them with --ship-to"
                " or finmcp-proxy flush",
                config.db,
            )

    def start_shipping(self, where: str) -> None:
        """Start the shipper (with ``--ship-to``), labelled with where this proxy listens, and the live
        OTLP sender (with ``--otlp-endpoint``)."""
        if self.otlp is not None:
            self.otlp.start()
        if self.shipper is not None:
            self.shipper.label = f"{where} pid {os.getpid()}"
            self.shipper.start()

    def health(self) -> dict[str, Any]:
        """Extra ``/healthz`` fields: the shipper's state (``--ship-to``), the OTLP sender's (``--otlp-endpoint``),
        the tools that differ from ``--tool-baseline`` (``tool_drift``)."""
        out: dict[str, Any] = {} if self.shipper is None else {"shipping": self.shipper.status()}
        if self.tracer.baseline is not None:
            out["tool_drift"] = self.tracer.baseline.health()
        if self.otlp is not None:
            out["otlp"] = self.otlp.status()
        if self.faults is not None:
            out["fault_schedule"] = self.faults.health()
        return out

    def close(self) -> None:
        self.store.set_busy_timeout(BUSY_TIMEOUT_MS)  # the last flush may wait as long as any writer
        self.writer.close()
        if self.otlp is not None:
            self.otlp.stop()
        if self.shipper is not None:
            self.shipper.stop(SHIP_DRAIN_TIMEOUT)
        if self.record_store is not None:
            self.record_store.close()
        self.store.close()


def forget_upstream_headers(headers: list[tuple[bytes, bytes]]) -> None:
    """Redact the ``--upstream-header`` values from every stored text, wherever an upstream reflects
    them (:func:`recordings.redact.set_secret_values`); warn about values too short to look for."""
    pairs = [(name.decode("latin-1"), value.decode("latin-1").strip()) for name, value in headers]
    short = set(set_secret_values(value for _, value in pairs))
    names = sorted({n for n, v in pairs if v in short or v.partition(" ")[2].strip() in short})
    if names:
        log.warning(
            "--upstream-header %s: a value shorter than %d characters is not redacted where an upstream"
            " reflects it into its answers",
            ", ".join(names),
            MIN_SECRET_VALUE,
        )


def bind(config: ProxyConfig) -> socket.socket:
    """The HTTP side's listening socket (:func:`recordings.plumbing.listener.bind_listener`: a warning
    off loopback; :class:`ListenError` naming ``--port`` when the address is in use)."""
    return bind_listener(
        "finmcp-proxy", config.host, config.port, exposes="call the upstream through it", token=config.token
    )


async def run_http(runtime: ProxyRuntime, stop: asyncio.Event, sock: socket.socket | None = None) -> None:
    """Serve the HTTP side until ``stop`` is set (on ``sock``, else a socket bound as the config says)."""
    config = runtime.config
    runtime.writer.bind(asyncio.get_running_loop())
    settings = Settings(
        target=Target.parse(config.upstream or "", client_context(config.upstream_ca)),
        tracer=runtime.tracer,
        policy=Policy.build(
            config.host,
            config.token,
            allow_hosts=config.allow_hosts,
            allow_origins=config.allow_origins,
            cors_origins=config.cors_origins,
        ),
        defaults=config.defaults,
        timeout=config.timeout,
        max_body=config.max_body,
        limits=config.limits,
        max_event_bytes=config.max_event_bytes,
        max_stream_messages=config.max_stream_messages,
        upstream_headers=config.upstream_headers,
        health=runtime.health,
        model_door=model_door(config, runtime.writer),
        faults=runtime.faults,
    )
    proxy = ProxyServer(settings)
    sock = sock or bind(config)
    host, port = sock.getsockname()[:2]
    listener_tls = server_context(config.tls_cert, config.tls_key) if config.tls_cert else None
    server = await serve(proxy, sock, listener_tls)
    shown = f"[{host}]" if ":" in host else host
    runtime.start_shipping(f"{shown}:{port}")
    announce_ready(
        "finmcp-proxy",
        f"{'https' if listener_tls else 'http'}://{shown}:{port}/mcp",
        f"upstream {config.upstream_label}, db {config.db}, loop {eventloop.loop_name()}",
    )
    try:
        await stop.wait()
    finally:
        server.close()
        proxy.close()
        runtime.tracer.fail_pending("the proxy stopped before the response")  # e.g. awaiting a resumed stream
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 3)


def model_door(config: ProxyConfig, writer: TraceWriter) -> ModelDoor | None:
    """The model door with ``--llm-upstream`` (proxy/model_door.py), else None."""
    if not config.llm_upstream:
        return None
    target = Target.parse(config.llm_upstream, client_context(config.upstream_ca))
    return ModelDoor(target, writer, config.llm_headers, config.timeout, config.limits.max_answer)


def main_serve(config: ProxyConfig) -> int:
    """Run the proxy until SIGINT/SIGTERM (HTTP) or until stdin closes (stdio)."""
    if config.transport == "http" and not config.upstream:
        print(
            "finmcp-proxy: --transport http needs --upstream URL (a Streamable HTTP server); "
            "--upstream-cmd and --upstream-sse work with --transport stdio",
            file=sys.stderr,
        )
        return 2
    sock = None
    if config.transport == "http":
        try:  # before the trace store is opened: a port in use is a one-line error, nothing created
            sock = bind(config)
        except ListenError as exc:
            print(f"finmcp-proxy: {exc}", file=sys.stderr)
            return 2
    try:
        runtime = ProxyRuntime(config)
    except (BaselineError, ScheduleError) as exc:
        if sock is not None:
            sock.close()
        print(f"finmcp-proxy: {exc}", file=sys.stderr)
        return 2
    except BaseException:
        if sock is not None:
            sock.close()
        raise

    async def main() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        if config.transport == "http":
            await run_http(runtime, stop, sock)
            return 0
        from finmcp.proxy.stdio_side import run_stdio

        pump_type = None
        if runtime.faults is not None:  # --fault-schedule: calls may be faulted (proxy/stdio_faults.py)
            from finmcp.proxy.stdio_faults import fault_pump

            pump_type = fault_pump(runtime.faults)
        return await run_stdio(runtime, stop, pump_type)  # 1: the upstream went away; 2: it could not start

    code = 0
    try:
        code = eventloop.run(main(), config.loop)
    except KeyboardInterrupt:
        pass
    finally:
        runtime.close()
    return code
