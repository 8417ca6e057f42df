"""An incremental Server-Sent Events reader, used on a *copy* of the stream for logging.

The proxy forwards SSE bytes exactly as they arrive; this parser only tells it where events end
and what their ``data`` is (one JSON-RPC message per ``message`` event).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r|\r\n\n|\n\r\n")


@dataclass(slots=True)
class Event:
    """One complete SSE event."""

    event: str
    data: bytes
    id: str | None = None


class SSEParser:
    """Feed bytes with :meth:`feed`; get back the events completed by them."""

    def __init__(self, max_buffer: int = 64 * 1024 * 1024) -> None:
        self._buffer = b""
        self.max_buffer = max_buffer

    @property
    def pending(self) -> bool:
        """True when bytes of an unfinished event are buffered."""
        return bool(self._buffer)

    def feed(self, data: bytes) -> list[Event]:
        """Events completed by ``data`` (incomplete text is kept for the next call)."""
        buffer = self._buffer + data if self._buffer else data
        events: list[Event] = []
        start = 0
        while True:
            match = _EVENT_END.search(buffer, start)
            if match is None:
                break
            event = parse_event(buffer[start : match.start()])
            if event is not None:
                events.append(event)
            start = match.end()
        rest = buffer[start:]
        if len(rest) > self.max_buffer:  # never grow without bound on a broken stream
            rest = b""
        self._buffer = rest
        return events


def parse_event(block: bytes) -> Event | None:
    """One event from its lines (comments and empty blocks give None)."""
    name = "message"
    data: list[bytes] = []
    event_id = None
    for line in block.splitlines():
        if not line or line.startswith(b":"):
            continue
        field, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if field == b"data":
            data.append(value)
        elif field == b"event":
            name = value.decode("utf-8", errors="replace")
        elif field == b"id":
            event_id = value.decode("utf-8", errors="replace")
    if not data:
        return None if event_id is None else Event(name, b"", event_id)
    return Event(name, b"\n".join(data), event_id)


def encode_event(data: bytes, event: str = "message") -> bytes:
    """One SSE event carrying ``data`` (a single-line JSON message), as the proxy injects errors."""
    return b"event: " + event.encode() + b"\r\ndata: " + data + b"\r\n\r\n"
