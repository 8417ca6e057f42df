"""The server's HTTP safety checks as one ASGI middleware, applying the shared listener policy.

The policy (Host and Origin against DNS rebinding, bearer token, declared body size) is
:class:`recordings.plumbing.listener.ListenerPolicy`; :class:`SecuritySettings` is its server
configuration (``Authorization: Bearer`` only, ``Content-Length`` checked here). Refusals are JSON
``{"error": ...}`` with the policy's status (a 401 also carries ``WWW-Authenticate``). Streamed bodies
are capped again by the SDK transports, which get the same limit.

With ``--cors-origin``, CORS preflights are answered here (the SDK never sees them) and every
response to a request from a CORS origin, refusals included, carries the policy's CORS headers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from finmcp.recordings.plumbing.listener import (
    DEFAULT_MAX_BODY,
    HOST_REJECTED,
    PREFLIGHT_REJECTED,
    ListenerPolicy,
)


@dataclass(frozen=True, eq=False)
class SecuritySettings(ListenerPolicy):
    """The server's listener policy: ``SecuritySettings.build(host, token, max_body, hosts, origins)``."""

    max_body: int | None = DEFAULT_MAX_BODY


async def _reject(
    send: Send, status: int, message: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = json.dumps({"error": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers + (extra or [])})
    await send({"type": "http.response.body", "body": body})


class SecurityMiddleware:
    """Wraps the server's ASGI app with the checks of a :class:`ListenerPolicy`."""

    def __init__(self, app: ASGIApp, settings: ListenerPolicy) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        preflight = self.settings.preflight(scope["method"].encode("latin-1"), headers)
        if preflight is not None:
            status, cors = preflight
            if status == 204:
                await send({"type": "http.response.start", "status": 204, "headers": cors})
                await send({"type": "http.response.body", "body": b""})
            else:
                await _reject(send, status, HOST_REJECTED if status == 421 else PREFLIGHT_REJECTED)
            return
        cors = self.settings.cors_headers(headers)
        denied = self.settings.check(headers, scope["path"])
        if denied is not None:
            status, message = denied
            challenge = [(b"www-authenticate", b'Bearer realm="finmcp"')] if status == 401 else []
            await _reject(send, status, message, challenge + cors)
            return
        if cors:
            send = _with_headers(send, cors)
        await self.app(scope, receive, send)


def _with_headers(send: Send, extra: list[tuple[bytes, bytes]]) -> Send:
    """``send`` adding ``extra`` to the response head (replacing the app's own CORS headers)."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            kept = [
                (k, v) for k, v in message.get("headers", []) if not k.lower().startswith(b"access-control-")
            ]
            message = {**message, "headers": kept + extra}
        await send(message)

    return sending
