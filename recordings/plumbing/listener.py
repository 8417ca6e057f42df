"""What an HTTP listener of finmcp accepts (Host, Origin, token, body size), and binding its socket.

One policy for ``finmcp-server`` (an ASGI middleware applies it) and ``finmcp-proxy`` (its HTTP
listener applies it), configured per side:

- ``Host`` must name an allowed host (loopback names, the bound host unless it is a wildcard
  address, ``--allow-host`` names; any port): else ``421`` (DNS rebinding protection);
- ``Origin``, when present, must be ``http(s)://`` an allowed host or an ``--allow-origin``: else
  ``403`` (browsers send it on cross-site requests; command-line clients do not);
- with a token, every path except the public ones (``/healthz``) needs ``Authorization: Bearer
  TOKEN`` or one of the side's token headers carrying the bare token (constant-time comparison):
  else ``401``;
- with a body limit, a declared ``Content-Length`` that is not a number gets ``400`` and one above
  the limit ``413``, before the body is read.

CORS (off by default): each ``--cors-origin`` is an origin a browser page may call the listener from.
Such an origin also passes the ``Origin`` check. With at least one configured, the listener answers
every CORS preflight itself (``OPTIONS`` with ``Origin`` and ``Access-Control-Request-Method``; no
token needed, browsers send none): ``204`` with :meth:`ListenerPolicy.preflight_headers` for a CORS
origin, ``403`` without CORS headers for any other; a request from a CORS origin gets
:meth:`ListenerPolicy.cors_headers` on its response. Credentials mode is not supported (no
``Access-Control-Allow-Credentials``): MCP carries its token in ``Authorization``, which a page sets
itself, not in cookies.
"""

from __future__ import annotations

import errno
import hmac
import socket
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Self
from urllib.parse import urlsplit

WILDCARD_ADDRESSES = frozenset({"0.0.0.0", "::", ""})
"""Bind addresses meaning every interface (never a default here): no single Host name to allow."""
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
DEFAULT_MAX_BODY = 4 * 1024 * 1024
PUBLIC_PATHS = frozenset({"/healthz"})
HOST_REJECTED = "Host header not allowed (DNS rebinding protection)"
ORIGIN_REJECTED = "Origin not allowed"
PREFLIGHT_REJECTED = "Origin not allowed for cross-origin requests (see --cors-origin)"
CORS_METHODS = b"GET, POST, DELETE, OPTIONS"
CORS_REQUEST_HEADERS = (
    b"content-type",
    b"accept",
    b"authorization",
    b"mcp-session-id",
    b"mcp-protocol-version",
    b"last-event-id",
    b"mcp-method",
    b"mcp-name",
)
"""Request headers a browser page may send (Streamable HTTP's in both eras, and the bearer token)."""
CORS_EXPOSED = b"Mcp-Session-Id, MCP-Protocol-Version"
"""Response headers a page may read: an MCP client needs the session id and the protocol version."""
CORS_MAX_AGE = b"600"
"""Seconds a browser may cache a preflight answer."""


def normal_origin(origin: str) -> str:
    """An origin as compared: lower-case, without a trailing ``/``."""
    return origin.strip().rstrip("/").lower()


def cors_origin(value: str) -> str:
    """A ``--cors-origin`` value checked and normalised: ``scheme://host[:port]``, nothing else."""
    origin = normal_origin(value)
    parts = urlsplit(origin)
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.path
        or parts.query
        or parts.fragment
        or "@" in parts.netloc
    ):
        raise ValueError(f"CORS origin {value!r}: expected scheme://host[:port], e.g. http://localhost:5173")
    return origin


def host_name(value: str) -> str:
    """The host part of a ``Host`` header value (``[::1]:8080`` -> ``::1``), lower-cased."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        return value[1:end] if end > 0 else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def allowed_hosts(bind_host: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """Loopback names, the bound host (unless a wildcard address) and the extra names, lower-cased."""
    hosts = {*LOOPBACK_HOSTS, *(h.lower() for h in extra)}
    if bind_host not in WILDCARD_ADDRESSES:
        hosts.add(host_name(bind_host) if not bind_host.startswith("[") else bind_host[1:-1])
    return frozenset(hosts)


@dataclass(frozen=True, eq=False)  # identity hash: host_allowed's cache key stays cheap
class ListenerPolicy:
    """What a listener accepts; :meth:`check` gives the verdict on one request's headers and path.

    A side configures it by subclassing with other field defaults (token headers, refusal text, body
    limit) and builds it with :meth:`build`.
    """

    allowed_hosts: frozenset[str] = frozenset(LOOPBACK_HOSTS)
    extra_origins: frozenset[str] = field(default_factory=frozenset)
    token: str | None = None
    token_headers: tuple[bytes, ...] = ()
    """Lower-case names of headers that may carry the bare token (besides ``Authorization: Bearer``)."""
    token_reason: str = "missing or wrong bearer token"
    max_body: int | None = None
    """Checked against ``Content-Length`` here; None when the caller enforces it while reading."""
    public_paths: frozenset[str] = PUBLIC_PATHS
    cors_origins: frozenset[str] = field(default_factory=frozenset)
    """Origins browser pages may call from (``--cors-origin``, normalised); empty: CORS off."""
    cors_request_headers: tuple[bytes, ...] = CORS_REQUEST_HEADERS

    def __post_init__(self) -> None:
        if self.max_body is not None and self.max_body < 1:
            raise ValueError(f"max body {self.max_body}: expected a positive number of bytes")

    @classmethod
    def build(
        cls,
        bind_host: str,
        token: str | None = None,
        max_body: int | None = None,
        allow_hosts: Iterable[str] = (),
        allow_origins: Iterable[str] = (),
        cors_origins: Iterable[str] = (),
    ) -> Self:
        """The policy of a listener bound to ``bind_host`` (``max_body`` None: the class's default).

        A malformed CORS origin raises :class:`ValueError`.
        """
        hosts = allowed_hosts(bind_host, allow_hosts)
        cors = frozenset(cors_origin(o) for o in cors_origins)
        origins = frozenset(normal_origin(o) for o in allow_origins) | cors
        policy = cls(allowed_hosts=hosts, extra_origins=origins, token=token or None, cors_origins=cors)
        return policy if max_body is None else replace(policy, max_body=max_body)

    def origin_allowed(self, origin: str) -> bool:
        """True for ``http(s)://`` origins on an allowed host, or an explicitly allowed origin."""
        origin = origin.strip().lower()
        if normal_origin(origin) in self.extra_origins:
            return True
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and (parts.hostname or "") in self.allowed_hosts

    @lru_cache(maxsize=256)  # noqa: B019 - policies live as long as the process; clients repeat their Host
    def host_allowed(self, host: bytes) -> bool:
        """True when a ``Host`` header value names an allowed host."""
        return host_name(host.decode("latin-1")) in self.allowed_hosts

    def token_ok(self, headers: Mapping[bytes, bytes]) -> bool:
        """True without a token, else when a header carries it (constant-time comparisons)."""
        if self.token is None:
            return True
        expected = self.token.encode()
        auth = headers.get(b"authorization")
        if auth is not None and hmac.compare_digest(auth, b"Bearer " + expected):
            return True
        for name in self.token_headers:
            value = headers.get(name)
            if value is not None and hmac.compare_digest(value, expected):
                return True
        return False

    def cors_origin_of(self, headers: Mapping[bytes, bytes]) -> bytes | None:
        """The request's ``Origin`` (as sent) when it is a CORS origin, else None."""
        if not self.cors_origins:
            return None
        origin = headers.get(b"origin")
        if origin is None or normal_origin(origin.decode("latin-1")) not in self.cors_origins:
            return None
        return origin

    def preflight(
        self, method: bytes, headers: Mapping[bytes, bytes]
    ) -> tuple[int, list[tuple[bytes, bytes]]] | None:
        """The listener's own answer to a CORS preflight ``(status, headers)``; None when not one to answer.

        Only with CORS on: ``204`` with :meth:`preflight_headers` for a CORS origin, ``403`` (no CORS
        headers) for another origin, ``421`` for a Host not allowed. The token is not asked for.
        """
        if not self.cors_origins or method != b"OPTIONS":
            return None
        if b"origin" not in headers or b"access-control-request-method" not in headers:
            return None
        host = headers.get(b"host")
        if host is None or not self.host_allowed(host):
            return 421, []
        origin = self.cors_origin_of(headers)
        if origin is None:
            return 403, []
        return 204, self.preflight_headers(origin)

    def preflight_headers(self, origin: bytes) -> list[tuple[bytes, bytes]]:
        """The headers of a successful preflight answer for ``origin`` (a CORS origin, as sent)."""
        return [
            (b"access-control-allow-origin", origin),
            (b"access-control-allow-methods", CORS_METHODS),
            (b"access-control-allow-headers", b", ".join(self.cors_request_headers)),
            (b"access-control-max-age", CORS_MAX_AGE),
            (b"vary", b"Origin"),
        ]

    def cors_headers(self, headers: Mapping[bytes, bytes]) -> list[tuple[bytes, bytes]]:
        """Headers for the response to a request from a CORS origin (``[]`` for any other request)."""
        origin = self.cors_origin_of(headers)
        if origin is None:
            return []
        return [
            (b"access-control-allow-origin", origin),
            (b"access-control-expose-headers", CORS_EXPOSED),
            (b"vary", b"Origin"),
        ]

    def check(
        self, headers: Mapping[bytes, bytes] | Iterable[tuple[bytes, bytes]], path: str
    ) -> tuple[int, str] | None:
        """None when the request may pass, else ``(status, reason)``; lower-case header names.

        ``headers`` is a mapping or a list of pairs (where a name repeats, the last value counts).
        Checks in order: Host, Origin, token (not on public paths), Content-Length.
        """
        if not isinstance(headers, Mapping):
            headers = dict(headers)
        host = headers.get(b"host")
        if host is None or not self.host_allowed(host):
            return 421, HOST_REJECTED
        origin = headers.get(b"origin")
        if origin is not None and not self.origin_allowed(origin.decode("latin-1")):
            return 403, ORIGIN_REJECTED
        if self.token is not None and path not in self.public_paths and not self.token_ok(headers):
            return 401, self.token_reason
        if self.max_body is not None:
            length = headers.get(b"content-length")
            if length is not None:
                try:
                    declared = int(length)
                except ValueError:
                    return 400, "invalid Content-Length"
                if declared > self.max_body:
                    return 413, f"request body too large (limit {self.max_body} bytes)"
        return None


def bind_socket(host: str, port: int, *, blocking: bool, inheritable: bool) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0 picks a free one; ``[::1]`` or ``::1`` for IPv6).

    ``IPPROTO_TCP`` explicitly: asyncio only disables Nagle (``TCP_NODELAY``) on sockets whose proto
    says TCP, and without it every keep-alive request waits ~40 ms for a delayed ACK.
    """
    bare = host.strip("[]")
    family = socket.AF_INET6 if ":" in bare else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((bare, port))
    except OSError:
        sock.close()
        raise
    sock.listen(2048)
    sock.setblocking(blocking)
    sock.set_inheritable(inheritable)
    return sock


class ListenError(Exception):
    """The address cannot be bound; the message names it and the flag that changes it (one line)."""


PORT_ADVICE = "pick another with --port N (or --port 0 for any free port)"


def listen_error(host: str, port: int, error: OSError) -> ListenError:
    """The :class:`ListenError` for ``error`` binding ``host:port``: what went wrong and which flag to change.

    ``HOST:PORT is in use; pick another with --port N (or --port 0 for any free port)`` for an address
    in use; a port below 1024 without the privilege, or a host that is not this machine's, names
    ``--port`` or ``--host``; anything else reads ``cannot bind HOST:PORT: REASON``.
    """
    bare = host.strip("[]")
    where = f"[{bare}]:{port}" if ":" in bare else f"{bare}:{port}"
    reason = error.strerror or str(error)
    if error.errno == errno.EADDRINUSE:
        return ListenError(f"{where} is in use; {PORT_ADVICE}")
    if error.errno == errno.EACCES:
        return ListenError(f"cannot bind {where}: {reason} (ports below 1024 need privileges); {PORT_ADVICE}")
    if error.errno == errno.EADDRNOTAVAIL or isinstance(error, socket.gaierror):
        return ListenError(f"cannot bind {where}: {reason}; --host must name an address of this machine")
    return ListenError(f"cannot bind {where}: {reason}")


def bind_listener(
    program: str,
    host: str,
    port: int,
    *,
    exposes: str,
    token: str | None,
    blocking: bool = False,
    inheritable: bool = False,
) -> socket.socket:
    """:func:`bind_socket`, after a warning on stderr when ``host`` is not loopback.

    The one place every finmcp listener (server, proxy, viewer; HTTP, SSE or TLS alike) binds. The
    warning reads ``PROGRAM: warning: binding HOST, not loopback; other machines can EXPOSES`` (and
    suggests ``--token`` when there is none). Raises :class:`ListenError` (:func:`listen_error`) when
    binding fails; the program prints it after its name and exits with status 2.
    """
    if host not in LOOPBACK_HOSTS:
        advice = "" if token else " (consider --token)"
        print(
            f"{program}: warning: binding {host}, not loopback; other machines can {exposes}{advice}",
            file=sys.stderr,
        )
    try:
        return bind_socket(host, port, blocking=blocking, inheritable=inheritable)
    except OSError as exc:
        raise listen_error(host, port, exc) from None


def socket_url(sock: socket.socket, scheme: str = "http") -> str:
    """``scheme://host:port`` of a bound socket (an IPv6 host in brackets)."""
    host, port = sock.getsockname()[:2]
    return f"{scheme}://{f'[{host}]' if ':' in host else host}:{port}"
