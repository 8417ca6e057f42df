"""The server's HTTP safety checks as one ASGI middleware, applying the shared listener policy.

The policy (Host and Origin against DNS rebinding, bearer token, declared body size) is
:class:`recordings.plumbing.listener.ListenerPolicy`; :class:`SecuritySettings` is its server
configuration (``Authorization: Bearer`` only, ``Content-Length`` checked here). Refusals are JSON
``{"error": ...}`` with the policy's status (a 401 also carries ``WWW-Authenticate``). Streamed bodies
are capped again by the SDK transports, which get the same limit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send

from recordings.plumbing.listener import DEFAULT_MAX_BODY, ListenerPolicy


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
        denied = self.settings.check(dict(scope["headers"]), scope["path"])
        if denied is not None:
            status, message = denied
            challenge = [(b"www-authenticate", b'Bearer realm="finmcp"')] if status == 401 else None
            await _reject(send, status, message, challenge)
            return
        await self.app(scope, receive, send)
