"""The harness's lean HTTP/1.1 client against small scripted loopback servers (asyncio, 127.0.0.1).

Each server reads requests (head and Content-Length body) and answers as its test scripts it, counting
connections and requests, so reuse, retries and failures are seen from the server's side too.
"""

from __future__ import annotations

import asyncio
import json
import re
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from finmcp.evaluator.harness.http_pool import HttpPool, HttpTransportError, parse_target
from finmcp.evaluator.harness.mcp_client import McpCallError, McpHttpClient
from tests.proxy.framing_cases import MALFORMED
from tests.support.tls import mint

Reply = Callable[["Request"], Awaitable[bytes | None]]


class Request:
    """One request as the server read it, and the connection it came on."""

    def __init__(self, head: bytes, body: bytes, connection: int, index: int, writer: asyncio.StreamWriter):
        self.head = head
        self.body = body
        self.connection = connection
        self.index = index
        """0 for the first request on its connection."""
        self.writer = writer

    def rpc_id(self) -> Any:
        return json.loads(self.body)["id"]


class Server:
    """A loopback HTTP/1.1 server whose ``reply(request)`` returns raw bytes to send (None: close)."""

    def __init__(self, reply: Reply, context: ssl.SSLContext | None = None) -> None:
        self.reply = reply
        self.context = context
        self.connections = 0
        self.requests: list[Request] = []
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> Server:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.context)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()

    @property
    def url(self) -> str:
        assert self.server is not None
        port = self.server.sockets[0].getsockname()[1]
        scheme = "https" if self.context else "http"
        return f"{scheme}://127.0.0.1:{port}/mcp/run-1?x=1"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        number = self.connections
        self.connections += 1
        index = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                request = Request(head, await reader.readexactly(length), number, index, writer)
                self.requests.append(request)
                index += 1
                answer = await self.reply(request)
                if answer is None:
                    break
                writer.write(answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def json_answer(request: Request, extra_headers: bytes = b"") -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": request.rpc_id(), "result": {"n": len(request.body)}}).encode()
    return b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n%s\r\n%s" % (
        len(body),
        extra_headers,
        body,
    )


async def plain(request: Request) -> bytes:
    return json_answer(request)


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(coro)  # type: ignore[arg-type]


def test_requests_reuse_one_keep_alive_connection_and_arrive_whole() -> None:
    async def main() -> None:
        async with Server(plain) as server:
            client = McpHttpClient()
            first = await client.call_tool(server.url, "quote", {"symbol": "ÄPFEL"})
            second = await client.request(server.url, "tools/list", {})
            await client.call_tool(server.url, "报价", {})  # a name HTTP cannot carry: base64-wrapped
            await client.aclose()
        assert first == {"n": len(server.requests[0].body)} and second == {"n": len(server.requests[1].body)}
        assert server.connections == 1 and [r.index for r in server.requests] == [0, 1, 2]
        assert "\r\nmcp-name: =?base64?5oql5Lu3?=\r\n" in server.requests[2].head.decode()
        head = server.requests[0].head.decode()
        assert head.startswith("POST /mcp/run-1?x=1 HTTP/1.1\r\n")
        for line in (
            "host: 127.0.0.1:",
            "mcp-method: tools/call",
            "mcp-name: quote",
            "content-type: application/json",
        ):
            assert f"\r\n{line}" in head
        sent = json.loads(server.requests[0].body)
        assert sent["params"]["arguments"] == {"symbol": "ÄPFEL"} and sent["method"] == "tools/call"

    run(main())


def test_chunked_and_event_stream_bodies() -> None:
    async def sse(request: Request) -> bytes:
        message = json.dumps({"jsonrpc": "2.0", "id": request.rpc_id(), "result": {"streamed": True}})
        events = [b": ping\n\n", b"event: message\ndata: " + message.encode() + b"\n\n"]
        chunks = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events)
        return (
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            + chunks
            + b"0\r\n\r\n"
        )

    async def main() -> None:
        async with Server(sse) as server:
            client = McpHttpClient()
            assert await client.request(server.url, "tools/list", {}) == {"streamed": True}
            assert await client.request(server.url, "tools/list", {}) == {"streamed": True}
            await client.aclose()
        assert server.connections == 1

    run(main())


def test_connection_close_is_honoured_and_an_eof_delimited_body_is_read() -> None:
    async def closing(request: Request) -> bytes:
        if request.connection == 0:
            return json_answer(request, b"connection: close\r\n")
        body = json.dumps({"jsonrpc": "2.0", "id": request.rpc_id(), "result": {"eof": True}}).encode()
        return b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n" + body  # then the server closes

    async def until_close(request: Request) -> bytes | None:
        answer = await closing(request)
        request.writer.write(answer)
        await request.writer.drain()
        return None

    async def main() -> None:
        async with Server(until_close) as server:
            client = McpHttpClient()
            assert "n" in await client.request(server.url, "tools/list", {})
            assert await client.request(server.url, "tools/list", {}) == {"eof": True}
            await client.aclose()
        assert server.connections == 2

    run(main())


def test_an_idle_connection_the_server_dropped_is_retried_once_on_a_fresh_one() -> None:
    async def drop_second(request: Request) -> bytes | None:
        if request.connection == 0 and request.index == 1:
            return None  # read the request, close without a byte of answer: a dropped keep-alive
        return json_answer(request)

    async def main() -> None:
        async with Server(drop_second) as server:
            client = McpHttpClient()
            await client.request(server.url, "tools/list", {})
            assert "n" in await client.request(server.url, "tools/list", {})
            await client.aclose()
        assert server.connections == 2 and [(r.connection, r.index) for r in server.requests] == [
            (0, 0),
            (0, 1),
            (1, 0),
        ]

    run(main())


def test_a_fresh_connection_closed_without_an_answer_is_not_retried() -> None:
    async def drop(request: Request) -> None:
        return None

    async def main() -> None:
        async with Server(drop) as server:
            client = McpHttpClient()
            with pytest.raises(McpCallError, match="transport error: .*closed the connection"):
                await client.request(server.url, "tools/list", {})
            await client.aclose()
        assert len(server.requests) == 1

    run(main())


def test_a_server_dying_mid_response_is_an_error_not_a_retry() -> None:
    async def half(request: Request) -> None:
        request.writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"
        )
        await request.writer.drain()
        return None

    async def main() -> None:
        async with Server(plain) as good, Server(half) as server:
            client = McpHttpClient()
            await client.request(good.url, "tools/list", {})
            with pytest.raises(McpCallError, match="closed before the response was complete"):
                await client.request(server.url, "tools/list", {})
            assert "n" in await client.request(good.url, "tools/list", {})  # the other pool is untouched
            await client.aclose()
        assert len(server.requests) == 1 and good.connections == 1

    run(main())


def test_timeout_refused_and_malformed_answers_are_clear_errors() -> None:
    async def silent(request: Request) -> bytes:
        await asyncio.sleep(30)
        return b""

    async def garbage(request: Request) -> bytes:
        return b"NOT-HTTP garbage\r\n\r\n"

    async def main() -> None:
        async with Server(silent) as slow, Server(garbage) as bad:
            client = McpHttpClient(timeout=0.3)
            sent = asyncio.Event()
            with pytest.raises(McpCallError, match=r"no response within 0\.3 s"):
                await client.call_tool(slow.url, "quote", {}, sent=sent)
            assert sent.is_set()
            with pytest.raises(McpCallError, match="malformed HTTP response"):
                await client.request(bad.url, "tools/list", {})
            refused = bad.url
            assert bad.server is not None
            bad.server.close()
            await bad.server.wait_closed()
            with pytest.raises(McpCallError, match="cannot connect"):
                await client.request(refused, "tools/list", {})
            await client.aclose()

    run(main())


def test_https_verifies_the_server(tmp_path: Path) -> None:
    certs = mint(tmp_path)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(str(certs.cert), str(certs.key))

    async def main() -> None:
        async with Server(plain, server_context) as server:
            trusting = McpHttpClient(ssl_context=certs.client_context())
            assert "n" in await trusting.request(server.url, "tools/list", {})
            assert "n" in await trusting.request(server.url, "tools/list", {})
            await trusting.aclose()
            default = McpHttpClient()  # the system's trust store does not know the test CA
            with pytest.raises(McpCallError, match="TLS handshake failed: .*CERTIFICATE_VERIFY_FAILED"):
                await default.request(server.url, "tools/list", {})
            await default.aclose()
        assert server.connections == 1  # the refused handshake never reached the server's handler

    run(main())


def test_bad_urls_and_headers_are_refused_before_any_connection() -> None:
    for url, why in [
        ("ftp://127.0.0.1/x", "scheme"),
        ("http:///x", "no host"),
        ("http://127.0.0.1:99999/", "(?i)port"),
    ]:
        with pytest.raises(HttpTransportError, match=why):
            parse_target(url)
    assert parse_target("https://127.0.0.1/a?b=1").request_line_and_host == (
        b"POST /a?b=1 HTTP/1.1\r\nhost: 127.0.0.1\r\n"
    )

    async def main() -> None:
        pool = HttpPool()
        with pytest.raises(HttpTransportError, match="not ASCII"):
            await pool.post("http://127.0.0.1:9/", b"{}", {"mcp-name": "报价"})
        await pool.aclose()

    run(main())


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_response_framing_is_refused_with_its_reason(case: str) -> None:
    rest, words = MALFORMED[case]

    async def malformed(request: Request) -> bytes | None:
        request.writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n" + rest)
        await request.writer.drain()
        return None

    async def main() -> None:
        async with Server(malformed) as server:
            client = McpHttpClient(timeout=5)
            with pytest.raises(McpCallError, match=f"malformed HTTP response: .*{re.escape(words)}"):
                await client.request(server.url, "tools/list", {})
            await client.aclose()

    run(main())


def test_a_response_arriving_byte_by_byte_is_read_whole() -> None:
    async def trickle(request: Request) -> bytes | None:
        message = json.dumps({"jsonrpc": "2.0", "id": request.rpc_id(), "result": {"slow": True}}).encode()
        answer = (
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
            b"transfer-encoding: chunked\r\n\r\n%x;ext=1\r\n%s\r\n0\r\nx-trailer: t\r\n\r\n"
            % (len(message), message)
        )
        for i in range(len(answer)):
            request.writer.write(answer[i : i + 1])
            await request.writer.drain()
        return b""

    async def main() -> None:
        async with Server(trickle) as server:
            client = McpHttpClient(timeout=5)
            assert await client.request(server.url, "tools/list", {}) == {"slow": True}
            assert await client.request(server.url, "tools/list", {}) == {"slow": True}
            await client.aclose()
        assert server.connections == 1  # the chunked answer left the connection reusable

    run(main())
