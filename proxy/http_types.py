"""The HTTP side's plain data: its settings and one parsed client request.

Shared by the listener (:mod:`proxy.http_proxy`, which parses requests) and the exchanges that
forward them (:mod:`proxy.http_exchange`), so neither imports the other for its types.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from finmcp.proxy.capture import Tracer
from finmcp.proxy.defaults import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_HEAD_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_ANSWER,
    DEFAULT_MAX_BUFFERED,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_STREAM_MESSAGES,
)
from finmcp.proxy.security import Policy
from finmcp.proxy.tags import Tags
from finmcp.proxy.upstream_http import Target
from finmcp.recordings.plumbing.listener import DEFAULT_MAX_BODY


@dataclass(frozen=True, slots=True)
class ClientLimits:
    """What one answer or one client may hold of the proxy (the ``--max-answer`` ... flags; docs/reliability.md)."""

    max_answer: int = DEFAULT_MAX_ANSWER
    head_timeout: float = DEFAULT_HEAD_TIMEOUT
    body_timeout: float = DEFAULT_BODY_TIMEOUT
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    max_buffered: int = DEFAULT_MAX_BUFFERED


@dataclass(slots=True)
class Settings:
    """Everything the HTTP side needs."""

    target: Target
    tracer: Tracer
    policy: Policy
    defaults: Tags = field(default_factory=Tags)
    timeout: float = 120.0
    max_body: int = DEFAULT_MAX_BODY
    limits: ClientLimits = field(default_factory=ClientLimits)
    upstream_headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES  # an SSE event's bytes, held until its end
    max_stream_messages: int = DEFAULT_MAX_STREAM_MESSAGES  # messages on one POST's SSE stream
    health: Callable[[], dict[str, Any]] | None = None  # more /healthz fields (the shipper's)
    model_door: Any = None  # a proxy.model_door.ModelDoor with --llm-upstream
    faults: Any = None  # --fault-schedule: a proxy.fault_injection.ProxyFaults (proxy/http_faults.py)


@dataclass(slots=True)
class Request:
    """One parsed client request."""

    method: bytes
    target: str
    raw_headers: list[tuple[bytes, bytes]]  # names as sent
    forward: list[tuple[bytes, bytes]]  # raw_headers without hop-by-hop and tag headers
    body: bytes
    keep_alive: bool
    lookup: dict[bytes, bytes]  # lower-case name -> value (the last one, where a name repeats)
