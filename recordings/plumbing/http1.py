"""Strict HTTP/1.1 framing (RFC 9112), sans-IO: heads, how a body is delimited, chunks.

Pure functions over bytes (no sockets, no asyncio), shared by the proxy's listener and upstream
client and the harness's HTTP client. They only *locate and validate*: callers forward the original
bytes, so forwarding stays byte-exact. Anything RFC 9112 says to reject raises :class:`FramingError`
with a reason a person can read and the status a server answers it with.

What is refused (h11's strictness):

- a start line that is not ``METHOD SP target SP HTTP/1.x`` (request) or ``HTTP/1.x SP 3DIGIT
  [SP reason]`` (response);
- a header line that is not ``token ":" OWS value OWS`` (whitespace before the colon, control
  characters, a bare CR or LF in a value), and obs-fold (a line starting with SP or HTAB);
- a ``Content-Length`` that is not ``1*DIGIT`` (``-1``, ``+5``, ``1_0``, ``0x10``, empty, a list),
  or repeated with different values;
- ``Content-Length`` together with ``Transfer-Encoding``;
- in a request, a ``Transfer-Encoding`` whose last coding is not ``chunked`` (or that repeats
  ``chunked``);
- a chunk size that is not ``1*HEXDIG`` (``0x10``, ``-1``, `` 10``), a chunk not followed by CRLF, a
  malformed trailer line.

Chunk extensions are allowed (and ignored); identical duplicate ``Content-Length`` lines are one.
A response whose ``Transfer-Encoding`` does not end in ``chunked`` is read until the connection
closes (RFC 9112 §6.3 rule 4).
"""

from __future__ import annotations

import re
from typing import NamedTuple

MAX_HEAD = 64 * 1024
"""Largest request or response head (and chunk trailer section) accepted."""
MAX_CHUNK_LINE = 4096
"""Largest chunk-size line (size and extensions) accepted."""

_TOKEN = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_VCHAR = rb"[\x21-\x7e\x80-\xff]"
_FIELD_TEXT = rb"(" + _TOKEN + rb"):[ \t]*(" + _VCHAR + rb"*(?:[ \t]+" + _VCHAR + rb"+)*)[ \t]*"
_FIELD = re.compile(_FIELD_TEXT)
_FIELD_LINES = re.compile(rb"(?:" + _TOKEN + rb":[\t\x20-\x7e\x80-\xff]*\r\n)*")
_REQUEST_LINE = re.compile(rb"(" + _TOKEN + rb") (" + _VCHAR + rb"+) HTTP/1\.([01])")
_STATUS_LINE = re.compile(rb"HTTP/1\.([01]) ([0-9]{3})(?: ([\t\x20-\x7e\x80-\xff]*))?")
_DIGITS = re.compile(rb"[0-9]{1,18}")
_CHUNK_LINE = re.compile(rb"([0-9A-Fa-f]{1,16})[ \t]*(?:;[\t\x20-\x7e\x80-\xff]*)?")

Headers = list[tuple[bytes, bytes]]
"""Header fields in order: ``(name as sent, value without surrounding whitespace)``."""


class FramingError(ValueError):
    """A message RFC 9112 says to reject; ``reason`` says why, ``status`` is the answer a server gives."""

    def __init__(self, reason: str, status: int = 400) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status


class RequestHead(NamedTuple):
    """A parsed request head; ``size`` counts its bytes up to and including the blank line."""

    method: bytes
    target: bytes
    minor: int  # HTTP/1.<minor>
    headers: Headers
    size: int


class ResponseHead(NamedTuple):
    """A parsed response head; ``size`` counts its bytes up to and including the blank line."""

    minor: int
    status: int
    reason: bytes
    headers: Headers
    size: int


class Body(NamedTuple):
    """How a body is delimited: ``kind`` is ``none``, ``length``, ``chunked`` or ``close``."""

    kind: str
    length: int = 0


class Chunk(NamedTuple):
    """One chunk located in a buffer: its data is ``buffer[start:stop]``, the whole chunk ends at ``end``.

    ``last``: the zero-size chunk; ``end`` is then past its trailer section.
    """

    start: int
    stop: int
    end: int
    last: bool


NO_BODY = Body("none")


def head_end(buffer: bytes | bytearray, limit: int = MAX_HEAD) -> int:
    """Where the head at the start of ``buffer`` ends (past its blank line); -1 while incomplete.

    A head longer than ``limit`` raises :class:`FramingError` (431) whether or not it is complete.
    """
    end = buffer.find(b"\r\n\r\n", 0, limit + 4)
    if end < 0:
        if len(buffer) > limit:
            raise FramingError("head too large", 431)
        return -1
    return end + 4


def parse_request_head(buffer: bytes | bytearray, end: int) -> RequestHead:
    """The request head in ``buffer[:end]`` (``end`` from :func:`head_end`)."""
    match, headers = _split_head(buffer, end, _REQUEST_LINE, "request")
    return RequestHead(match[1], match[2], int(match[3]), headers, end)


def parse_response_head(buffer: bytes | bytearray, end: int) -> ResponseHead:
    """The response head in ``buffer[:end]`` (``end`` from :func:`head_end`)."""
    match, headers = _split_head(buffer, end, _STATUS_LINE, "status")
    return ResponseHead(int(match[1]), int(match[2]), match[3] or b"", headers, end)


def _split_head(
    buffer: bytes | bytearray, end: int, start_line: re.Pattern[bytes], what: str
) -> tuple[re.Match[bytes], Headers]:
    """The start line's match and the checked header fields of ``buffer[:end]``."""
    head = bytes(buffer[:end])
    eol = head.find(b"\r\n")
    match = start_line.fullmatch(head, 0, eol)
    if match is None:
        raise FramingError(f"bad {what} line {_show(head[:eol])}")
    return match, _fields(head, eol + 2)


def _fields(head: bytes, start: int) -> Headers:
    """The header lines of ``head[start:]`` (each ending in CRLF, then the blank line), checked.

    One regular expression checks them all (in C); a line-by-line pass runs only to name what is
    wrong.
    """
    stop = len(head) - 2  # the blank line's CRLF
    if _FIELD_LINES.fullmatch(head, start, stop) is not None:
        fields: Headers = []
        if stop > start:
            for line in head[start : stop - 2].split(b"\r\n"):
                name, _, value = line.partition(b":")  # a token holds no colon
                fields.append((name, value.strip(b" \t")))
        return fields
    for line in head[start:stop].split(b"\r\n"):
        if _FIELD.fullmatch(line) is None:
            if line[:1] in (b" ", b"\t"):
                raise FramingError(f"obsolete line folding in header line {_show(line)}")
            raise FramingError(f"bad header line {_show(line)}")
    raise FramingError("bad header section")  # pragma: no cover - some line above fails


def request_body(headers: Headers) -> Body:
    """How a request's body is delimited (RFC 9112 §6.3 rules 3, 5 and 6); no framing headers: none."""
    length, codings = _framing_fields(headers)
    if codings is not None:
        if length is not None:
            raise FramingError("both Content-Length and Transfer-Encoding")
        if codings[-1] != b"chunked" or codings.count(b"chunked") > 1:
            raise FramingError(f"Transfer-Encoding {_show(b', '.join(codings))} does not end in chunked")
        if len(codings) > 1:
            raise FramingError(
                f"Transfer-Encoding {_show(b', '.join(codings))}: only chunked is supported", 501
            )
        return Body("chunked")
    if length is None or length == 0:
        return NO_BODY
    return Body("length", length)


def response_body(headers: Headers, status: int, request_method: bytes) -> Body:
    """How a response's body is delimited (RFC 9112 §6.3 rules 1-7)."""
    if request_method == b"HEAD" or status < 200 or status in (204, 304):
        return NO_BODY
    length, codings = _framing_fields(headers)
    if codings is not None:
        if length is not None:
            raise FramingError("both Content-Length and Transfer-Encoding")
        if codings[-1] == b"chunked":
            if codings.count(b"chunked") > 1:
                raise FramingError(f"Transfer-Encoding {_show(b', '.join(codings))} repeats chunked")
            return Body("chunked")
        return Body("close")
    if length is None:
        return Body("close")
    return Body("length", length) if length else NO_BODY


def _framing_fields(headers: Headers) -> tuple[int | None, list[bytes] | None]:
    """The checked Content-Length (None if absent) and Transfer-Encoding codings (None if absent)."""
    length: bytes | None = None
    codings: list[bytes] | None = None
    for name, value in headers:
        if len(name) == 14 and name.lower() == b"content-length":
            if _DIGITS.fullmatch(value) is None:
                raise FramingError(f"bad Content-Length {_show(value)}")
            if length is not None and int(value) != int(length):
                raise FramingError(f"conflicting Content-Length {_show(length)} and {_show(value)}")
            length = value
        elif len(name) == 17 and name.lower() == b"transfer-encoding":
            found = [c.strip().lower() for c in value.split(b",")]
            if not all(found):
                raise FramingError(f"bad Transfer-Encoding {_show(value)}")
            codings = found if codings is None else codings + found
    return (None if length is None else int(length)), codings


def keep_alive(minor: int, headers: Headers) -> bool:
    """Whether the connection persists after this message (``Connection`` tokens, else the version)."""
    persist = minor >= 1
    for name, value in headers:
        if len(name) == 10 and name.lower() == b"connection":
            tokens = {t.strip() for t in value.lower().split(b",")}
            if b"close" in tokens:
                return False
            if b"keep-alive" in tokens:
                persist = True
    return persist


def chunk_head(buffer: bytes | bytearray, pos: int = 0) -> tuple[int, int] | None:
    """The size of the chunk starting at ``buffer[pos]`` and where its data starts; None until its
    size line has arrived. Raises :class:`FramingError` for a bad or overlong size line."""
    eol = buffer.find(b"\r\n", pos, pos + MAX_CHUNK_LINE + 2)
    if eol < 0:
        if len(buffer) - pos > MAX_CHUNK_LINE:
            raise FramingError(f"chunk size line too long {_show(buffer[pos : pos + 40])}")
        return None
    match = _CHUNK_LINE.fullmatch(buffer, pos, eol)
    if match is None:
        raise FramingError(f"bad chunk size line {_show(buffer[pos:eol])}")
    return int(match[1], 16), eol + 2


def next_chunk(
    buffer: bytes | bytearray, pos: int = 0, max_size: int | None = None, trailer_limit: int = MAX_HEAD
) -> Chunk | None:
    """The chunk starting at ``buffer[pos]``, or None until all of it has arrived.

    Validates the size line (``1*HEXDIG``, optional extensions), the CRLF after the data and, for
    the last chunk, each trailer line; raises :class:`FramingError` otherwise. A chunk larger than
    ``max_size`` is refused (413) as soon as its size line arrives, before its data is awaited.
    """
    head = chunk_head(buffer, pos)
    if head is None:
        return None
    size, start = head
    if max_size is not None and size > max_size:
        raise FramingError(f"chunk of {size} bytes over the limit", 413)
    if size:
        stop = start + size
        if len(buffer) < stop + 2:
            return None
        if buffer[stop : stop + 2] != b"\r\n":
            raise FramingError("chunk data not followed by CRLF")
        return Chunk(start, stop, stop + 2, False)
    at = start
    while True:  # the trailer section: field lines, then a blank line
        eol = buffer.find(b"\r\n", at)
        if eol < 0:
            if len(buffer) - start > trailer_limit:
                raise FramingError("chunk trailers too large")
            return None
        if eol == at:
            return Chunk(start, start, eol + 2, True)
        line = bytes(buffer[at:eol])
        if _FIELD.fullmatch(line) is None:
            raise FramingError(f"bad trailer line {_show(line)}")
        at = eol + 2


def _show(data: bytes | bytearray) -> str:
    """Bytes for a message: at most 60, as a Python literal."""
    return repr(bytes(data[:60]))
