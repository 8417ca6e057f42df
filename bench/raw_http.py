"""A raw HTTP/1.1 load for MCP servers: prebuilt ``tools/call`` requests on keep-alive connections.

No MCP SDK on the client side, so the client's own cost per call is small and the same for every
server measured: ``bench_server`` drives finmcp-server, the minimal SDK server and mcp-recorder's
replay server with it. Each connection is one client (a session in the handshake era, after
``initialize`` and ``notifications/initialized``; bare requests with the ``_meta`` envelope and
routing headers in the 2026-07-28 era), with one call in flight. Answers are read whole (a JSON body,
or an SSE stream with chunked framing), parsed, and checked for the request's id and a result.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any
from urllib.parse import urlsplit

from bench.calls import CODES, TOOL
from finmcp.recordings.plumbing.protocol import is_stateless

CLIENT_META = {
    "io.modelcontextprotocol/clientInfo": {"name": "bench-raw", "version": "0.1.0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def initialize_params(version: str) -> dict[str, Any]:
    """The params of this load's ``initialize`` request (handshake era)."""
    return {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "bench-raw", "version": "0.1.0"},
    }


class RawError(RuntimeError):
    """A server answered something other than a successful JSON-RPC result."""


class RawClient:
    """One keep-alive HTTP connection speaking MCP in one era (``version``) to ``url``."""

    def __init__(self, url: str, version: str) -> None:
        parts = urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.path = parts.path or "/mcp"
        self.version = version
        self.stateless = is_stateless(version)
        self.session: bytes | None = None
        self.next_id = 0
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.initialized: dict[str, Any] | None = None  # the initialize response (handshake era)

    async def open(self) -> RawClient:
        """Connect; in the handshake era also initialise a session."""
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        if not self.stateless:
            self.initialized = await self.rpc("initialize", initialize_params(self.version))
            note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
            status, _, _ = await self.post(note, b"")
            if status != 202:
                raise RawError(f"notifications/initialized: HTTP {status}")
        return self

    async def close(self) -> None:
        """Close the connection."""
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(OSError):
                await self.writer.wait_closed()

    def request_bytes(self, method: str, params: dict[str, Any]) -> tuple[int, bytes, bytes]:
        """(id, body, extra header lines) of one request in this client's era."""
        self.next_id += 1
        extra = b""
        if self.stateless:
            envelope = {"io.modelcontextprotocol/protocolVersion": self.version, **CLIENT_META}
            params = {**params, "_meta": {**params.get("_meta", {}), **envelope}}
            extra = b"mcp-protocol-version: %s\r\nmcp-method: %s\r\n" % (
                self.version.encode(),
                method.encode(),
            )
            if method == "tools/call":
                extra += b"mcp-name: %s\r\n" % params["name"].encode()
        elif self.session is not None:
            extra = b"mcp-protocol-version: %s\r\n" % self.version.encode()
        body = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}).encode()
        return self.next_id, body, extra

    async def post(self, body: bytes, extra: bytes) -> tuple[int, dict[bytes, bytes], bytes]:
        """POST ``body``; returns (status, lower-cased headers, body with any chunked framing removed)."""
        assert self.reader is not None and self.writer is not None
        session = b"mcp-session-id: %s\r\n" % self.session if self.session else b""
        head = (
            b"POST %s HTTP/1.1\r\nhost: %s:%d\r\ncontent-type: application/json\r\n"
            b"accept: application/json, text/event-stream\r\ncontent-length: %d\r\n"
            % (self.path.encode(), self.host.encode(), self.port, len(body))
        )
        self.writer.write(head + session + extra + b"\r\n" + body)
        reader = self.reader
        raw_head = await reader.readuntil(b"\r\n\r\n")
        lines = raw_head[:-4].split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        headers: dict[bytes, bytes] = {}
        for line in lines[1:]:
            key, _, value = line.partition(b":")
            headers[key.strip().lower()] = value.strip()
        if b"content-length" in headers:
            payload = await reader.readexactly(int(headers[b"content-length"]))
        elif headers.get(b"transfer-encoding") == b"chunked":
            chunks = []
            while True:
                size = int((await reader.readuntil(b"\r\n"))[:-2].split(b";")[0], 16)
                if size == 0:
                    await reader.readuntil(b"\r\n")
                    break
                chunks.append((await reader.readexactly(size + 2))[:-2])
            payload = b"".join(chunks)
        else:
            raise RawError(f"HTTP {status} without a length or chunked framing")
        return status, headers, payload

    async def rpc(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """One JSON-RPC request; returns its response message (raises :class:`RawError` on an error)."""
        request_id, body, extra = self.request_bytes(method, params)
        status, headers, payload = await self.post(body, extra)
        if self.session is None and b"mcp-session-id" in headers and not self.stateless:
            self.session = headers[b"mcp-session-id"]
        message = decode_message(headers.get(b"content-type", b""), payload)
        if status != 200 or message.get("id") != request_id or "result" not in message:
            raise RawError(f"{method}: HTTP {status}: {payload[:300]!r}")
        return message


def decode_message(content_type: bytes, payload: bytes) -> dict[str, Any]:
    """The JSON-RPC message of a JSON body, or of the last ``data:`` line of an SSE stream."""
    if content_type.startswith(b"text/event-stream"):
        data = [line[5:].strip() for line in payload.split(b"\n") if line.startswith(b"data:")]
        data = [d for d in data if d]
        if not data:
            raise RawError(f"SSE answer without a message: {payload[:300]!r}")
        payload = data[-1]
    decoded: dict[str, Any] = json.loads(payload)
    return decoded


async def call(client: RawClient, code: str) -> dict[str, Any]:
    """One ``tools/call`` of the benchmark tool; raises when the result is an error."""
    message = await client.rpc("tools/call", {"name": TOOL, "arguments": {"fundNameOrCode": code}})
    if message["result"].get("isError"):
        raise RawError(f"benchmark call failed: {message['result']}")
    return message


async def drive_raw(url: str, version: str, clients: int, total: int) -> tuple[float, list[float]]:
    """Open ``clients`` connections (untimed, each warmed with every code), then time ``total`` calls."""
    latencies: list[float] = []
    per_client = total // clients

    async def worker(client: RawClient, offset: int) -> None:
        for i in range(per_client):
            started = time.perf_counter()
            await call(client, CODES[(offset + i) % len(CODES)])
            latencies.append(time.perf_counter() - started)

    opened = [await RawClient(url, version).open() for _ in range(clients)]
    try:
        for client in opened:
            for code in CODES:
                await call(client, code)
        started = time.perf_counter()
        await asyncio.wait_for(asyncio.gather(*(worker(c, i * 7) for i, c in enumerate(opened))), timeout=120)
        elapsed = time.perf_counter() - started
    finally:
        for client in opened:
            await client.close()
    return elapsed, latencies


async def capture(url: str, version: str) -> tuple[dict[str, Any] | None, dict[str, dict[str, Any]], bool]:
    """A server's answers, for a cassette: (initialize response or None, response per code, SSE or not)."""
    client = await RawClient(url, version).open()
    answers: dict[str, dict[str, Any]] = {}
    sse = False
    try:
        for code in CODES:
            _, body, extra = client.request_bytes(
                "tools/call", {"name": TOOL, "arguments": {"fundNameOrCode": code}}
            )
            _, headers, payload = await client.post(body, extra)
            sse = headers.get(b"content-type", b"").startswith(b"text/event-stream")
            answers[code] = decode_message(headers.get(b"content-type", b""), payload)
    finally:
        await client.close()
    return client.initialized, answers, sse
