"""The incremental SSE parser: WHATWG field rules, every line ending, any split of the bytes."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from finmcp.recordings.plumbing.sse import EventTooLarge, SSEParser, encode_event, parse_events


def reference(stream: bytes) -> list[tuple[str, bytes, str | None, int | None]]:
    """A line-by-line reading of a whole stream, written from the spec (not from the parser)."""
    if stream.startswith(b"\xef\xbb\xbf"):
        stream = stream[3:]
    lines = re.split(rb"\r\n|\r|\n", stream)
    lines.pop()  # the text after the last line end is an unfinished line
    events: list[tuple[str, bytes, str | None, int | None]] = []
    data: list[bytes] = []
    event_id: str | None = None
    retry: int | None = None
    name = ""
    for line in lines:
        if line == b"":
            if data or event_id is not None:
                events.append((name or "message", b"\n".join(data), event_id, retry))
            name, data, event_id, retry = "", [], None, None
            continue
        if line.startswith(b":"):
            continue
        field, colon, value = line.partition(b":")
        if colon and value.startswith(b" "):
            value = value[1:]
        if field == b"data":
            data.append(value)
        elif field == b"event":
            name = value.decode("utf-8", "replace")
        elif field == b"id" and b"\0" not in value:
            event_id = value.decode("utf-8", "replace")
        elif field == b"retry" and value.isdigit():
            retry = int(value)
    return events


def fed(stream: bytes, cuts: list[int]) -> list[tuple[str, bytes, str | None, int | None]]:
    parser = SSEParser()
    events, last = [], 0
    for cut in sorted({c % (len(stream) + 1) for c in cuts}) + [len(stream)]:
        events += parser.feed(stream[last:cut])
        last = cut
    return [(e.event, e.data, e.id, e.retry) for e in events]


LINE = st.sampled_from(
    [b"data: {\"a\":1}", b"data:x", b"data", b"event: message", b"event: endpoint", b"event:", b"id: 7",
     b"id:", b"id: a\0b", b"retry: 3000", b"retry: soon", b": comment", b"", b"unknown: field"]
)  # fmt: skip
END = st.sampled_from([b"\r\n", b"\n", b"\r"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(LINE, END), max_size=20), st.lists(st.integers(0, 400), max_size=6), st.booleans())
def test_any_split_of_any_stream_reads_like_the_whole_stream(lines, cuts, bom):
    stream = (b"\xef\xbb\xbf" if bom else b"") + b"".join(line + end for line, end in lines)
    assert fed(stream, cuts) == reference(stream)


def test_crlf_split_between_reads_is_one_line_end():
    parser = SSEParser()
    assert parser.feed(b"data: a\r") == []
    assert parser.feed(b"\ndata: b\r") == []
    events = parser.feed(b"\n\r\n")
    assert [(e.event, e.data) for e in events] == [("message", b"a\nb")]
    assert not parser.pending


def test_fields_of_one_event():
    (event,) = SSEParser().feed(b"event: endpoint\nid: 42\nretry: 1500\ndata: /messages/?s=1\n\n")
    assert (event.event, event.data, event.id, event.retry) == ("endpoint", b"/messages/?s=1", "42", 1500)


def test_pending_tells_an_unfinished_event():
    parser = SSEParser()
    parser.feed(b"event: message\r\ndata: {")
    assert parser.pending
    parser.feed(b"}\r\n\r\n")
    assert not parser.pending


def test_parse_events_keeps_a_last_event_without_its_blank_line():
    body = b'event: message\ndata: {"id":1}\n\nevent: message\ndata: {"id":2}'
    assert [e.data for e in parse_events(body)] == [b'{"id":1}', b'{"id":2}']


def test_encode_event_reads_back():
    raw = encode_event(b'{"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"x"}}')
    (event,) = SSEParser().feed(raw)
    assert event.event == "message" and event.data.startswith(b'{"jsonrpc"')


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(LINE, END), max_size=20), st.lists(st.integers(0, 400), max_size=6))
def test_pending_bytes_are_exactly_the_unfinished_event(lines, cuts):
    """What a proxy forwards (all but the last ``pending_bytes``) reads as the events returned so far."""
    stream = b"".join(line + end for line, end in lines)
    parser = SSEParser()
    events, last = [], 0
    for cut in sorted({c % (len(stream) + 1) for c in cuts}) + [len(stream)]:
        events += parser.feed(stream[last:cut])
        last = cut
        forwarded = stream[: last - parser.pending_bytes]
        assert [(e.event, e.data, e.id) for e in events] == [r[:3] for r in reference(forwarded)]


def test_an_unterminated_event_is_searched_in_linear_time():
    """16 MiB of one unfinished event in 1 KiB reads: each byte is searched a bounded number of times.

    The parser rebuilt and searched its whole buffer on every read (quadratic: ~10^11 bytes here,
    which made every other client of a proxy wait); now only the new bytes are searched.
    """
    parser = SSEParser()
    piece = b"x" * 1024
    assert parser.feed(b'data: {"jsonrpc":"2.0","id":1,"result":"') == []
    for _ in range(16 * 1024):
        assert parser.feed(piece) == []
    assert parser.pending_bytes == parser.fed
    assert parser.scanned <= 3 * parser.fed + 3 * 16 * 1024
    assert parser.feed(b'"}\n\n')[0].data.endswith(b'"}')
    assert parser.pending_bytes == 0


def test_many_events_in_one_read_are_searched_once():
    """CRLF events (no ``\\n\\n`` anywhere) in one big read: the absent pattern is not searched per event."""
    parser = SSEParser()
    stream = b'event: message\r\ndata: {"n":1}\r\n\r\n' * 20_000
    assert len(parser.feed(stream)) == 20_000
    assert parser.scanned <= 3 * len(stream) + 6 * 20_000


def test_an_event_past_max_event_raises_and_is_dropped():
    parser = SSEParser(max_event=100)
    assert parser.feed(b"data: " + b"x" * 90) == []
    with pytest.raises(EventTooLarge) as caught:
        parser.feed(b"x" * 20)
    assert (caught.value.size, caught.value.limit) == (116, 100)
    assert parser.pending_bytes == 0  # dropped: the next bytes start a new event
    assert [e.data for e in parser.feed(b"data: ok\n\n")] == [b"ok"]


def test_events_ending_in_a_read_do_not_count_against_max_event():
    parser = SSEParser(max_event=64)
    events = parser.feed(b"data: " + b"y" * 50 + b"\n\n" + b"data: " + b"z" * 50 + b"\n\ndata: a")
    assert [len(e.data) for e in events] == [50, 50]
    assert parser.pending_bytes == len(b"data: a")
