"""An incremental Server-Sent Events parser (WHATWG rules), fed bytes as they arrive.

Used by the proxy on each SSE stream it forwards, so it runs on the hot path, and on hostile streams
too: its work is linear in the bytes fed, however they are split. The unfinished event stays in one
``bytearray`` (appended to, compacted once half of it is consumed), and only the bytes not searched
yet are searched for an event's end. An event ends at a blank line, that is at the first ``\\n\\n``,
``\\n\\r`` or ``\\r\\r`` (two line ends in a row, whatever their kind); each of the three is looked
for with ``bytes.find`` (after a ``memchr`` for its first byte, which skips a long line at memory
speed) and its next position cached, so a byte is searched a bounded number of times. :attr:`SSEParser.pending_bytes` tells the caller how many fed bytes belong to the unfinished
event (the proxy holds exactly those back), :attr:`SSEParser.scanned` how many bytes the searches
have examined so far (a few times the bytes fed at most), and ``max_event`` bounds the unfinished
event: beyond it :meth:`SSEParser.feed` raises :class:`EventTooLarge` rather than grow (or drop it
silently). The harness reads whole response bodies with it (:func:`parse_events`).

Rules: lines end with CRLF, LF or CR (also split across reads); a blank line ends an event; lines
starting with ``:`` are comments; ``data:`` lines join with ``\\n``; ``event:`` names the event
(``message`` when absent or empty); ``id:`` (ignored when it holds NUL) and ``retry:`` (digits only)
are kept on the event; one space after the colon is dropped; a leading UTF-8 BOM is skipped. An
event with neither data nor id is not dispatched.
"""

from __future__ import annotations

from typing import NamedTuple

_BOM = b"\xef\xbb\xbf"
_ENDS = (b"\n\n", b"\n\r", b"\r\r")
"""Two line ends in a row (a blank line) always contain one of these (CRLF CRLF holds ``\\n\\r``)."""


class Event(NamedTuple):
    """One complete SSE event: its type (``message`` by default), data, and ``id``/``retry`` if given."""

    event: str
    data: bytes
    id: str | None = None
    retry: int | None = None


class EventTooLarge(ValueError):
    """An unfinished event grew past the parser's ``max_event`` bytes (the parser dropped it).

    ``size``: its bytes so far (the last ``size`` bytes fed); ``events``: the events the same
    :meth:`SSEParser.feed` completed before it.
    """

    def __init__(self, size: int, limit: int, events: list[Event]) -> None:
        super().__init__(f"an SSE event grew past {limit} bytes ({size} bytes and no end yet)")
        self.size = size
        self.limit = limit
        self.events = events


class SSEParser:
    """Feed bytes with :meth:`feed`; get back the events completed by them.

    ``max_event``: the most bytes an unfinished event may hold (None: no bound, for bodies already
    read whole).
    """

    __slots__ = ("_buffer", "_start", "_found", "_searched", "_started", "max_event", "scanned", "fed")

    def __init__(self, max_event: int | None = None) -> None:
        self._buffer = bytearray()  # the unfinished event starts at _start; bytes before it are consumed
        self._start = 0
        self._found = [-1, -1, -1]  # per pattern of _ENDS: its next position (>= 0), or -1: none found
        self._searched = [0, 0, 0]  # per pattern: where its next search starts, when _found is stale
        self._started = False
        self.max_event = max_event
        self.scanned = 0
        """Bytes examined by the searches so far (linear: a few per byte fed)."""
        self.fed = 0
        """Bytes fed so far."""

    @property
    def pending_bytes(self) -> int:
        """How many of the bytes fed last belong to the unfinished event (0: they all ended events)."""
        return len(self._buffer) - self._start

    @property
    def pending(self) -> bool:
        """True when bytes of an unfinished event are buffered (not just line ends)."""
        return bool(self._buffer[self._start :].strip(b"\r\n"))

    def feed(self, data: bytes) -> list[Event]:
        """Events completed by ``data`` (incomplete text is kept for the next call).

        Raises :class:`EventTooLarge` (holding the events completed before it) when the unfinished
        event exceeds ``max_event``; its bytes are dropped then, and the next byte fed starts a new
        event.
        """
        buffer = self._buffer
        self.fed += len(data)
        if self._started and self._start == len(buffer):  # nothing unfinished: the usual case
            ends = _single_end(data)
            if ends is not None:
                return self._feed_clean(data, ends)
        buffer += data
        if not self._started:
            if len(buffer) < len(_BOM) and _BOM.startswith(buffer):
                return []  # perhaps the start of a byte order mark: wait for more
            self._started = True
            if buffer.startswith(_BOM):
                self._start = len(_BOM)
        events: list[Event] = []
        while (at := self._boundary()) >= 0:
            end = at + 2
            if (
                buffer[at + 1] == 13 and end < len(buffer) and buffer[end] == 10
            ):  # the second line end is CRLF
                end += 1
            event = parse_event(bytes(buffer[self._start : at]))
            if event is not None:
                events.append(event)
            self._start = end
        self._compact()
        if self.max_event is not None and self.pending_bytes > self.max_event:
            size = self.pending_bytes
            self._drop()
            raise EventTooLarge(size, self.max_event, events)
        return events

    def _feed_clean(self, data: bytes, end_of_event: bytes) -> list[Event]:
        """:meth:`feed` when no event is unfinished and ``data`` ends its events one way only."""
        events: list[Event] = []
        start = 0
        find = data.find
        while (at := find(end_of_event, start)) >= 0:
            event = parse_event(data[start:at])
            if event is not None:
                events.append(event)
            start = at + len(end_of_event)
        self.scanned += len(data)
        buffer = self._buffer
        buffer.clear()
        self._start = 0
        if start < len(data):
            buffer += data[start:]
            self._found = [-1, -1, -1]
            self._searched = [max(0, len(buffer) - 1)] * 3  # the searched tail held no end
            if self.max_event is not None and len(buffer) > self.max_event:
                size = len(buffer)
                self._drop()
                raise EventTooLarge(size, self.max_event, events)
        return events

    def _boundary(self) -> int:
        """Where the first blank line at or after ``_start`` begins (its two-byte pattern), or -1."""
        buffer, start, found, searched = self._buffer, self._start, self._found, self._searched
        best = -1
        for i, pattern in enumerate(_ENDS):
            at = found[i]
            if at < start:  # stale (consumed) or none found yet: search the bytes not searched
                begin = max(start, searched[i])
                first = buffer.find(pattern[:1], begin)  # memchr: skips a long line (or no line) fast
                at = buffer.find(pattern, first) if first >= 0 else -1
                self.scanned += (at + 2 if at >= 0 else len(buffer)) - begin
                found[i] = at
                searched[i] = (
                    at + 1 if at >= 0 else max(begin, len(buffer) - 1 if first >= 0 else len(buffer))
                )
            if at >= 0 and (best < 0 or at < best):
                best = at
        return best

    def _compact(self) -> None:
        """Drop consumed bytes once they are half the buffer (amortised: each byte moves once)."""
        start = self._start
        if not start or start < len(self._buffer) - start:
            return
        del self._buffer[:start]
        self._start = 0
        self._found = [at - start if at >= start else -1 for at in self._found]
        self._searched = [max(0, at - start) for at in self._searched]

    def discard(self) -> None:
        """Drop the unfinished event unread (a stream that ended or was stopped before its end)."""
        self._drop()

    def _drop(self) -> None:
        self._buffer.clear()
        self._start = 0
        self._found = [-1, -1, -1]
        self._searched = [0, 0, 0]

    def finish(self) -> list[Event]:
        """The event left unterminated at the end of the stream (lenient readers of whole bodies)."""
        rest = bytes(self._buffer[self._start :])
        self._drop()
        event = parse_event(rest) if rest else None
        return [event] if event is not None else []


def _single_end(data: bytes) -> bytes | None:
    """The one way ``data``'s events end when its line ends are all alike (LF, CR or CRLF), else None.

    Checked with C-speed scans; a CR last (perhaps half a CRLF) or mixed line ends take the general path.
    """
    if b"\r" not in data:
        return b"\n\n"
    if b"\n" not in data:
        return None if data[-1:] == b"\r" else b"\r\r"
    crlf = data.count(b"\r\n")
    if crlf == data.count(b"\r") == data.count(b"\n") and data[:1] != b"\n":
        return b"\r\n\r\n"
    return None


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
