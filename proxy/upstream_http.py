"""HTTP/1.1 pieces shared by the proxy's upstream clients: targets, response heads, request heads.

The connections themselves live in :mod:`proxy.upstream_conn`; both the HTTP side and the stdio
side's HTTP and SSE upstreams use them.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from finmcp.recordings.plumbing import http1
from finmcp.recordings.redact import redact_url


class UpstreamError(Exception):
    """The upstream could not be reached, closed the connection, or answered garbage."""

    logged = False
    """True when the failure was logged already (a TLS failure is logged once per reason)."""


class UpstreamTLSError(UpstreamError):
    """The TLS handshake with an ``https`` upstream failed (certificate rejected, not TLS, ...)."""

    logged = True


@dataclass(frozen=True, slots=True)
class Target:
    """Where the upstream lives: ``host``, ``port``, request ``path`` (with query) and Host header.

    ``url`` is for messages only, so it is stored with secret query values and ``user:password@``
    redacted; requests are built from ``path``, which keeps the real query. ``tls`` (an ``https``
    URL) carries the client context connections use; an ``https`` target is never reached without it.
    """

    url: str
    host: str
    port: int
    path: str
    host_header: bytes
    tls: ssl.SSLContext | None = field(default=None, compare=False, repr=False)

    @classmethod
    def parse(cls, url: str, tls: ssl.SSLContext | None = None) -> Target:
        """A target from an ``http://`` or ``https://host:port/path`` URL.

        ``tls`` is the client context for an ``https`` URL (default: the system trust store); it is
        ignored for ``http``.
        """
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"upstream URL {redact_url(url)!r}: expected http(s)://HOST[:PORT]/PATH")
        secure = parts.scheme == "https"
        if secure and tls is None:
            from finmcp.proxy.upstream_tls import system_context

            tls = system_context()
        port = parts.port or (443 if secure else 80)
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        netloc = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
        if parts.port:
            netloc += f":{parts.port}"
        return cls(
            redact_url(url), parts.hostname, port, path, netloc.encode("latin-1"), tls if secure else None
        )

    @property
    def scheme(self) -> str:
        return "https" if self.tls is not None else "http"

    def resolve(self, path: str) -> Target:
        """Another path on the same server (absolute path or full URL, e.g. an SSE ``endpoint``).

        A full URL must keep the scheme, host and port: a TLS upstream never hands the proxy over
        to plain HTTP (no downgrade), nor to another server.
        """
        if path.startswith(("http://", "https://")):
            other = Target.parse(path, self.tls)
            if (other.scheme, other.host, other.port) != (self.scheme, self.host, self.port):
                raise UpstreamError(
                    f"upstream {self.url} named {redact_url(path)!r} as its endpoint; refusing to leave"
                    f" {self.scheme}://{self.host}:{self.port}"
                    + (" (no downgrade from TLS)" if self.tls is not None and other.tls is None else "")
                )
            return other
        return Target(self.url, self.host, self.port, path, self.host_header, self.tls)


@dataclass(slots=True)
class Response:
    """A response head; ``body_mode`` is ``length``, ``chunked``, ``close`` or ``none``."""

    status: int
    head: bytes
    headers: list[tuple[bytes, bytes]]
    body_mode: str
    length: int = 0
    content_type: bytes = b""
    keep_alive: bool = True
    extra: dict[str, object] = field(default_factory=dict)

    def header(self, name: bytes) -> bytes | None:
        for key, value in self.headers:
            if key == name:
                return value
        return None


def parse_head(head: bytes, method: bytes) -> Response:
    """Parse a status line and headers (strictly, :mod:`recordings.plumbing.http1`); decide how the body is framed."""
    try:
        parsed = http1.parse_response_head(head, len(head))
        body = http1.response_body(parsed.headers, parsed.status, method)
    except http1.FramingError as exc:
        raise UpstreamError(f"upstream sent a malformed response: {exc.reason}") from None
    headers: list[tuple[bytes, bytes]] = []
    content_type = b""
    for name, value in parsed.headers:
        key = name.lower()
        headers.append((key, value))
        if key == b"content-type":
            content_type = value.lower()
    keep_alive = body.kind != "close" and http1.keep_alive(parsed.minor, parsed.headers)
    return Response(parsed.status, head, headers, body.kind, body.length, content_type, keep_alive)


def build_request(
    method: bytes,
    target: Target,
    headers: list[tuple[bytes, bytes]],
    body: bytes,
) -> bytes:
    """A request head: ``headers`` (raw names kept) plus Host and Content-Length for ``body``."""
    parts = [method, b" ", target.path.encode("latin-1"), b" HTTP/1.1\r\nhost: ", target.host_header, b"\r\n"]
    for name, value in headers:
        parts += [name, b": ", value, b"\r\n"]
    if body or method in (b"POST", b"PUT", b"PATCH"):
        parts += [b"content-length: ", str(len(body)).encode(), b"\r\n"]
    parts.append(b"\r\n")
    return b"".join(parts)
