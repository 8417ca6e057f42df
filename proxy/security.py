"""Checks on requests to the proxy's own HTTP listener (same policy as finmcp-server, own code).

- ``Host`` must name a loopback host, the bound host or an ``--allow-host`` (DNS rebinding): else 421;
- ``Origin``, when present, must be ``http(s)://`` such a host or an ``--allow-origin``: else 403;
- with ``--token``, every path except ``/healthz`` needs ``Authorization: Bearer TOKEN`` or
  ``X-Finmcp-Proxy-Token: TOKEN`` (constant-time comparison): else 401.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import urlsplit

WILDCARD_ADDRESSES = frozenset({"0.0.0.0", "::", ""})
"""Bind addresses meaning every interface (never a default here): no single Host name to allow."""

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
TOKEN_HEADER = b"x-finmcp-proxy-token"


def host_name(value: str) -> str:
    """The host part of a ``Host`` header value (``[::1]:8080`` -> ``::1``), lower-cased."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        return value[1:end] if end > 0 else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


@dataclass(frozen=True)
class Policy:
    """What the listener accepts."""

    allowed_hosts: frozenset[str] = frozenset(LOOPBACK_HOSTS)
    extra_origins: frozenset[str] = field(default_factory=frozenset)
    token: str | None = None

    @classmethod
    def build(
        cls,
        bind_host: str,
        token: str | None = None,
        allow_hosts: Iterable[str] = (),
        allow_origins: Iterable[str] = (),
    ) -> Policy:
        """Loopback names, the bound host (unless a wildcard) and any extra hosts/origins."""
        hosts = {*LOOPBACK_HOSTS, *(h.lower() for h in allow_hosts)}
        if bind_host not in WILDCARD_ADDRESSES:
            hosts.add(host_name(bind_host) if not bind_host.startswith("[") else bind_host[1:-1])
        origins = frozenset(o.rstrip("/").lower() for o in allow_origins)
        return cls(frozenset(hosts), origins, token or None)

    def origin_allowed(self, origin: str) -> bool:
        """True for ``http(s)://`` origins on an allowed host, or an explicitly allowed origin."""
        origin = origin.strip().lower()
        if origin.rstrip("/") in self.extra_origins:
            return True
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and (parts.hostname or "") in self.allowed_hosts

    @lru_cache(maxsize=256)  # noqa: B019 - policies live as long as the process; clients repeat their Host
    def host_allowed(self, host: bytes) -> bool:
        """True when a ``Host`` header value names an allowed host."""
        return host_name(host.decode("latin-1")) in self.allowed_hosts

    def check(
        self, headers: Mapping[bytes, bytes] | Iterable[tuple[bytes, bytes]], path: str
    ) -> tuple[int, str] | None:
        """None when the request may pass, else ``(status, reason)``; lower-case header names.

        ``headers`` is a mapping or a list of pairs (where a name repeats, the last value counts).
        """
        if not isinstance(headers, Mapping):
            headers = dict(headers)
        host = headers.get(b"host")
        origin = headers.get(b"origin")
        auth = headers.get(b"authorization")
        token = headers.get(TOKEN_HEADER)
        if host is None or not self.host_allowed(host):
            return 421, "Host header not allowed (DNS rebinding protection)"
        if origin is not None and not self.origin_allowed(origin.decode("latin-1")):
            return 403, "Origin not allowed"
        if self.token is not None and path != "/healthz":
            expected = self.token.encode()
            bearer = b"Bearer " + expected
            ok = (auth is not None and hmac.compare_digest(auth, bearer)) or (
                token is not None and hmac.compare_digest(token, expected)
            )
            if not ok:
                return 401, "missing or wrong proxy token"
        return None
