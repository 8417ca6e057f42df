"""Running the server: stdio, or HTTP (Streamable HTTP / legacy SSE) under uvicorn on a bound socket.

HTTP runs on uvloop when installed (:mod:`recordings.plumbing.eventloop`, as the proxy does) and
uvicorn's ``http="auto"`` picks the compiled ``httptools`` parser (a dependency) over h11: both
measured by ``bench/bench_server.py``, which runs the server with each of them switched off
(:class:`server.options.ServingStack`).
"""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import Callable
from typing import Any

import anyio
import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from starlette.types import ASGIApp

from finmcp.recordings.plumbing import eventloop


async def serve_stdio(server: Server[Any]) -> None:
    """Serve one MCP connection over this process's stdin/stdout (both protocol eras)."""
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def run_stdio(server: Server[Any]) -> None:
    """Blocking :func:`serve_stdio`."""
    anyio.run(serve_stdio, server)


def run_http(
    app: ASGIApp,
    sock: socket.socket,
    on_ready: Callable[[], None] | None = None,
    tls: tuple[str, str] | None = None,
    *,
    loop: str = "auto",
    http: str = "auto",
) -> None:
    """Serve ``app`` on the bound socket until SIGINT/SIGTERM; ``on_ready`` runs once it accepts requests.

    ``tls``: ``(certificate file, key file)`` to serve HTTPS (PEM; checked by the caller). ``loop`` and
    ``http`` (the event loop, uvicorn's parser) are for benchmarks; the product runs the defaults.
    """
    config = uvicorn.Config(
        app,
        http=http,
        ssl_certfile=tls[0] if tls else None,
        ssl_keyfile=tls[1] if tls else None,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=3,
        timeout_keep_alive=30,
        # nothing here reads the client's address or scheme, so X-Forwarded-* need no rewriting: one
        # ASGI layer less per request (uvicorn adds ProxyHeadersMiddleware by default)
        proxy_headers=False,
    )
    server = uvicorn.Server(config)

    async def main() -> None:
        async def announce() -> None:
            while not server.started and not server.should_exit:
                await asyncio.sleep(0.01)
            if server.started and on_ready is not None:
                on_ready()

        watcher = asyncio.ensure_future(announce())
        try:
            await server.serve(sockets=[sock])
        finally:
            watcher.cancel()

    eventloop.run(main(), loop)
    sys.stderr.flush()
