"""What the tools/call fast path relies on in the mcp SDK beyond its public pieces, checked at start-up.

The fast path (:mod:`server.fastpath`) is built from the SDK's public pieces (its header and body
checks, ``serialize_server_result``, the JSON-RPC models, the transports' framing), but three things it
needs have no public piece in mcp 2.3:

- the live handshake-era session of an ``Mcp-Session-Id`` (the session manager's
  ``_server_instances``): :func:`live_transport`;
- holding that session's idle countdown while a call is answered outside its transport, as the
  transport's ``handle_request`` does (``_requests_in_flight``, ``_idle_timeout``): :func:`held`;
- the runner's shaping of a result for the wire (``ServerRunner._serialize``), which the fast path
  repeats from public pieces.

:mod:`server.sdk_private` is the only module that reads the SDK's private names (``tests/test_architecture.py``);
this one checks them. :func:`check_fast_path` runs before the server accepts requests: on an in-process probe (a
``finmcp65`` service with no recordings, ``--miss strict``, no latency), the SDK's path and the fast
path answer the same ``tools/call`` requests in both protocol eras, and the answers must be the same
bytes; the session table and the idle countdown must be where they are and behave as the transport
keeps them; and the SDK must be the minor version this was verified against. Any problem is returned,
and the server then takes the SDK's path for every call, with a warning in the log
(:meth:`server.app.HttpApp.check_fast_path`).
"""

from __future__ import annotations

import json
import re
from importlib import metadata
from typing import Any

import anyio
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Message

from finmcp.recordings.plumbing.listener import DEFAULT_MAX_BODY
from finmcp.recordings.plumbing.protocol import LATEST_HANDSHAKE_VERSION, LATEST_STATELESS_VERSION
from finmcp.server.fastpath import FastCalls
from finmcp.server.latency import parse_latency
from finmcp.server.mcp_server import ToolCalls, build_mcp_server
from finmcp.server.sdk_private import countdown, session_state_problems
from finmcp.server.service import ToolService
from finmcp.tool_specs.inventory import load_inventory

VERIFIED_SDK = (2, 3)
"""The mcp minor version the fast path's reliance on private state was verified against."""
PROBE_IDLE_S = 600.0
PROBE_CALLS: tuple[dict[str, Any], ...] = (
    {"name": "SearchFunds", "arguments": {"keyword": "红利"}},  # a miss: the strict "no recording" answer
    {"name": "SearchFunds", "arguments": {"keyword": "红利"}},
    {"name": "SearchFunds", "arguments": {"sortOrder": "up"}},  # invalid arguments
    {"name": "SearchFunds", "arguments": {"keyword": 5}},
)
"""The probe's calls (after one the SDK answers first in the handshake era); each must take the fast path."""
_STATE_PROBE = {"jsonrpc": "2.0", "id": 99, "method": "tools/list", "params": {}}
"""A request the SDK answers on the session (so its countdown can be watched), after the calls."""
_SESSION = re.compile(rb"[0-9a-f]{32}")


async def check_fast_path() -> list[str]:
    """Problems that make the fast path unsafe with the installed SDK (empty: none found)."""
    version = metadata.version("mcp")
    if tuple(int(part) for part in re.findall(r"\d+", version)[:2]) != VERIFIED_SDK:
        return [
            f"mcp {version} is installed; the fast path was verified against mcp {VERIFIED_SDK[0]}.{VERIFIED_SDK[1]}"
        ]
    try:
        return await _probe()
    except Exception as exc:  # a name gone, a signature changed: the SDK is not what this was built on
        return [f"the probe failed: {type(exc).__name__}: {exc}"]


class _Probe:
    """One side of the probe: a service, its SDK server and session manager, and (fast) its fast path."""

    def __init__(self, fast: bool) -> None:
        service = ToolService(load_inventory("finmcp65"), miss="strict", latency=parse_latency("none"))
        calls = ToolCalls(service)
        server = build_mcp_server(service, calls=calls)
        self.manager = StreamableHTTPSessionManager(
            app=server,
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            session_idle_timeout=PROBE_IDLE_S,
        )
        args = (server, service, calls.answer, calls.sessions, self.manager, DEFAULT_MAX_BODY)
        self.fast = FastCalls(*args) if fast else None
        self.session: str | None = None
        self.sdk_started = 0.0  # when the SDK's path began its last request
        self.sdk_countdown: tuple[int, float] | None = None  # the session's countdown as it answered

    async def post(self, version: str, message: dict[str, Any]) -> bytes:
        """POST one message as a client of ``version`` would; the answer as comparable bytes."""
        headers = {
            "host": "127.0.0.1",
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": version,
        }
        if message.get("method") == "tools/call" and version == LATEST_STATELESS_VERSION:
            envelope = {
                "io.modelcontextprotocol/protocolVersion": version,
                "io.modelcontextprotocol/clientInfo": {"name": "finmcp-probe", "version": "0"},
                "io.modelcontextprotocol/clientCapabilities": {},
            }
            message = {**message, "params": {**message["params"], "_meta": envelope}}
            headers |= {"mcp-method": "tools/call", "mcp-name": message["params"]["name"]}
        if self.session is not None:
            headers["mcp-session-id"] = self.session
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": "/mcp",
            "raw_path": b"/mcp",
            "query_string": b"",
            "root_path": "",
            "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
            "client": ("127.0.0.1", 1),
            "server": ("127.0.0.1", 80),
        }
        body = json.dumps(message).encode()
        pending = [{"type": "http.request", "body": body, "more_body": False}]
        sent: list[Message] = []

        async def receive() -> Message:
            if pending:
                return pending.pop()
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

        async def send(out: Message) -> None:
            sent.append(out)

        if self.fast is None or not await self.fast.try_answer(scope, body, True, send):
            self.sdk_started = anyio.current_time()

            async def watched(out: Message) -> None:
                if out["type"] == "http.response.start" and self.session is not None:
                    self.sdk_countdown = countdown(self.manager, self.session)
                sent.append(out)

            app: ASGIApp = self.manager.handle_request
            await app(scope, receive, watched)
        start = next(m for m in sent if m["type"] == "http.response.start")
        head = sorted((k.lower(), v) for k, v in start.get("headers", []))
        if self.session is None:
            self.session = next((v.decode() for k, v in head if k == b"mcp-session-id"), None)
        payload = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
        return _SESSION.sub(b"<session>", repr((start["status"], head, payload)).encode())


def _messages(version: str) -> list[dict[str, Any]]:
    """The probe's messages in one era: the handshake (and a call the SDK answers first), then the calls."""
    calls = list(PROBE_CALLS)
    opening: list[dict[str, Any]] = []
    if version == LATEST_HANDSHAKE_VERSION:
        client = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "p", "version": "0"}}
        opening = [
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": client},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
        ]
        calls.insert(0, {"name": "SearchFunds", "arguments": {"keyword": "0"}})
    numbered = [
        {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": c} for n, c in enumerate(calls, 1)
    ]
    return opening + numbered


async def _probe() -> list[str]:
    problems: list[str] = []
    sdk, fast = _Probe(fast=False), _Probe(fast=True)
    assert fast.fast is not None
    async with sdk.manager.run(), fast.manager.run():
        for version in (LATEST_STATELESS_VERSION, LATEST_HANDSHAKE_VERSION):
            sdk.session = fast.session = None
            for message in _messages(version):
                want, got = await sdk.post(version, message), await fast.post(version, message)
                if got != want:
                    what = f"{version} {message.get('method')}"
                    problems.append(f"{what}: the fast path answered {got[:200]!r}, the SDK {want[:200]!r}")
            if version == LATEST_HANDSHAKE_VERSION:  # the SDK answers the session's last request
                await sdk.post(version, _STATE_PROBE)
                await fast.post(version, _STATE_PROBE)
        expected = 2 * len(PROBE_CALLS)
        if fast.fast.answered != expected:
            problems.append(f"the fast path answered {fast.fast.answered} of the probe's {expected} calls")
        if fast.session is None:
            problems.append("the handshake-era probe got no Mcp-Session-Id")
        else:
            during, since = fast.sdk_countdown, fast.sdk_started
            problems += session_state_problems(fast.manager, fast.session, PROBE_IDLE_S, during, since)
    return problems
