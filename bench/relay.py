"""A bare TCP relay: the floor for any Python proxy on this machine (bench only).

``python -m bench.relay --upstream http://HOST:PORT/... --host 127.0.0.1 --port 0`` copies bytes both ways
between each client connection and a fresh upstream connection: no HTTP parsing, no logging, on the
same event loop as finmcp-proxy. ``bench_proxy`` measures it beside finmcp-proxy, so the cost of two
extra loopback hops through a Python process is printed in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
from urllib.parse import urlsplit

from finmcp.recordings.plumbing import eventloop
from finmcp.recordings.plumbing.launch import announce_ready


class _Upstream(asyncio.Protocol):
    def __init__(self, client: asyncio.Transport) -> None:
        self.client = client

    def data_received(self, data: bytes) -> None:
        self.client.write(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.client.close()


class _Client(asyncio.Protocol):
    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.upstream: asyncio.Transport | None = None
        self.early: list[bytes] = []
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a stream connection gets an asyncio.Transport
        asyncio.ensure_future(self._connect())

    async def _connect(self) -> None:
        loop = asyncio.get_running_loop()
        assert self.transport is not None
        client = self.transport
        try:
            upstream, _ = await loop.create_connection(lambda: _Upstream(client), self.host, self.port)
        except OSError:
            client.close()
            return
        self.upstream = upstream
        for data in self.early:
            upstream.write(data)
        self.early.clear()

    def data_received(self, data: bytes) -> None:
        if self.upstream is None:
            self.early.append(data)
        else:
            self.upstream.write(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.upstream is not None:
            self.upstream.close()


async def _serve(upstream: str, host: str, port: int) -> None:
    target = urlsplit(upstream)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _Client(target.hostname or "", target.port or 80), host, port)
    bound = server.sockets[0].getsockname()[1]
    announce_ready("finmcp-proxy", f"http://{host}:{bound}/mcp", "bare TCP relay for the bench")
    await asyncio.Event().wait()


def main() -> None:
    """Relay until killed."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args, _ = parser.parse_known_args()
    eventloop.run(_serve(args.upstream, args.host, args.port))


if __name__ == "__main__":
    main()
