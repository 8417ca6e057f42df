"""A lean MCP client for the harness: the 2026-07-28 era over Streamable HTTP, one pooled connection set.

Why not one SDK ``mcp.client.Client`` per (sample, turn)? Measured on this machine through the proxy:
a fresh SDK client lists the tools and recompiles every output-schema validator it meets, which
made 576 replayed calls take 15.6 s (37 calls/s; 70% of it in ``jsonschema.check_schema``). This
client sends the same wire messages the SDK sends in that era (``_meta`` with the protocol version,
client info and capabilities; ``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name`` headers),
reuses keep-alive connections across samples, and leaves output validation to the scorer.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import ssl
from typing import Any

from mcp.shared.inbound import encode_header_value

from finmcp.evaluator.harness.http_pool import HttpPool, HttpTransportError
from finmcp.recordings.plumbing.flags import installed_version
from finmcp.recordings.plumbing.protocol import LATEST_STATELESS_VERSION
from finmcp.recordings.plumbing.sse import parse_events

PROTOCOL_VERSION = LATEST_STATELESS_VERSION
CLIENT_INFO = {"name": "finmcp-harness", "version": installed_version()}
GROUP_META_KEY = "io.finmcp/group"
Json = dict[str, Any]
BASE_HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "user-agent": f"{CLIENT_INFO['name']}/{CLIENT_INFO['version']}",
    "mcp-protocol-version": PROTOCOL_VERSION,
}
Sent = asyncio.Event | None
"""Set once a request is on the wire (or has ended), so concurrent calls keep a fixed arrival order."""


class McpCallError(Exception):
    """A request got no usable MCP answer (HTTP failure, JSON-RPC error or unreadable body)."""

    def __init__(self, message: str, code: int | None = None, rpc_message: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.rpc_message = rpc_message
        """The JSON-RPC error's own message, when the server answered with one (what the trace logs)."""


class McpHttpClient:
    """``tools/list`` and ``tools/call`` POSTs to any (tagged) endpoint URL over one connection pool."""

    def __init__(
        self, timeout: float = 120.0, max_connections: int = 64, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        self.http = HttpPool(timeout, max_connections, ssl_context)
        self._ids = itertools.count(1)

    async def aclose(self) -> None:
        """Close the pooled connections."""
        await self.http.aclose()

    async def request(
        self,
        url: str,
        method: str,
        params: dict[str, Any],
        name: str | None = None,
        sent: asyncio.Event | None = None,
    ) -> Any:
        """One JSON-RPC request; returns its ``result`` or raises :class:`McpCallError`.

        ``sent`` is set once the request body is on the wire (or the request ended), so a caller can
        start concurrent calls in a fixed arrival order.
        """
        rid = next(self._ids)
        meta = dict(params.get("_meta") or {})
        meta.update(
            {
                "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
                "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        )
        body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": {**params, "_meta": meta}}
        headers = {**BASE_HEADERS, "mcp-method": method}
        if name is not None:
            headers["mcp-name"] = encode_header_value(name)  # as the SDK: non-ASCII goes base64-wrapped
        payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
        try:
            response = await self.http.post(url, payload, headers, sent)
        except HttpTransportError as exc:
            raise McpCallError(f"{method}: transport error: {exc}") from None
        try:
            if response.headers.get("content-type", "").startswith("text/event-stream"):
                events = parse_events(response.body)
                messages = [json.loads(e.data) for e in events if e.event == "message" and e.data]
            else:
                body_bytes = response.body  # json.loads reads UTF-8 bytes: no decoded copy
                messages = [json.loads(body_bytes)] if body_bytes.strip() else []
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise McpCallError(
                f"{method}: HTTP {response.status}: unreadable body {_snippet(response.body)!r}"
            ) from None
        for message in messages:
            if isinstance(message, dict) and message.get("id") == rid:
                if "error" in message:
                    error = message["error"] or {}
                    detail = error.get("message", error)
                    raise McpCallError(
                        f"{method}: {detail}", error.get("code"), detail if isinstance(detail, str) else None
                    )
                return message.get("result")
        raise McpCallError(
            f"{method}: HTTP {response.status}: no response for request {rid}: {_snippet(response.body)!r}"
        )

    async def list_tools(self, url: str) -> list[dict[str, Any]]:
        """Every tool of the endpoint (follows ``nextCursor``)."""
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(1000):
            params: dict[str, Any] = {"cursor": cursor} if cursor else {}
            result = await self.request(url, "tools/list", params)
            tools.extend(result.get("tools") or [])
            cursor = result.get("nextCursor")
            if not cursor:
                return tools
        raise McpCallError("tools/list: more than 1000 pages")

    async def call_tool(
        self, url: str, name: str, arguments: Json, meta: Json | None = None, sent: Sent = None
    ) -> Json:
        """``tools/call``; returns the result dict (``content``, ``structuredContent``, ``isError``)."""
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if meta:
            params["_meta"] = dict(meta)
        result = await self.request(url, "tools/call", params, name=name, sent=sent)
        if not isinstance(result, dict):
            raise McpCallError(f"tools/call {name}: result is not an object: {result!r:.200}")
        return result


def _snippet(body: bytes) -> str:
    return body[:200].decode("utf-8", "replace")
