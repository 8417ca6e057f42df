"""Unit tests of the proxy's parts: tags, group rules, SSE reading, redaction, the upstream client, the writer."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import pytest

from finmcp.proxy.grouping import GroupAssigner
from finmcp.proxy.jsonrpc import parse_body, safe_to_repeat
from finmcp.proxy.security import Policy
from finmcp.proxy.tags import TagError, Tags, header_tags, split_path
from finmcp.proxy.upstream_conn import ConnectionPool
from finmcp.proxy.upstream_http import Target, UpstreamError, build_request, parse_head
from finmcp.proxy.writer import TraceWriter
from finmcp.recordings import SqliteTraceStore
from finmcp.recordings.plumbing.sse import SSEParser
from tests.support.rpc import MODERN, raw_request

MS = 1_000_000


def test_path_tags_each_part_optional():
    assert split_path("/r/run1/s/abc/t/0/mcp", Tags()) == (Tags("run1", "abc", 0), "/mcp")
    assert split_path("/s/x%20y/mcp", Tags(run="d")) == (Tags("d", "x y", None), "/mcp")
    assert split_path("/mcp", Tags()) == (Tags(), "/mcp")
    assert split_path("/r/a/k/2/t/5/finmcp65/mcp", Tags()) == (Tags("a", None, 5, 2), "/finmcp65/mcp")
    with pytest.raises(TagError, match="turn tag 'x' is not an integer"):
        split_path("/t/x/mcp", Tags())
    with pytest.raises(TagError, match="run tag given twice"):
        split_path("/r/a/r/b/mcp", Tags())
    tags = header_tags(Tags("a", "b", 1), [(b"x-finmcp-turn", b"7"), (b"x-finmcp-sample", b"z")])
    assert tags == Tags("a", "z", 7)


def test_overlap_gap_and_explicit_rules():
    g = GroupAssigner(gap_ms=30)
    scope = ("r", "s", 0, 0)
    a = g.place(scope, "c1", 0)
    b = g.place(scope, "c1", 1 * MS)  # a still pending: same group by overlap
    assert (a.group, a.source, b.group, b.source) == (0, "gap", 0, "overlap")
    g.finished(a, 10 * MS)
    g.finished(b, 12 * MS)
    c = g.place(scope, "c1", 20 * MS)  # 8 ms after the last response: within the gap
    assert (c.group, c.source) == (0, "gap")
    g.finished(c, 25 * MS)
    d = g.place(scope, "c1", 100 * MS)  # think time: new group
    assert (d.group, d.source) == (1, "gap")
    other = g.place(scope, "c2", 101 * MS)  # another client key in the same turn: its own group
    assert other.group == 2
    e = g.place(scope, "c1", 102 * MS, explicit="x")
    f = g.place(scope, "c1", 500 * MS, explicit="x")
    assert (e.group, e.source, f.group) == (3, "explicit", 3)
    assert g.place(("r", "s", 0, 1), "c1", 600 * MS).group == 0  # a new turn counts from 0


def test_sequence_evidence_comes_before_the_gap():
    g = GroupAssigner(gap_ms=10_000)  # a gap so wide that only evidence can split
    scope = ("r", "s", 0, 0)
    a = g.place(scope, "c1", 0)
    b = g.place(scope, "c1", 1 * MS)  # a still pending: overlap wins over everything
    g.finished(a, 5 * MS)
    g.finished(b, 6 * MS)
    g.delivered(a, 7 * MS)
    g.delivered(b, 8 * MS)
    pipelined = g.place(scope, "c1", 9 * MS, arrived_ns=7 * MS)  # its first byte came before b's answer left
    assert (a.group, b.group, b.source, pipelined.group, pipelined.source) == (0, 0, "overlap", 0, "gap")
    g.finished(pipelined, 10 * MS)
    g.delivered(pipelined, 11 * MS)
    after = g.place(scope, "c1", 12 * MS)  # sent once the answers were out: a new group, 1 ms later
    assert (after.group, after.source) == (1, "sequence")
    other = g.place(scope, "c2", 12 * MS)  # another client's answers are no evidence about c1
    assert (other.group, other.source) == (2, "gap")
    g.finished(after, 13 * MS)
    g.delivered(after, 14 * MS)
    explicit = g.place(scope, "c1", 15 * MS, explicit="x")  # tags still win
    assert explicit.source == "explicit"
    old = GroupAssigner(gap_ms=10_000, sequence=False)
    first = old.place(scope, "c1", 0)
    old.finished(first, 1 * MS)
    old.delivered(first, 2 * MS)
    assert old.place(scope, "c1", 3 * MS).source == "gap"  # without the rule: joined by the gap


def test_sse_parser_handles_split_events_and_line_endings():
    parser = SSEParser()
    assert parser.feed(b'event: message\r\ndata: {"a"') == []
    events = parser.feed(b":1}\r\n\r\nid: 7\ndata: x\ndata: y\n\n: comment\n\n")
    assert [(e.event, e.data, e.id) for e in events] == [
        ("message", b'{"a":1}', None),
        ("message", b"x\ny", "7"),
    ]


def test_parse_body_kinds():
    kinds = [
        m.kind for m in parse_body(b'[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"n"}]')
    ]
    assert kinds == ["request", "notification"]
    assert parse_body(b"{oops")[0].kind == "invalid"
    assert parse_body(b'{"jsonrpc":"2.0","id":"1","error":{"code":1}}')[0].id_text == '"1"'


def test_query_secrets_are_redacted():
    from finmcp.recordings.redact import redact_url  # request targets are stored through it too

    assert redact_url("/mcp?apiKey=abc&x=1&token=t") == "/mcp?apiKey=[REDACTED]&x=1&token=[REDACTED]"
    assert redact_url("/mcp") == "/mcp"


def test_response_head_parsing():
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    response = parse_head(head, b"POST")
    assert (response.status, response.body_mode, response.keep_alive) == (200, "chunked", True)
    assert parse_head(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n", b"POST").body_mode == "none"
    assert parse_head(b"HTTP/1.1 200 OK\r\n\r\n", b"GET").body_mode == "close"
    with pytest.raises(UpstreamError, match="bad status line"):
        parse_head(b"garbage\r\n\r\n", b"GET")


class _Upstream:
    """A loopback upstream; ``await reply(writer, connection_index, request_index)`` answers, False closes."""

    def __init__(self, reply) -> None:
        self.reply = reply
        self.requests: list[int] = []  # requests seen, per connection
        self.handlers: list[asyncio.Task] = []

    async def start(self) -> Target:
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        return Target.parse(f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/mcp")

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.handlers.append(asyncio.current_task())
        index = len(self.requests)
        self.requests.append(0)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(v) for k, _, v in _headers(head) if k == b"content-length"), 0)
                await reader.readexactly(length)
                self.requests[index] += 1
                if not await self.reply(writer, index, self.requests[index] - 1):
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the client left, or stop() (a cancelled handler makes Python 3.11's start_server log)
        writer.close()

    async def stop(self, pool: ConnectionPool) -> None:
        pool.close()
        self.server.close()
        for task in self.handlers:
            task.cancel()
        await asyncio.gather(*self.handlers, return_exceptions=True)
        await asyncio.sleep(0.01)  # let the closed transports go


def _headers(head: bytes) -> list[tuple[bytes, bytes, bytes]]:
    return [line.lower().partition(b": ") for line in head.split(b"\r\n")[1:] if line]


OK = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"


def test_streamed_response_pauses_reading_until_the_consumer_drains_it():
    def chunks(start: int, stop: int) -> bytes:
        return b"".join(b"%x\r\npiece %d\r\n" % (len(b"piece %d" % i), i) for i in range(start, stop))

    async def main():
        more = asyncio.Event()

        async def reply(writer, conn, request):
            writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n" + chunks(0, 100))
            await more.wait()
            writer.write(chunks(100, 200) + b"0\r\n\r\n")
            return True

        upstream = _Upstream(reply)
        pool = ConnectionPool(await upstream.start())
        async with asyncio.timeout(5):
            stream, response = await pool.send(build_request(b"GET", pool.target, [], b""), b"", b"GET")
            while not stream.conn.paused:  # 100 pieces queued, none consumed
                await asyncio.sleep(0.01)
            more.set()
            await asyncio.sleep(0.1)
            assert not stream.complete  # the rest has been sent, but the connection is not reading
            payloads = [payload async for _raw, payload in stream.body()]
        assert payloads == [b"piece %d" % i for i in range(200)] + [b""]  # b"": the final chunk
        assert stream.complete and not stream.conn.paused
        pool.release(stream.conn, response.keep_alive)
        assert pool.take_idle() is stream.conn
        await upstream.stop(pool)

    asyncio.run(main())


def test_pool_resends_only_a_safe_request_whose_reused_connection_failed_before_any_byte():
    async def reply(writer, conn, request):
        if request == 1 and conn in (0, 2):  # the upstream read the request, then closed without a word
            return False
        if request == 1 and conn == 1:  # cut in the middle of the head
            writer.write(OK[:20])
            return False
        if conn == 3:
            return False
        writer.write(OK)
        return True

    async def main():
        upstream = _Upstream(reply)
        pool = ConnectionPool(await upstream.start())
        requests = upstream.requests
        listing = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
        calling = b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"Buy"}}'

        async def call(body: bytes) -> bytes:
            head = build_request(b"POST", pool.target, [], body)
            stream, response = await pool.send(head, body, b"POST", safe_to_repeat(parse_body(body)))
            data = b"".join([payload async for _raw, payload in stream.body()])
            pool.release(stream.conn, response.keep_alive)
            return data

        async with asyncio.timeout(5):
            assert await call(listing) == b"ok"
            assert await call(listing) == b"ok" and requests == [
                2,
                1,
            ]  # safe: sent again, on a fresh connection
            with pytest.raises(UpstreamError, match="^upstream closed the connection mid-response$"):
                await call(listing)  # reused, but bytes had arrived: not sent again
            assert requests == [2, 2]
            assert await call(listing) == b"ok"
            with pytest.raises(UpstreamError, match="closed the connection before answering; not sent again"):
                await call(calling)  # a tool call the upstream may have run: never sent twice
            assert requests == [2, 2, 2]
            with pytest.raises(UpstreamError, match="^upstream closed the connection$"):
                await call(listing)  # a fresh connection: not sent again
            assert requests == [2, 2, 2, 1]
        assert pool.stats["lost_after_write"] == 2 and pool.stats["resent"] == pool.stats["not_resent"] == 1
        await upstream.stop(pool)

    asyncio.run(main())


def test_only_reading_requests_are_safe_to_repeat():
    def safe(*messages: str) -> bool:
        return safe_to_repeat(parse_body(("[" + ",".join(messages) + "]").encode()))

    def request(method: str, rid: int = 1) -> str:
        return json.dumps({"jsonrpc": "2.0", "id": rid, "method": method})

    assert safe(request("tools/list")) and safe(request("ping"), request("resources/read", 2))
    for method in ("tools/call", "initialize", "resources/subscribe", "logging/setLevel", "x/unknown"):
        assert not safe(request(method)), method
    assert not safe(request("tools/list"), request("tools/call", 2))  # a batch is as safe as its worst
    assert not safe('{"jsonrpc":"2.0","method":"notifications/initialized"}')
    assert not safe_to_repeat(parse_body(b"{not json"))


def test_an_unfinished_body_closes_its_connection():
    async def main():
        async def reply(writer, conn, request):
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc")
            await asyncio.sleep(10)
            return True

        upstream = _Upstream(reply)
        pool = ConnectionPool(await upstream.start())
        stream, _ = await pool.send(build_request(b"GET", pool.target, [], b""), b"", b"GET")
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.1):
                async for _raw, payload in stream.body():
                    assert payload == b"abc"
        assert stream.conn.closed and pool.take_idle() is None
        await upstream.stop(pool)

    asyncio.run(main())


def test_policy_hosts_origins_token():
    policy = Policy.build("127.0.0.1", token="tok")
    ok = [(b"host", b"127.0.0.1:8766"), (b"authorization", b"Bearer tok")]
    assert policy.check(ok, "/mcp") is None
    assert policy.check([(b"host", b"evil.com")], "/mcp")[0] == 421
    assert policy.check([*ok, (b"origin", b"http://evil.com")], "/mcp")[0] == 403
    assert policy.check([(b"host", b"localhost")], "/mcp")[0] == 401
    assert policy.check([(b"host", b"localhost"), (b"x-finmcp-proxy-token", b"tok")], "/mcp") is None
    assert policy.check([(b"host", b"localhost")], "/healthz") is None


@pytest.fixture
def trace_db(tmp_path):
    """(path, store) of a fresh trace database; the store is closed after the test."""
    path = tmp_path / "t.sqlite"
    store = SqliteTraceStore.open(path)
    yield path, store
    store.close()


def test_writer_acks_after_commit_and_batches(trace_db):
    path, store = trace_db
    writer = TraceWriter(store)

    async def main():
        writer.bind(asyncio.get_running_loop())

        def request(i: int) -> Callable[[SqliteTraceStore], object]:
            return lambda s: s.log_message(direction="c2s", kind="request", body=f'{{"id":{i}}}')

        for i in range(50):
            writer.submit(request(i))
        call_ids = []
        writer.submit(lambda s: call_ids.append(s.begin_call(tool="T", arguments={"a": 1}, run_id="w")))

        def finish(s):
            return s.finish_call(call_ids[0], result={"content": [], "isError": False})

        status = await writer.submit(finish, wait=True)
        with SqliteTraceStore.open(path) as reader:  # another connection sees the committed row
            assert [c["status"] for c in reader.calls("w")] == ["ok"]
        return status

    assert asyncio.run(main()) == "ok"
    writer.close()
    assert len(store.messages()) == 50 and writer.failures == 0


def test_writer_commits_up_to_the_awaited_row_and_lingers_the_rest(trace_db):
    path, store = trace_db
    writer = TraceWriter(store, linger=0.05)

    async def main():
        writer.submit(lambda s: s.log_message(direction="c2s", kind="request", body="{}"))
        assert writer.commits == 0  # queued, not written: nothing has to be durable yet
        urgent = writer.submit(lambda s: s.ensure_run("urgent"), wait=True)
        writer.submit(lambda s: s.log_message(direction="s2c", kind="response", body="{}"))
        await urgent
        assert writer.commits == 1 and _committed(path)[0] == 1  # the trailing row waits
        await asyncio.sleep(0.1)
        assert writer.commits == 2 and _committed(path)[0] == 2  # ... at most `linger` seconds

        def ensure(run: str) -> Callable[[SqliteTraceStore], object]:
            return lambda s: s.ensure_run(run)

        many = [writer.submit(ensure(f"r{i}"), wait=True) for i in range(20)]
        await asyncio.gather(*many)
        assert writer.commits == 3  # awaited rows of one loop iteration share one commit

    asyncio.run(main())
    writer.submit(lambda s: s.ensure_run("after the loop"))  # no running loop: written at once
    assert writer.commits == 4 and "after the loop" in [r["run_id"] for r in store.runs()]


def test_writer_commits_at_once_when_asked_to(trace_db):
    path, store = trace_db
    writer = TraceWriter(store, linger=10)

    async def main():
        writer.submit(lambda s: s.ensure_run("queued before"))
        future = writer.submit(lambda s: s.ensure_run("now"), wait=True, now=True)
        assert future.done() and writer.commits == 1  # no loop iteration needed
        with SqliteTraceStore.open(path) as reader:
            assert sorted(r["run_id"] for r in reader.runs()) == ["now", "queued before"]
        await future

    asyncio.run(main())
    writer.close()


def test_writer_resolves_futures_with_the_commit_failure(trace_db):
    _path, store = trace_db
    writer = TraceWriter(store)

    async def main():
        store.close()  # every BEGIN now fails
        future = writer.submit(lambda s: s.ensure_run("lost"), wait=True)
        with pytest.raises(Exception, match="closed"):
            await future

    asyncio.run(main())
    assert writer.failures == 1


def test_writer_survives_a_failing_operation(trace_db):
    _path, store = trace_db
    writer = TraceWriter(store)

    async def main():
        writer.bind(asyncio.get_running_loop())
        bad = writer.submit(lambda s: s.finish_call(999, status="ok"), wait=True)
        with pytest.raises(Exception, match="needs a result"):
            await bad
        good = writer.submit(lambda s: s.ensure_run("fine"), wait=True)
        await good

    asyncio.run(main())
    writer.close()
    assert [r["run_id"] for r in store.runs()] == ["fine"] and writer.failures == 1


class _Transport(asyncio.Transport):
    """Collects what the proxy writes to a client."""

    def __init__(self) -> None:
        super().__init__()
        self.data = b""
        self.closed = False

    def write(self, data) -> None:
        self.data += bytes(data)

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name, default=None):
        return default


def test_requests_waiting_for_a_new_upstream_connection_are_logged_in_arrival_order(trace_db):
    from finmcp.proxy.capture import Tracer
    from finmcp.proxy.http_proxy import ProxyServer
    from finmcp.proxy.http_types import Settings
    from finmcp.proxy.security import Policy
    from finmcp.proxy.upstream_http import Target, UpstreamError

    _path, store = trace_db
    writer = TraceWriter(store)
    tracer = Tracer(writer, "http://127.0.0.1:9/mcp")
    server = ProxyServer(Settings(Target.parse("http://127.0.0.1:9/mcp"), tracer, Policy.build("127.0.0.1")))
    delays = iter([0.05, 0.0])  # the first request's connection takes longer to open

    async def slow_connect():
        await asyncio.sleep(next(delays))
        raise UpstreamError("not reachable in this test")

    server.pool.connect = slow_connect  # type: ignore[method-assign]  # a slow stand-in for this test

    def request(name: str) -> bytes:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name}})
        headers = {
            "host": "127.0.0.1",
            "content-type": "application/json",
            "mcp-protocol-version": MODERN,
            "mcp-session-id": f"s-{name}",
        }
        return raw_request("POST", "/r/order/mcp", headers, body.encode())

    async def main():
        writer.bind(asyncio.get_running_loop())
        clients = [server.protocol(), server.protocol()]
        transports = [_Transport(), _Transport()]
        for client, transport, name in zip(clients, transports, ["first", "second"], strict=True):
            client.connection_made(transport)
            client.data_received(request(name))
        while any(client.exchange is not None for client in clients):
            await asyncio.sleep(0.01)
        return transports

    transports = asyncio.run(main())
    writer.close()
    for transport in transports:  # each client got the upstream failure as a JSON-RPC error
        assert transport.data.startswith(b"HTTP/1.1 502") and b"not reachable in this test" in transport.data
    calls = store.calls("order")
    assert [c["tool"] for c in calls] == ["first", "second"]  # not the order in which connections opened
    assert [c["seq"] for c in calls] == [0, 1] and {c["status"] for c in calls} == {"transport_error"}


def test_a_locked_database_delays_the_rows_without_blocking_the_loop(trace_db):
    import sqlite3

    path, store = trace_db
    store.set_busy_timeout(20)
    writer = TraceWriter(store)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock

    async def main():
        future = writer.submit(lambda s: s.ensure_run("held"), wait=True)
        ticks: dict[int, int] = {}  # loop ticks seen after each failed attempt, before the next
        async with asyncio.timeout(30):  # only a hang guard: the attempts come with backoff
            while writer.lock_waits < 4:
                await asyncio.sleep(0.005)
                ticks[writer.lock_waits] = ticks.get(writer.lock_waits, 0) + 1
        assert not future.done()
        # never stalled: each attempt waits at most the busy timeout, and the loop runs between attempts
        assert all(ticks.get(attempt, 0) >= 1 for attempt in (1, 2, 3)), ticks
        writer.submit(lambda s: s.ensure_run("queued behind"))
        other.execute("COMMIT")  # the lock is released: the retry writes everything
        await asyncio.wait_for(future, 5)

    asyncio.run(main())
    writer.close()
    assert sorted(r["run_id"] for r in store.runs()) == ["held", "queued behind"]
    assert writer.failures == 0
    other.close()


def test_deferred_rows_stay_out_of_the_commit_a_response_waits_for(trace_db):
    path, store = trace_db
    writer = TraceWriter(store, linger=0.05)

    async def main():
        writer.submit(lambda s: s.log_message(direction="c2s", kind="request", body="{}"), defer=True)
        await writer.submit(lambda s: s.ensure_run("call"), wait=True)
        assert _committed(path) == (0, ["call"])  # the message row waits for the linger flush
        await asyncio.sleep(0.1)
        assert _committed(path) == (1, ["call"])

    asyncio.run(main())
    writer.close()


def test_ordered_output_holds_bytes_behind_a_barrier_until_the_rows_commit():
    from finmcp.proxy.ordered_output import OrderedOutput

    async def main():
        loop = asyncio.get_running_loop()
        written: list[bytes] = []
        woken: list[int] = []
        out = OrderedOutput(written.append, lambda: woken.append(1))
        committed, failed = loop.create_future(), loop.create_future()
        out.emit(b"head ")
        out.after([committed, failed])
        out.emit(b"answer ")
        out.emit(b"end")
        assert out.flush() is False and written == [b"head "]  # the answer waits for its rows
        committed.set_result(None)
        await asyncio.sleep(0)
        assert out.flush() is False and written == [b"head "]  # one row is still being committed
        failed.set_exception(RuntimeError("disk full"))  # logged; the bytes go all the same
        await asyncio.sleep(0)
        assert len(woken) == 2
        assert out.flush() is True and written == [b"head ", b"answer end"]  # one write

    asyncio.run(main())


def _committed(path) -> tuple[int, list[str]]:
    """What another connection sees: the number of message rows and the run ids."""
    with SqliteTraceStore.open(path) as reader:
        return len(reader.messages()), [r["run_id"] for r in reader.runs()]
