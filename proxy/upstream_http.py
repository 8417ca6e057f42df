"""A minimal pooled HTTP/1.1 keep-alive client for the upstream, reading responses as raw bytes.

The proxy forwards the upstream's bytes, so this client hands back the response head and then the
body exactly as framed on the wire (``Content-Length``, chunked, or read-until-close), together
with the decoded payload for logging. Connections are reused (keep-alive, ``TCP_NODELAY``); a reused
connection that turns out to be closed before any response byte arrived is retried once on a fresh
one (the upstream never saw that request).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from recordings.redact import redact_url

MAX_HEAD = 64 * 1024


class UpstreamError(Exception):
    """The upstream could not be reached, closed the connection, or answered garbage."""


@dataclass(frozen=True, slots=True)
class Target:
    """Where the upstream lives: ``host``, ``port``, request ``path`` (with query) and Host header.

    ``url`` is for messages only, so it is stored with secret query values and ``user:password@``
    redacted; requests are built from ``path``, which keeps the real query.
    """

    url: str
    host: str
    port: int
    path: str
    host_header: bytes

    @classmethod
    def parse(cls, url: str) -> Target:
        """A target from an ``http://host:port/path`` URL (``https`` is not supported)."""
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"upstream URL {redact_url(url)!r}: expected http://HOST[:PORT]/PATH")
        port = parts.port or 80
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        netloc = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
        if parts.port:
            netloc += f":{parts.port}"
        return cls(redact_url(url), parts.hostname, port, path, netloc.encode("latin-1"))

    def resolve(self, path: str) -> Target:
        """Another path on the same server (absolute path or full URL, e.g. an SSE ``endpoint``)."""
        if path.startswith("http://"):
            return Target.parse(path)
        return Target(self.url, self.host, self.port, path, self.host_header)


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


class Connection:
    """One TCP connection to the upstream."""

    __slots__ = ("reader", "writer", "reused")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.reused = False

    def close(self) -> None:
        with contextlib.suppress(Exception):  # already closed
            self.writer.close()

    async def read_head(self, method: bytes) -> Response:
        """Read and parse a response head (skipping ``1xx`` interim responses)."""
        while True:
            try:
                head = await self.reader.readuntil(b"\r\n\r\n")
            except asyncio.LimitOverrunError:
                raise UpstreamError("upstream response head too large") from None
            except asyncio.IncompleteReadError as exc:
                raise UpstreamError(
                    "upstream closed the connection" + (" mid-response" if exc.partial else "")
                ) from None
            response = parse_head(head, method)
            if not 100 <= response.status < 200:
                return response

    async def body(self, response: Response) -> AsyncIterator[tuple[bytes, bytes]]:
        """Yield ``(raw_wire_bytes, decoded_payload)`` pieces of the body as they arrive."""
        reader = self.reader
        try:
            if response.body_mode == "length":
                remaining = response.length
                while remaining > 0:
                    data = await reader.read(min(remaining, 1 << 20))
                    if not data:
                        raise UpstreamError("upstream closed the connection mid-body")
                    remaining -= len(data)
                    yield data, data
            elif response.body_mode == "chunked":
                while True:
                    line = await reader.readuntil(b"\r\n")
                    try:
                        size = int(line.split(b";", 1)[0].strip(), 16)
                    except ValueError:
                        raise UpstreamError(f"bad chunk size line {line[:40]!r}") from None
                    if size == 0:
                        trailer = b""
                        while True:
                            tline = await reader.readuntil(b"\r\n")
                            trailer += tline
                            if tline == b"\r\n":
                                break
                        yield line + trailer, b""
                        return
                    data = await reader.readexactly(size + 2)
                    yield line + data, data[:-2]
            elif response.body_mode == "close":
                while True:
                    data = await reader.read(1 << 16)
                    if not data:
                        return
                    yield data, data
        except asyncio.IncompleteReadError:
            raise UpstreamError("upstream closed the connection mid-body") from None
        except (ConnectionError, OSError) as exc:
            raise UpstreamError(f"upstream connection failed mid-body: {exc!r}") from None


def parse_head(head: bytes, method: bytes) -> Response:
    """Parse a status line and headers; decide how the body is framed."""
    lines = head.split(b"\r\n")
    status_line = lines[0].split(b" ", 2)
    if len(status_line) < 2 or not status_line[0].startswith(b"HTTP/1."):
        raise UpstreamError(f"upstream sent a bad status line {lines[0][:60]!r}")
    try:
        status = int(status_line[1])
    except ValueError:
        raise UpstreamError(f"upstream sent a bad status line {lines[0][:60]!r}") from None
    headers: list[tuple[bytes, bytes]] = []
    length = None
    chunked = False
    keep_alive = status_line[0] == b"HTTP/1.1"
    content_type = b""
    for line in lines[1:]:
        if not line:
            continue
        name, _, value = line.partition(b":")
        key = name.strip().lower()
        value = value.strip()
        headers.append((key, value))
        if key == b"content-length":
            try:
                length = int(value)
            except ValueError:
                raise UpstreamError(f"upstream sent a bad Content-Length {value!r}") from None
        elif key == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
        elif key == b"connection":
            token = value.lower()
            if b"close" in token:
                keep_alive = False
            elif b"keep-alive" in token:
                keep_alive = True
        elif key == b"content-type":
            content_type = value.lower()
    if method == b"HEAD" or status in (204, 304) or 100 <= status < 200:
        mode = "none"
    elif chunked:
        mode = "chunked"
    elif length is not None:
        mode = "length" if length > 0 else "none"
    else:
        mode = "close"
        keep_alive = False
    return Response(status, head, headers, mode, length or 0, content_type, keep_alive)


class UpstreamPool:
    """Idle keep-alive connections to one upstream host, opened on demand (no upper bound)."""

    def __init__(self, target: Target, connect_timeout: float = 5.0, max_idle: int = 64) -> None:
        self.target = target
        self.connect_timeout = connect_timeout
        self.max_idle = max_idle
        self._idle: list[Connection] = []

    def take_idle(self) -> Connection | None:
        """An open idle connection (marked reused), or None."""
        while self._idle:
            conn = self._idle.pop()
            if not conn.writer.is_closing() and not conn.reader.at_eof():
                conn.reused = True
                return conn
            conn.close()
        return None

    async def connect(self) -> Connection:
        """A fresh connection with ``TCP_NODELAY``."""
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(self.target.host, self.target.port, limit=MAX_HEAD * 16),
                self.connect_timeout,
            )
        except TimeoutError:
            raise UpstreamError(
                f"upstream {self.target.url} did not accept a connection within {self.connect_timeout} s"
            ) from None
        except OSError as exc:
            raise UpstreamError(f"upstream {self.target.url} unreachable: {exc.strerror or exc}") from None
        sock = writer.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return Connection(reader, writer)

    def release(self, conn: Connection, response: Response | None) -> None:
        """Return a connection whose response was fully read (else close it)."""
        if (
            response is not None
            and response.keep_alive
            and len(self._idle) < self.max_idle
            and not conn.writer.is_closing()
        ):
            self._idle.append(conn)
        else:
            conn.close()

    async def send(self, head: bytes, body: bytes, method: bytes) -> tuple[Connection, Response]:
        """Send one request and read its response head; retries once when a reused connection was stale."""
        for attempt in (0, 1):
            conn = self.take_idle() if attempt == 0 else None
            if conn is None:
                conn = await self.connect()
            try:
                conn.writer.write(head + body if len(body) < 65536 else head)
                if len(body) >= 65536:
                    conn.writer.write(body)
                return conn, await conn.read_head(method)
            except (UpstreamError, ConnectionError, OSError) as exc:
                conn.close()
                stale = conn.reused and attempt == 0 and not isinstance(exc, asyncio.CancelledError)
                if stale:
                    continue
                if isinstance(exc, UpstreamError):
                    raise
                raise UpstreamError(f"upstream {self.target.url} connection failed: {exc!r}") from None
            except BaseException:
                conn.close()
                raise
        raise UpstreamError("unreachable")  # pragma: no cover

    def close(self) -> None:
        """Close every idle connection."""
        for conn in self._idle:
            conn.close()
        self._idle.clear()


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
