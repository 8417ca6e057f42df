"""Which requests the HTTP side forwards: only what an MCP client sends.

The proxy adds the ``--upstream-header`` credentials to every request it forwards, so it must not
forward what a web page can make a browser send (an ``<img>``, a no-cors ``fetch``). After the path
tags (``/r/RUN/s/SAMPLE/t/TURN/k/TRIAL``), a request is forwarded only when it is

- on an MCP endpoint: ``/mcp``, ``/`` or nothing (the ``--upstream`` URL itself), the upstream URL's
  own path, or another path ending in ``/mcp`` (``/fintool760/mcp`` on a multi-inventory server) made
  of plain segments (no ``.``/``..``, no percent-escapes): else **404**;
- with a Streamable HTTP method: ``POST`` (messages), ``GET`` (the server's event stream),
  ``DELETE`` (ending a session), ``OPTIONS`` (an upstream's own CORS answers): else **405** with
  ``Allow``;
- a ``GET`` that asks for the event stream (``Accept`` lists ``text/event-stream``, as every MCP
  client's does): else **406**. An ``<img>`` or a typed-in URL asks for something else.

Refused requests are answered by the proxy and never reach the upstream. :func:`route` decides;
``proxy.http_proxy`` calls it once per request, after the listener policy and the path tags.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

MCP_METHODS = frozenset({b"POST", b"GET", b"DELETE", b"OPTIONS"})
"""Methods an MCP client (or a browser's preflight to the upstream) sends to the MCP endpoint."""
ALLOW = b"GET, POST, DELETE, OPTIONS"
EVENT_STREAM = "text/event-stream"
ENDPOINT_PATHS = frozenset({"", "/", "/mcp"})
"""Paths after the tags that mean the ``--upstream`` URL itself."""
_SEGMENT = re.compile(r"[A-Za-z0-9_~!$&'()*+,;=:@.-]+")


@dataclass(frozen=True, slots=True)
class Refusal:
    """The proxy's answer to a request it does not forward: status, the reason, extra headers."""

    status: int
    reason: str
    headers: tuple[tuple[bytes, bytes], ...] = ()


def is_mcp_path(rest: str, upstream_path: str) -> bool:
    """True when ``rest`` (the path after the tags, no query) names an MCP endpoint of the upstream."""
    if rest in ENDPOINT_PATHS or rest == upstream_path:
        return True
    if not rest.endswith("/mcp"):
        return False
    segments = rest[1:].split("/")
    return all(_SEGMENT.fullmatch(s) is not None and s not in (".", "..") for s in segments)


def accepts_event_stream(accept: bytes | None) -> bool:
    """True when an ``Accept`` header value lists ``text/event-stream`` (parameters ignored)."""
    if accept is None:
        return False
    for item in accept.decode("latin-1").split(","):
        if item.split(";", 1)[0].strip().lower() == EVENT_STREAM:
            return True
    return False


def route(method: bytes, rest: str, headers: Mapping[bytes, bytes], upstream_path: str) -> Refusal | None:
    """None when the request is one an MCP client sends (forward it), else the :class:`Refusal`.

    ``rest`` is the path after the tags (no query), ``headers`` the request's (lower-case names),
    ``upstream_path`` the ``--upstream`` URL's path (no query).
    """
    if not is_mcp_path(rest, upstream_path):
        shown = rest if len(rest) <= 200 else rest[:200] + "..."
        return Refusal(404, f"not an MCP endpoint: {shown or '/'!r} (the proxy forwards MCP requests only)")
    if method not in MCP_METHODS:
        shown = method.decode("latin-1")
        return Refusal(405, f"method {shown} not allowed on the MCP endpoint", ((b"allow", ALLOW),))
    if method == b"GET" and not accepts_event_stream(headers.get(b"accept")):
        return Refusal(
            406, "GET on the MCP endpoint opens the server's event stream: send Accept: text/event-stream"
        )
    return None
