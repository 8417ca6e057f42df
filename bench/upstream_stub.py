"""A canned Streamable HTTP upstream for the proxy's soak (bench only).

``python -m bench.upstream_stub --host 127.0.0.1 --port 0`` answers every POST with a JSON-RPC
result for the request's id (``application/json``, ``Content-Length``, keep-alive) and costs almost
nothing, so a soak of 10^5 calls through ``finmcp-proxy`` runs at the proxy's own speed. It prints
the proxy's ready line (as :mod:`bench.relay` does) so :class:`proxy.testing.ProxyProcess` can start it.
"""

from __future__ import annotations

import argparse
import asyncio
import json

from finmcp.recordings.plumbing import eventloop
from finmcp.recordings.plumbing.launch import announce_ready

RESULT = {
    "content": [{"type": "text", "text": '{"fundCode": "000001", "score": 71}'}],
    "structuredContent": {"fundCode": "000001", "score": 71},
    "isError": False,
}


class _Stub(asyncio.Protocol):
    def __init__(self) -> None:
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a stream connection gets an asyncio.Transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            length = 0
            for line in bytes(self.buffer[:end]).split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if len(self.buffer) < end + 4 + length:
                return
            body = bytes(self.buffer[end + 4 : end + 4 + length])
            del self.buffer[: end + 4 + length]
            request_id = json.loads(body).get("id") if body else None
            answer = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": RESULT}).encode()
            assert self.transport is not None
            self.transport.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                % (len(answer), answer)
            )


async def _serve(host: str, port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(_Stub, host, port)
    bound = server.sockets[0].getsockname()[1]
    announce_ready("finmcp-proxy", f"http://{host}:{bound}/mcp", "canned upstream for the bench")
    await asyncio.Event().wait()


def main() -> None:
    """Answer until killed."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args, _ = parser.parse_known_args()
    eventloop.run(_serve(args.host, args.port))


if __name__ == "__main__":
    main()
