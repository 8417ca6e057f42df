"""Malformed HTTP/1.1 framings (RFC 9112 §6.3 and the header/chunk syntax), shared by the framing tests.

Each case is a name and the bytes that follow the start line (header lines, blank line, body), so one
table serves requests (after ``POST /mcp HTTP/1.1``) and responses (after ``HTTP/1.1 200 OK``), and
the words its refusal must contain.
"""

from __future__ import annotations

BODY = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}'
N = len(BODY)
CHUNKED = b"Transfer-Encoding: chunked\r\n"

MALFORMED: dict[str, tuple[bytes, str]] = {
    "content-length -1": (b"Content-Length: -1\r\n\r\n" + BODY, "bad Content-Length"),
    "content-length 1_0": (b"Content-Length: 1_0\r\n\r\n" + BODY, "bad Content-Length"),
    "content-length +5": (b"Content-Length: +5\r\n\r\n" + BODY, "bad Content-Length"),
    "content-length 0x10": (b"Content-Length: 0x10\r\n\r\n" + BODY, "bad Content-Length"),
    "content-length list": (b"Content-Length: %d, %d\r\n\r\n" % (N, N) + BODY, "bad Content-Length"),
    "content-length empty": (b"Content-Length:\r\n\r\n" + BODY, "bad Content-Length"),
    "conflicting content-lengths": (
        b"Content-Length: %d\r\nContent-Length: %d\r\n\r\n" % (N, N - 1) + BODY,
        "conflicting Content-Length",
    ),
    "content-length and transfer-encoding": (
        b"Content-Length: %d\r\n" % (N + 10) + CHUNKED + b"\r\n%x\r\n%s\r\n0\r\n\r\n" % (N, BODY),
        "both Content-Length and Transfer-Encoding",
    ),
    "chunk size 0x10": (CHUNKED + b"\r\n0x%x\r\n%s\r\n0\r\n\r\n" % (N, BODY), "bad chunk size"),
    "chunk size -1": (CHUNKED + b"\r\n-1\r\n%s\r\n0\r\n\r\n" % BODY, "bad chunk size"),
    "chunk size empty": (CHUNKED + b"\r\n\r\n%s\r\n0\r\n\r\n" % BODY, "bad chunk size"),
    "chunk data without crlf": (CHUNKED + b"\r\n%x\r\n%sXX0\r\n\r\n" % (N, BODY), "not followed by CRLF"),
    "bad trailer": (CHUNKED + b"\r\n%x\r\n%s\r\n0\r\nno colon\r\n\r\n" % (N, BODY), "bad trailer line"),
    "obs-fold": (b"Content-Length: %d\r\nX-A: a\r\n  folded\r\n\r\n" % N + BODY, "obsolete line folding"),
    "space before colon": (b"Content-Length : %d\r\n\r\n" % N + BODY, "bad header line"),
    "bare cr in a value": (b"Content-Length: %d\r\nX-A: a\rb\r\n\r\n" % N + BODY, "bad header line"),
}
"""Refused in requests and responses alike."""

REQUEST_ONLY: dict[str, tuple[bytes, str]] = {
    "transfer-encoding gzip": (b"Transfer-Encoding: gzip\r\n\r\n" + BODY, "does not end in chunked"),
    "transfer-encoding chunked twice": (
        b"Transfer-Encoding: chunked, chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (N, BODY),
        "does not end in chunked",
    ),
}
"""Refused in requests (a response whose codings do not end in chunked is read until close)."""
