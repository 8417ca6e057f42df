"""HTTP safety checks as one ASGI middleware: Host and Origin (DNS rebinding), bearer token, body size.

- ``Host`` must name an allowed host (loopback names by default, any port): else ``421``;
- ``Origin``, when present, must be ``http(s)://`` an allowed host: else ``403`` (browsers send it on
  cross-site requests; command-line clients do not);
- with a token, every path except ``/healthz`` needs ``Authorization: Bearer <token>``: else ``401``;
- a declared ``Content-Length`` above the limit gets ``413`` before the body is read (streamed
  bodies are capped again by the SDK transports, which get the same limit).
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

WILDCARD_ADDRESSES = frozenset({"0.0.0.0", "::", ""})
"""Bind addresses meaning every interface (never a default here): no single Host name to allow."""

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
DEFAULT_MAX_BODY = 4 * 1024 * 1024
PUBLIC_PATHS = frozenset({"/healthz"})


def _host_name(value: str) -> str:
    """The host part of a ``Host`` header value (``[::1]:8080`` -> ``::1``), lower-cased."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        return value[1:end] if end > 0 else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


@dataclass(frozen=True)
class SecuritySettings:
    """What :class:`SecurityMiddleware` enforces."""

    allowed_hosts: frozenset[str] = frozenset(LOOPBACK_HOSTS)
    token: str | None = None
    max_body: int = DEFAULT_MAX_BODY
    extra_origins: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def build(
        cls,
        bind_host: str,
        token: str | None = None,
        max_body: int = DEFAULT_MAX_BODY,
        allow_hosts: Iterable[str] = (),
        allow_origins: Iterable[str] = (),
    ) -> SecuritySettings:
        """Loopback names, the bound host (unless a wildcard address) and any extra allowed hosts."""
        hosts = {*LOOPBACK_HOSTS, *(h.lower() for h in allow_hosts)}
        if bind_host not in WILDCARD_ADDRESSES:
            hosts.add(_host_name(bind_host) if not bind_host.startswith("[") else bind_host[1:-1])
        if max_body < 1:
            raise ValueError(f"max body {max_body}: expected a positive number of bytes")
        return cls(
            allowed_hosts=frozenset(hosts),
            token=token or None,
            max_body=max_body,
            extra_origins=frozenset(o.rstrip("/").lower() for o in allow_origins),
        )

    def origin_allowed(self, origin: str) -> bool:
        """True for ``http(s)://`` origins on an allowed host, or an explicitly allowed origin."""
        origin = origin.strip().lower()
        if origin.rstrip("/") in self.extra_origins:
            return True
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and (parts.hostname or "") in self.allowed_hosts


async def _reject(
    send: Send, status: int, message: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = json.dumps({"error": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers + (extra or [])})
    await send({"type": "http.response.body", "body": body})


class SecurityMiddleware:
    """Wraps the server's ASGI app with the checks of :class:`SecuritySettings`."""

    def __init__(self, app: ASGIApp, settings: SecuritySettings) -> None:
        self.app = app
        self.settings = settings
        self._expected_auth = f"Bearer {settings.token}".encode() if settings.token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = origin = auth = length = None
        for name, value in scope["headers"]:
            if name == b"host":
                host = value
            elif name == b"origin":
                origin = value
            elif name == b"authorization":
                auth = value
            elif name == b"content-length":
                length = value
        settings = self.settings
        if host is None or _host_name(host.decode("latin-1")) not in settings.allowed_hosts:
            await _reject(send, 421, "Host header not allowed (DNS rebinding protection)")
            return
        if origin is not None and not settings.origin_allowed(origin.decode("latin-1")):
            await _reject(send, 403, "Origin not allowed")
            return
        needs_token = self._expected_auth is not None and scope["path"] not in PUBLIC_PATHS
        if needs_token and (auth is None or not hmac.compare_digest(auth, self._expected_auth or b"")):
            challenge = [(b"www-authenticate", b'Bearer realm="finmcp"')]
            await _reject(send, 401, "missing or wrong bearer token", challenge)
            return
        if length is not None:
            try:
                declared = int(length)
            except ValueError:
                await _reject(send, 400, "invalid Content-Length")
                return
            if declared > settings.max_body:
                await _reject(send, 413, f"request body too large (limit {settings.max_body} bytes)")
                return
        await self.app(scope, receive, send)
