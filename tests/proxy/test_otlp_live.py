"""``finmcp-proxy --otlp-endpoint URL``: finished calls sent live to an OTLP/HTTP collector on loopback.

A real server and proxy; the collector is a small HTTP server that answers its first POSTs with 503
(a collector starting up) and keeps the bodies of the rest. Every call arrives exactly once, each body
parses with the OpenTelemetry protobuf decoder, a tagged call's span is the span ``export --format
otlp`` gives it (ids, name, attributes, status, duration), and an untagged call lands in its session's
trace.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPError

from finmcp.proxy.cli import main as proxy_main
from finmcp.proxy.exports.otlp import session_trace_id, trace_id
from finmcp.server.sim.example_args import example_arguments
from finmcp.server.world import World
from finmcp.tool_specs.inventory import load_inventory
from tests.proxy.test_export_standard import _hex_ids_as_base64
from tests.support.processes import Children, health
from tests.support.traces import wait_calls

REFUSED_FIRST = 2
"""POSTs the collector answers with 503 before it accepts any."""


class Collector:
    """An OTLP/HTTP traces receiver on 127.0.0.1: the bodies it accepted, the POSTs it refused."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.refused = 0
        self.headers: list[dict[str, str]] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the http.server spelling)
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                collector.headers.append(dict(self.headers))
                if collector.refused < REFUSED_FIRST:
                    collector.refused += 1
                    self.send_response(503)
                    self.end_headers()
                    return
                assert self.path == "/v1/traces" and self.headers["Content-Type"] == "application/json"
                collector.bodies.append(json.loads(body))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Collector:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def spans(self) -> list[dict[str, Any]]:
        return [
            span
            for body in self.bodies
            for resource in body["resourceSpans"]
            for scope in resource["scopeSpans"]
            for span in scope["spans"]
        ]


def _wait_spans(collector: Collector, count: int, timeout: float = 30.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(collector.spans()) >= count:
            return collector.spans()
        time.sleep(0.1)
    raise AssertionError(f"{len(collector.spans())} of {count} spans arrived; refused {collector.refused}")


def _wait_health(proxy: Any, sent: int, timeout: float = 10.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        shown = health(proxy)["otlp"]
        if shown["spans_sent"] >= sent or time.monotonic() > deadline:
            return dict(shown)
        time.sleep(0.05)


@pytest.mark.slow
def test_finished_calls_reach_the_collector_once_each_as_the_file_export_has_them(tmp_path):
    json_format = pytest.importorskip("google.protobuf.json_format")
    trace_service = pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
    db = tmp_path / "runs.sqlite"
    inventory, world = load_inventory("finmcp65"), World(seed=0)
    calls = [(t.name, example_arguments(t, world)) for t in inventory.tools[:3]]
    with Collector() as collector, Children() as children:
        server = children.server(["--latency", "fixed:20", "--seed", "0"])
        proxy = children.proxy(
            [
                "--upstream", server.url, "--db", str(db),
                "--otlp-endpoint", collector.url, "--otlp-header", "Authorization: Bearer $OTLP_TOKEN",
            ],
            env={"OTLP_TOKEN": "s3cret"},
        )  # fmt: skip

        async def main() -> None:
            async with Client(f"{proxy.base}/r/live/s/s1/k/0/t/0/mcp", mode="auto") as client:
                for tool, arguments in calls:
                    await client.call_tool(tool, arguments)
                with pytest.raises(MCPError, match="Unknown tool"):
                    await client.call_tool("NoSuchTool", {})
            async with Client(f"{proxy.base}/mcp", mode="legacy") as client:  # no tags at all
                await client.call_tool(*calls[0])

        anyio.run(main)
        spans = _wait_spans(collector, len(calls) + 2)
        shown = _wait_health(proxy, len(calls) + 2)  # the collector keeps a body before it answers
        assert shown["state"] == "sending" and shown["spans_sent"] == len(calls) + 2, shown
        assert shown["calls_waiting"] == 0 and "s3cret" not in json.dumps(shown)
    assert collector.refused == REFUSED_FIRST  # retried, nothing lost, nothing sent twice
    assert len(spans) == len({s["spanId"] for s in spans}) == len(calls) + 2
    assert all(h.get("Authorization") == "Bearer s3cret" for h in collector.headers)
    for body in collector.bodies:  # each request decodes as an ExportTraceServiceRequest
        json_format.Parse(json.dumps(_hex_ids_as_base64(body)), trace_service.ExportTraceServiceRequest())

    out = tmp_path / "live.otlp.json"
    assert (
        proxy_main(["export", "--db", str(db), "--run", "live", "--format", "otlp", "--output", str(out)])
        == 0
    )
    exported = {
        s["spanId"]: s
        for r in json.loads(out.read_text("utf-8"))["resourceSpans"]
        for scope in r["scopeSpans"]
        for s in scope["spans"]
        if s["name"].startswith("tools/call")
    }
    tagged = [s for s in spans if s["traceId"] == trace_id("live", "s1", 0)]
    assert sorted(s["name"] for s in tagged) == sorted(
        ["tools/call NoSuchTool", *(f"tools/call {name}" for name, _ in calls)]
    )
    for span in tagged:
        twin = exported[span["spanId"]]
        for key in ("traceId", "name", "kind", "attributes", "status"):
            assert span[key] == twin[key], key
        duration = int(span["endTimeUnixNano"]) - int(span["startTimeUnixNano"])
        assert duration == int(twin["endTimeUnixNano"]) - int(twin["startTimeUnixNano"]) > 0
    (untagged,) = [s for s in spans if s not in tagged]
    with sqlite3.connect(db) as con:
        ((session_key,),) = con.execute("SELECT session_key FROM calls WHERE sample_id IS NULL").fetchall()
    assert untagged["traceId"] == session_trace_id(session_key)
    assert untagged["name"] == f"tools/call {calls[0][0]}"
    wait_calls(db, "live", len(calls) + 1, settled=True)


@pytest.mark.parametrize("endpoint", ["ftp://127.0.0.1/v1/traces", "127.0.0.1:4318", "http:///v1/traces"])
def test_a_bad_endpoint_is_refused_at_start(endpoint, tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        proxy_main(
            [
                "--upstream",
                "http://127.0.0.1:9/mcp",
                "--db",
                str(tmp_path / "x.sqlite"),
                "--otlp-endpoint",
                endpoint,
            ]
        )
    assert exited.value.code == 2
    assert "--otlp-endpoint" in capsys.readouterr().err
