"""An incremental Server-Sent Events parser (WHATWG rules), fed bytes as they arrive.

Used by the proxy on a *copy* of each SSE stream it forwards, so it runs on the hot path: line ends
are turned into LF once per read (only when a CR is present), then blank lines are found with
``bytes.find``. The harness reads whole response bodies with it (:func:`parse_events`).

Rules: lines end with CRLF, LF or CR (also split across reads); a blank line ends an event; lines
starting with ``:`` are comments; ``data:`` lines join with ``\\n``; ``event:`` names the event
(``message`` when absent or empty); ``id:`` (ignored when it holds NUL) and ``retry:`` (digits only)
are kept on the event; one space after the colon is dropped; a leading UTF-8 BOM is skipped. An
event with neither data nor id is not dispatched.
"""

from __future__ import annotations

from typing import NamedTuple

_BOM = b"\xef\xbb\xbf"


class Event(NamedTuple):
    """One complete SSE event: its type (``message`` by default), data, and ``id``/``retry`` if given."""

    event: str
    data: bytes
    id: str | None = None
    retry: int | None = None


class SSEParser:
    """Feed bytes with :meth:`feed`; get back the events completed by them."""

    __slots__ = ("_buffer", "_skip_lf", "_started", "max_buffer")

    def __init__(self, max_buffer: int = 64 * 1024 * 1024) -> None:
        self._buffer = b""  # line ends already turned into LF
        self._skip_lf = False  # the last read ended with CR: an LF starting the next one is its CRLF
        self._started = False
        self.max_buffer = max_buffer

    @property
    def pending(self) -> bool:
        """True when bytes of an unfinished event are buffered."""
        return bool(self._buffer.strip(b"\n"))

    def feed(self, data: bytes) -> list[Event]:
        """Events completed by ``data`` (incomplete text is kept for the next call)."""
        if self._skip_lf:
            self._skip_lf = False
            if data[:1] == b"\n":
                data = data[1:]
        if b"\r" in data:
            self._skip_lf = data[-1:] == b"\r"
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        buffer = self._buffer + data if self._buffer else data
        if not self._started:
            if len(buffer) < len(_BOM) and _BOM.startswith(buffer):
                self._buffer = buffer  # perhaps the start of a byte order mark: wait for more
                return []
            self._started = True
            if buffer.startswith(_BOM):
                buffer = buffer[len(_BOM) :]
        events: list[Event] = []
        start = 0
        find = buffer.find
        while (end := find(b"\n\n", start)) >= 0:
            event = parse_event(buffer[start:end])
            if event is not None:
                events.append(event)
            start = end + 2
        rest = buffer[start:] if start else buffer
        if len(rest) > self.max_buffer:  # never grow without bound on a broken stream
            rest = b""
        self._buffer = rest
        return events

    def finish(self) -> list[Event]:
        """The event left unterminated at the end of the stream (lenient readers of whole bodies)."""
        rest, self._buffer = self._buffer, b""
        event = parse_event(rest) if rest else None
        return [event] if event is not None else []


def parse_event(block: bytes) -> Event | None:
    """One event from its lines (comments and events with neither data nor id give None)."""
    name = "message"
    data: list[bytes] = []
    event_id = None
    retry = None
    for line in block.splitlines():
        if not line or line[0] == 58:  # b":" - a comment
            continue
        field, _, value = line.partition(b":")
        if value[:1] == b" ":
            value = value[1:]
        if field == b"data":
            data.append(value)
        elif field == b"event":
            name = value.decode("utf-8", errors="replace") or "message"
        elif field == b"id":
            if b"\0" not in value:
                event_id = value.decode("utf-8", errors="replace")
        elif field == b"retry" and value.isdigit():
            retry = int(value)
    if not data:
        return None if event_id is None else Event(name, b"", event_id, retry)
    return Event(name, b"\n".join(data), event_id, retry)


def parse_events(body: bytes) -> list[Event]:
    """Every event of a whole SSE body, including a last one missing its blank line."""
    parser = SSEParser()
    return parser.feed(body) + parser.finish()


def encode_event(data: bytes, event: str = "message") -> bytes:
    """One SSE event carrying ``data`` (a single-line JSON message), as the proxy injects errors."""
    return b"event: " + event.encode() + b"\r\ndata: " + data + b"\r\n\r\n"
