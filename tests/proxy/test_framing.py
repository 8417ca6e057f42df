"""The strict HTTP/1.1 framing (recordings.plumbing.http1), generated: valid messages parse to the same
bytes however they are split, every malformed kind is refused with its reason.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from finmcp.recordings.plumbing import http1
from tests.proxy.framing_cases import MALFORMED, REQUEST_ONLY

TOKEN_CHARS = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
FRAMING_NAMES = {b"content-length", b"transfer-encoding"}

names = (
    st.text(TOKEN_CHARS, min_size=1, max_size=12)
    .map(str.encode)
    .filter(lambda n: n.lower() not in FRAMING_NAMES)
)
vchars = st.binary(min_size=1, max_size=6).map(
    lambda b: bytes(c if c > 0x20 and c != 0x7F else 0x41 for c in b)
)
values = st.lists(vchars, max_size=3).map(b" ".join)
headers = st.lists(st.tuples(names, values), max_size=6)
bodies = st.binary(max_size=300)
extensions = st.sampled_from([b"", b";a", b";name=value", b' ; q="x y"'])


@st.composite
def chunked(draw: st.DrawFn, body: bytes) -> bytes:
    """``body`` as chunks of drawn sizes (hex in either case, maybe extensions), last chunk, trailers."""
    out, at = b"", 0
    while at < len(body):
        size = draw(st.integers(1, max(1, len(body) - at)))
        digits = b"%x" % size if draw(st.booleans()) else b"%X" % size
        out += digits + draw(extensions) + b"\r\n" + body[at : at + size] + b"\r\n"
        at += size
    trailers = b"".join(b"%s: %s\r\n" % pair for pair in draw(st.lists(st.tuples(names, values), max_size=2)))
    return out + b"0" + draw(extensions) + b"\r\n" + trailers + b"\r\n"


@st.composite
def messages(draw: st.DrawFn, request: bool) -> tuple[bytes, list[tuple[bytes, bytes]], bytes, bytes]:
    """``(wire bytes, headers, decoded body, framed body)`` of one valid request or response."""
    fields = draw(headers)
    body = draw(bodies)
    if draw(st.booleans()):
        framing = [(b"Transfer-Encoding", b"chunked")]
        framed = draw(chunked(body))
    else:
        framing = [(b"Content-Length", b"%d" % len(body))] * draw(
            st.integers(1, 2)
        )  # identical repeats are one
        framed = body
    fields = fields + framing
    start = b"POST /t/r/s/0?x=1 HTTP/1.1" if request else b"HTTP/1.1 200 OK"
    spaces = draw(st.sampled_from([b"", b" ", b"\t "]))
    head = start + b"\r\n" + b"".join(b"%s:%s%s%s\r\n" % (n, spaces, v, spaces) for n, v in fields) + b"\r\n"
    return head + framed, fields, body, framed


def read(wire: bytes, cuts: list[int], request: bool) -> tuple[object, bytes, list[bytes], int]:
    """Parse ``wire`` fed in pieces (split at ``cuts``) as the proxy does: head, then body pieces.

    Returns the head, the decoded body, the raw body pieces (what the proxy forwards) and the bytes used.
    """
    buffer = bytearray()
    head: object = None
    frame: http1.Body | None = None
    decoded, raw, used = b"", [], 0
    for piece in _pieces(wire, cuts):
        buffer += piece
        if head is None:
            end = http1.head_end(buffer)
            if end < 0:
                continue
            if request:
                head = http1.parse_request_head(buffer, end)
                frame = http1.request_body(head.headers)
            else:
                head = http1.parse_response_head(buffer, end)
                frame = http1.response_body(head.headers, head.status, b"POST")
            raw.append(bytes(buffer[:end]))
            del buffer[:end]
            used += end
        assert frame is not None
        if frame.kind == "length" and len(buffer) >= frame.length:
            decoded = bytes(buffer[: frame.length])
            raw.append(decoded)
            used += frame.length
            return head, decoded, raw, used
        if frame.kind == "chunked":
            while (chunk := http1.next_chunk(buffer)) is not None:
                raw.append(bytes(buffer[: chunk.end]))
                decoded += bytes(buffer[chunk.start : chunk.stop])
                used += chunk.end
                del buffer[: chunk.end]
                if chunk.last:
                    return head, decoded, raw, used
        if frame.kind == "none":
            return head, b"", raw, used
    raise AssertionError("the message never completed")


def _pieces(wire: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(wire) + 1) for c in cuts} | {0, len(wire)})
    return [wire[a:b] for a, b in zip(points, points[1:], strict=False)]


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.booleans(), st.data())
def test_valid_messages_parse_to_the_same_bytes_however_they_are_split(
    request: bool, data: st.DataObject
) -> None:
    wire, fields, body, _ = data.draw(messages(request))
    cuts = data.draw(st.lists(st.integers(0, len(wire)), max_size=8))
    head, decoded, raw, used = read(wire + b"GET / HTTP/1.1\r\n", cuts, request)  # a pipelined next message
    assert decoded == body
    assert b"".join(raw) == wire and used == len(wire)  # the pieces forwarded are the bytes received
    assert head.headers == fields  # type: ignore[attr-defined]
    if request:
        assert (head.method, head.target, head.minor) == (b"POST", b"/t/r/s/0?x=1", 1)  # type: ignore[attr-defined]
    else:
        assert (head.status, head.reason, head.minor) == (200, b"OK", 1)  # type: ignore[attr-defined]


def _refusal(wire: bytes, request: bool) -> str:
    with pytest.raises(http1.FramingError) as caught:
        read(wire, [], request)
    return caught.value.reason


@pytest.mark.parametrize("case", sorted(MALFORMED))
@pytest.mark.parametrize("request_side", [True, False], ids=["request", "response"])
def test_each_malformed_kind_is_refused_with_its_reason(case: str, request_side: bool) -> None:
    rest, words = MALFORMED[case]
    start = b"POST /mcp HTTP/1.1\r\nHost: x\r\n" if request_side else b"HTTP/1.1 200 OK\r\n"
    assert words in _refusal(start + rest, request_side)


@pytest.mark.parametrize("case", sorted(REQUEST_ONLY))
def test_transfer_codings_not_ending_in_chunked_are_refused_in_requests(case: str) -> None:
    rest, words = REQUEST_ONLY[case]
    assert words in _refusal(b"POST /mcp HTTP/1.1\r\nHost: x\r\n" + rest, True)


def test_a_response_whose_codings_do_not_end_in_chunked_is_read_until_close() -> None:
    assert http1.response_body([(b"Transfer-Encoding", b"gzip")], 200, b"POST") == http1.Body("close")
    assert http1.response_body([(b"Content-Length", b"5")], 204, b"POST") == http1.NO_BODY
    assert (
        http1.response_body([(b"Content-Length", b"-1")], 200, b"HEAD") == http1.NO_BODY
    )  # no body to frame
    with pytest.raises(http1.FramingError, match="only chunked is supported") as caught:
        http1.request_body([(b"Transfer-Encoding", b"gzip, chunked")])  # the proxy re-frames request bodies
    assert caught.value.status == 501


bad_lengths = st.one_of(
    st.integers(-(10**6), -1).map(lambda n: b"%d" % n),
    st.integers(0, 10**6).map(lambda n: b"+%d" % n),
    st.integers(1, 10**6).map(lambda n: (b"%d" % n)[:1] + b"_" + (b"%d" % n)[1:] + b"0"),
    st.integers(0, 10**6).map(lambda n: b"0x%x" % n),
    st.text("0123456789 ,.e", min_size=1, max_size=8)
    .map(str.encode)
    .filter(lambda v: not v.strip().isdigit()),
)


@settings(max_examples=200)
@given(bad_lengths, st.booleans())
def test_generated_bad_content_lengths_are_refused(value: bytes, request_side: bool) -> None:
    fields = [(b"Content-Length", value.strip())]
    with pytest.raises(http1.FramingError, match="Content-Length"):
        if request_side:
            http1.request_body(fields)
        else:
            http1.response_body(fields, 200, b"POST")


@settings(max_examples=200)
@given(st.integers(0, 10**9), st.integers(0, 10**9))
def test_duplicate_content_lengths_pass_only_when_identical(a: int, b: int) -> None:
    fields = [(b"Content-Length", b"%d" % a), (b"content-length", b"%d" % b)]
    if a == b:
        assert http1.request_body(fields).length == a
    else:
        with pytest.raises(http1.FramingError, match="conflicting Content-Length"):
            http1.request_body(fields)


bad_sizes = st.one_of(
    st.integers(0, 4096).map(lambda n: b"0x%x" % n),
    st.integers(1, 4096).map(lambda n: b"-%x" % n),
    st.integers(0, 4096).map(lambda n: b"+%x" % n),
    st.integers(0, 4096).map(lambda n: b" %x" % n),
    st.text("ghijklmnopqrstuvwxyz_", min_size=1, max_size=4).map(str.encode),
)


@settings(max_examples=200)
@given(bad_sizes)
def test_generated_bad_chunk_sizes_are_refused(size: bytes) -> None:
    with pytest.raises(http1.FramingError, match="bad chunk size"):
        http1.next_chunk(size + b"\r\n" + b"x" * 64 + b"\r\n0\r\n\r\n")


@settings(max_examples=200)
@given(names, values, st.sampled_from([b" ", b"\t"]))
def test_obs_fold_is_refused(name: bytes, value: bytes, fold: bytes) -> None:
    head = b"POST / HTTP/1.1\r\n%s: %s\r\n%scontinued\r\n\r\n" % (name, value, fold)
    with pytest.raises(http1.FramingError, match="obsolete line folding"):
        http1.parse_request_head(head, len(head))


@pytest.mark.parametrize(
    "line",
    [
        b"POST /mcp",
        b"POST  /mcp HTTP/1.1",
        b"POST /mcp HTTP/2.0",
        b"PO ST /mcp HTTP/1.1",
        b"POST /m\x00 HTTP/1.1",
    ],
)
def test_bad_request_lines_are_refused(line: bytes) -> None:
    head = line + b"\r\nHost: x\r\n\r\n"
    with pytest.raises(http1.FramingError, match="bad request line"):
        http1.parse_request_head(head, len(head))


@pytest.mark.parametrize("line", [b"HTTP/1.1 2000 OK", b"HTTP/1.1 OK", b"HTTP/3 200 OK", b"garbage"])
def test_bad_status_lines_are_refused(line: bytes) -> None:
    head = line + b"\r\n\r\n"
    with pytest.raises(http1.FramingError, match="bad status line"):
        http1.parse_response_head(head, len(head))


def test_a_chunk_over_the_limit_is_refused_at_its_size_line() -> None:
    with pytest.raises(http1.FramingError, match="over the limit") as caught:
        http1.next_chunk(b"ffffffff\r\nabc", max_size=1000)
    assert caught.value.status == 413
    assert http1.next_chunk(b"a\r\n0123456789\r\n", max_size=10) == http1.Chunk(3, 13, 15, False)


def test_heads_too_large_are_refused_before_they_end() -> None:
    with pytest.raises(http1.FramingError, match="head too large") as caught:
        http1.head_end(b"GET / HTTP/1.1\r\nX: " + b"a" * http1.MAX_HEAD)
    assert caught.value.status == 431
    assert http1.head_end(b"GET / HTTP/1.1\r\nX: a\r\n") == -1


def test_keep_alive_follows_the_connection_tokens_and_the_version() -> None:
    assert http1.keep_alive(1, [])
    assert not http1.keep_alive(0, [])
    assert http1.keep_alive(0, [(b"Connection", b"Keep-Alive")])
    assert not http1.keep_alive(1, [(b"connection", b"upgrade, close")])
