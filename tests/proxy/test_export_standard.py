"""``finmcp-proxy export --format otlp|har|csv|parquet`` over a trace made by a real server and proxy.

The OTLP file is parsed by the OpenTelemetry protobuf decoder (``json_format.Parse`` into
``ExportTraceServiceRequest``); the HAR file is checked against HAR 1.2's required fields; the CSV
is read back with the stdlib ``csv`` module and the Parquet file with pyarrow.
"""

from __future__ import annotations

import base64
import csv
import io
import json
from typing import Any

import anyio
import jsonschema
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPError

from finmcp.proxy.cli import main as proxy_main
from finmcp.proxy.exports.otlp import trace_id
from finmcp.recordings import SqliteTraceStore
from finmcp.recordings.schema import CALLS_COLUMNS
from finmcp.server.sim.example_args import example_arguments
from finmcp.server.world import World
from finmcp.tool_specs.inventory import load_inventory
from tests.support.processes import Children
from tests.support.rpc import modern_post, tool_call
from tests.support.traces import wait_calls

pytestmark = pytest.mark.slow  # one real server + proxy run (about 10 s on 2 cores) feeds every test

RUN = "std"
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
GAP_MS = 250  # --group-gap-ms: a parallel group's calls stay together on a loaded machine
ODD_ARGUMENTS = [  # what CSV must carry intact: newlines, quotes, commas, non-ASCII, a lone surrogate
    {"fundNameOrCode": 'line one\nline "two", three\r\n'},
    {"fundNameOrCode": "华夏成长 — ünïcode ✓"},
    {"fundNameOrCode": "\ud800 lone"},
]


def _url(proxy: Any, sample: str, trial: int, turn: int = 0) -> str:
    return f"{proxy.base}/r/{RUN}/s/{sample}/k/{trial}/t/{turn}/mcp"


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """A run: s1 (2026 era: list, one call, a parallel group of 3, an unknown tool), s2 trial 1
    (handshake era: initialize, initialized, one call), s3 (raw POSTs with odd arguments)."""
    db = tmp_path_factory.mktemp("export") / "runs.sqlite"
    inventory, world = load_inventory("finmcp65"), World(seed=0)
    names = [t.name for t in inventory.tools[:4]]
    calls = [(name, example_arguments(inventory.get(name), world)) for name in names]
    with Children() as children:
        server = children.server(["--latency", "fixed:50", "--seed", "0"])
        proxy = children.proxy(["--upstream", server.url, "--db", str(db), "--group-gap-ms", str(GAP_MS)])

        async def main() -> None:
            async with Client(_url(proxy, "s1", 0), mode="auto") as client:
                await client.list_tools()
                await client.call_tool(*calls[0])
                await anyio.sleep(3 * GAP_MS / 1000)
                async with anyio.create_task_group() as tg:
                    for tool, arguments in calls[1:4]:
                        tg.start_soon(client.call_tool, tool, arguments)
                await anyio.sleep(3 * GAP_MS / 1000)
                with pytest.raises(MCPError, match="Unknown tool"):
                    await client.call_tool("NoSuchTool", {})
            async with Client(_url(proxy, "s2", 1), mode="legacy") as client:
                await client.call_tool(*calls[0])

        anyio.run(main)
        for rid, arguments in enumerate(ODD_ARGUMENTS, start=1):
            message = tool_call("GetFundDiagnosis", arguments, rid)
            if rid == 1:  # a client with an OpenTelemetry SDK sends its span's context (SEP-414)
                message["params"]["_meta"]["traceparent"] = TRACEPARENT
            response = modern_post(_url(proxy, "s3", 0), message)
            assert response.status_code == 200
        wait_calls(db, RUN, 5 + 1 + len(ODD_ARGUMENTS), settled=True)
    return db, names


def _export(db: Any, fmt: str, out: Any) -> None:
    assert proxy_main(["export", "--db", str(db), "--run", RUN, "--format", fmt, "--output", str(out)]) == 0


def _hex_ids_as_base64(document: Any) -> Any:
    """OTLP/JSON writes trace and span ids in hex where the protobuf JSON mapping reads base64 (the
    one deviation the OTLP spec makes); convert them, checking each is lower-case hex of its length."""
    sizes = {"traceId": 32, "spanId": 16, "parentSpanId": 16}
    if isinstance(document, list):
        return [_hex_ids_as_base64(item) for item in document]
    if not isinstance(document, dict):
        return document
    out = {}
    for key, value in document.items():
        if key in sizes and isinstance(value, str):
            assert len(value) == sizes[key] and value == value.lower(), (key, value)
            value = base64.b64encode(bytes.fromhex(value)).decode()
        out[key] = _hex_ids_as_base64(value)
    return out


def _attrs(span: Any) -> dict[str, Any]:
    out = {}
    for kv in span.attributes:
        kind = kv.value.WhichOneof("value")
        out[kv.key] = getattr(kv.value, kind)
    return out


def test_otlp_parses_with_the_opentelemetry_decoder(traced, tmp_path):
    json_format = pytest.importorskip("google.protobuf.json_format")
    trace_service = pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
    db, names = traced
    out = tmp_path / "run.otlp.json"
    _export(db, "otlp", out)
    document = _hex_ids_as_base64(json.loads(out.read_text(encoding="utf-8")))
    request = json_format.Parse(json.dumps(document), trace_service.ExportTraceServiceRequest())
    (resource,) = request.resource_spans
    assert _attrs(resource.resource)["service.name"] == "finmcp-proxy"
    spans = [s for scope in resource.scope_spans for s in scope.spans]
    with SqliteTraceStore.open(db) as store:
        calls = store.calls(RUN)
        messages = store.messages(run_id=RUN)
    by_trace: dict[bytes, list[Any]] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    # one trace per (sample, trial), with the documented ids
    assert set(by_trace) == {bytes.fromhex(trace_id(RUN, s, k)) for s, k in (("s1", 0), ("s2", 1), ("s3", 0))}
    # a span per call, per other request/response pair, per notification
    others = [m for m in messages if m["kind"] in ("request", "notification") and m["method"] != "tools/call"]
    assert len(spans) == len(calls) + len(others)
    s1 = by_trace[bytes.fromhex(trace_id(RUN, "s1", 0))]
    assert sorted(s.name for s in s1) == sorted(
        ["server/discover", "tools/list", "tools/call NoSuchTool", *(f"tools/call {n}" for n in names)]
    )
    s2 = sorted(by_trace[bytes.fromhex(trace_id(RUN, "s2", 1))], key=lambda s: s.start_time_unix_nano)
    assert [s.name for s in s2[:2]] == ["initialize", "notifications/initialized"]
    assert sorted(s.name for s in s2[2:]) == [f"tools/call {names[0]}", "tools/list"]  # the SDK lists lazily
    assert s2[1].start_time_unix_nano == s2[1].end_time_unix_nano  # a notification: zero length
    session_ids = {_attrs(s).get("mcp.session.id") for s in s2}
    assert len(session_ids - {None}) == 1  # the client's Mcp-Session-Id (initialize has none yet)
    row = {c["jsonrpc_id"]: c for c in calls if c["sample_id"] == "s1"}
    group = [c for c in calls if c["sample_id"] == "s1" and c["tool"] in names[1:4]]
    assert len({c["call_group"] for c in group}) == 1  # the parallel group was seen as one
    for span in s1:
        attrs = _attrs(span)
        assert span.kind == 3 and attrs["mcp.method.name"] in ("server/discover", "tools/list", "tools/call")
        assert attrs["finmcp.run_id"] == RUN and attrs["finmcp.sample_id"] == "s1"
        assert attrs["finmcp.trial"] == 0 and attrs["finmcp.turn"] == 0
        assert attrs["mcp.protocol.version"] == "2026-07-28"
        if attrs["mcp.method.name"] != "tools/call":
            continue
        call = row[int(attrs["jsonrpc.request.id"])]
        assert attrs["gen_ai.operation.name"] == "execute_tool"
        assert attrs["gen_ai.tool.name"] == call["tool"]
        assert json.loads(attrs["gen_ai.tool.call.arguments"]) == call["arguments"]
        assert attrs["finmcp.call_group"] == call["call_group"]
        assert attrs["finmcp.group_source"] == call["group_source"]
        # the logged monotonic duration, exactly
        assert span.end_time_unix_nano - span.start_time_unix_nano == call["t_resp_ns"] - call["t_req_ns"]
        if call["tool"] == "NoSuchTool":
            assert call["status"] != "ok"
            assert span.status.code == 2 and span.status.message
            assert attrs["error.type"] in ("tool_error", str((call["rpc_error"] or {}).get("code")))
        else:
            assert call["status"] == "ok" and span.status.code == 0 and "error.type" not in attrs
    # the group's spans overlap in time; the first call ended before the group started
    group_spans = [s for s in s1 if _attrs(s).get("gen_ai.tool.name") in names[1:4]]
    assert max(s.start_time_unix_nano for s in group_spans) < min(s.end_time_unix_nano for s in group_spans)
    first = next(s for s in s1 if _attrs(s).get("gen_ai.tool.name") == names[0])
    assert first.end_time_unix_nano < min(s.start_time_unix_nano for s in group_spans)
    # a request that carried a W3C traceparent links to the client's span; the others link nowhere
    linked = [s for s in spans if s.links]
    assert len(linked) == 1 and _attrs(linked[0])["finmcp.sample_id"] == "s3"
    assert linked[0].links[0].trace_id.hex() == TRACEPARENT.split("-")[1]
    assert linked[0].links[0].span_id.hex() == TRACEPARENT.split("-")[2]


def test_otlp_proto_is_the_same_request_as_protobuf(traced, tmp_path):
    json_format = pytest.importorskip("google.protobuf.json_format")
    trace_service = pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
    db, _names = traced
    _export(db, "otlp", tmp_path / "run.json")
    _export(db, "otlp-proto", tmp_path / "run.pb")
    document = _hex_ids_as_base64(json.loads((tmp_path / "run.json").read_text(encoding="utf-8")))
    from_json = json_format.Parse(json.dumps(document), trace_service.ExportTraceServiceRequest())
    from_proto = trace_service.ExportTraceServiceRequest.FromString((tmp_path / "run.pb").read_bytes())
    assert from_proto == from_json and len(from_proto.resource_spans[0].scope_spans[0].spans) > 10


HAR_SCHEMA = {  # the fields HAR 1.2 requires (http://www.softwareishard.com/blog/har-12-spec/)
    "type": "object",
    "required": ["log"],
    "properties": {
        "log": {
            "type": "object",
            "required": ["version", "creator", "entries"],
            "properties": {
                "version": {"const": "1.2"},
                "creator": {"$ref": "#/$defs/creator"},
                "entries": {"type": "array", "items": {"$ref": "#/$defs/entry"}},
            },
        }
    },
    "$defs": {
        "creator": {
            "type": "object",
            "required": ["name", "version"],
            "properties": {"name": {"type": "string"}, "version": {"type": "string"}},
        },
        "pairs": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "value"],
                "properties": {"name": {"type": "string"}, "value": {"type": "string"}},
            },
        },
        "entry": {
            "type": "object",
            "required": ["startedDateTime", "time", "request", "response", "cache", "timings"],
            "properties": {
                "startedDateTime": {
                    "type": "string",
                    "pattern": r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$",
                },
                "time": {"type": "number", "minimum": 0},
                "cache": {"type": "object"},
                "request": {
                    "type": "object",
                    "required": [
                        "method",
                        "url",
                        "httpVersion",
                        "cookies",
                        "headers",
                        "queryString",
                        "headersSize",
                        "bodySize",
                    ],
                    "properties": {
                        "method": {"type": "string"},
                        "url": {"type": "string", "pattern": "^http://"},
                        "httpVersion": {"type": "string"},
                        "cookies": {"$ref": "#/$defs/pairs"},
                        "headers": {"$ref": "#/$defs/pairs"},
                        "queryString": {"$ref": "#/$defs/pairs"},
                        "postData": {
                            "type": "object",
                            "required": ["mimeType", "params", "text"],
                            "properties": {"mimeType": {"type": "string"}, "text": {"type": "string"}},
                        },
                        "headersSize": {"type": "integer"},
                        "bodySize": {"type": "integer"},
                    },
                },
                "response": {
                    "type": "object",
                    "required": [
                        "status",
                        "statusText",
                        "httpVersion",
                        "cookies",
                        "headers",
                        "content",
                        "redirectURL",
                        "headersSize",
                        "bodySize",
                    ],
                    "properties": {
                        "status": {"type": "integer"},
                        "statusText": {"type": "string"},
                        "cookies": {"$ref": "#/$defs/pairs"},
                        "headers": {"$ref": "#/$defs/pairs"},
                        "content": {
                            "type": "object",
                            "required": ["size", "mimeType"],
                            "properties": {"size": {"type": "integer"}, "mimeType": {"type": "string"}},
                        },
                        "redirectURL": {"type": "string"},
                        "headersSize": {"type": "integer"},
                        "bodySize": {"type": "integer"},
                    },
                },
                "timings": {
                    "type": "object",
                    "required": ["send", "wait", "receive"],
                    "properties": {n: {"type": "number", "minimum": -1} for n in ("send", "wait", "receive")},
                },
            },
        },
    },
}


def test_har_holds_every_http_exchange_with_the_required_fields(traced, tmp_path):
    db, names = traced
    out = tmp_path / "run.har"
    _export(db, "har", out)
    har = json.loads(out.read_text(encoding="utf-8"))
    jsonschema.validate(har, HAR_SCHEMA)
    entries = har["log"]["entries"]
    with SqliteTraceStore.open(db) as store:
        messages = store.messages(run_id=RUN)
        calls = store.calls(RUN)
    assert len(entries) == sum(1 for m in messages if m["headers"] is not None)
    assert [e["startedDateTime"] for e in entries] == sorted(e["startedDateTime"] for e in entries)
    posts = [e for e in entries if e["_finmcp"]["methods"] == ["tools/call"]]
    assert len(posts) == len(calls)
    by_id = {(c["session_key"], c["jsonrpc_id"]): c for c in calls}
    for entry in posts:
        request, response = entry["request"], entry["response"]
        sent = json.loads(request["postData"]["text"])
        call = by_id[(entry["_finmcp"]["session_key"], sent["id"])]
        assert request["method"] == "POST" and f"/r/{RUN}/s/{call['sample_id']}/" in request["url"]
        assert sent["params"]["name"] == call["tool"] and sent["params"]["arguments"] == call["arguments"]
        assert request["bodySize"] == len(request["postData"]["text"].encode())
        headers = {h["name"].lower(): h["value"] for h in request["headers"]}
        assert headers["content-type"].startswith("application/json")
        answer = json.loads(response["content"]["text"])
        assert answer["id"] == sent["id"]
        if call["result"] is not None:
            assert answer["result"]["content"] == call["result"]["content"]
        else:
            assert answer["error"] == call["rpc_error"]
        assert entry["_finmcp"]["trial"] == call["trial"]
        wait = entry["timings"]["wait"]
        # the answer is logged after the call's row took t_resp_ns: the wait covers the call's latency
        assert call["latency_ms"] - 1 <= wait and entry["time"] == wait
    handshake = [e for e in entries if e["_finmcp"]["methods"] == ["notifications/initialized"]]
    assert len(handshake) == 1 and "text" not in handshake[0]["response"]["content"]


def test_csv_round_trips_every_row_with_the_stdlib_reader(traced, tmp_path):
    db, _names = traced
    out = tmp_path / "calls.csv"
    _export(db, "csv", out)
    raw = out.read_bytes()
    assert b"\r\n" in raw and not raw.startswith(b"\xef\xbb\xbf")
    with out.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    assert tuple(rows[0]) == CALLS_COLUMNS
    with SqliteTraceStore.open(db) as store:
        stored = store.calls(RUN, parse_json=False)
        parsed = store.calls(RUN)
    assert len(rows) - 1 == len(stored) == 5 + 1 + len(ODD_ARGUMENTS)
    for line, row, decoded in zip(rows[1:], stored, parsed, strict=True):
        for name, text in zip(CALLS_COLUMNS, line, strict=True):
            value = row[name]
            if isinstance(value, float):
                assert float(text) == value, name
            else:
                assert text == ("" if value is None else str(value)), name
        assert json.loads(line[CALLS_COLUMNS.index("arguments")]) == decoded["arguments"]
    odd = [json.loads(line[CALLS_COLUMNS.index("arguments")]) for line in rows[1:] if line[2] == "s3"]
    assert odd == ODD_ARGUMENTS  # newlines, quotes, non-ASCII and the lone surrogate, intact


def test_parquet_reads_back_equal_with_typed_columns(traced, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    pa = pytest.importorskip("pyarrow")
    db, _names = traced
    out = tmp_path / "calls.parquet"
    _export(db, "parquet", out)
    table = pq.read_table(out)
    assert tuple(table.column_names) == CALLS_COLUMNS
    assert table.schema.field("t_req_ns").type == pa.int64()
    assert table.schema.field("latency_ms").type == pa.float64()
    assert table.schema.field("wall_time").type == pa.timestamp("us", tz="UTC")
    with SqliteTraceStore.open(db) as store:
        stored = store.calls(RUN, parse_json=False)
    read = table.to_pylist()
    assert len(read) == len(stored)
    for got, row in zip(read, stored, strict=True):
        wall = got.pop("wall_time")
        assert wall.strftime("%Y-%m-%dT%H:%M:%S.%fZ") == row["wall_time"]
        assert got == {k: v for k, v in row.items() if k != "wall_time"}


def test_export_of_an_unknown_run_or_format_is_refused(traced, tmp_path, capsys):
    db, _names = traced
    for fmt in ("otlp", "otlp-proto", "har", "csv", "parquet"):
        assert proxy_main(["export", "--db", str(db), "--run", "nope", "--format", fmt]) == 1
        assert "has nothing logged" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        proxy_main(["export", "--db", str(db), "--run", RUN, "--format", "zipkin"])
    assert "invalid choice: 'zipkin'" in capsys.readouterr().err


def test_stdout_gets_the_same_bytes(traced, capfdbinary):
    db, _names = traced
    assert proxy_main(["export", "--db", str(db), "--run", RUN, "--format", "csv"]) == 0
    text = capfdbinary.readouterr().out.decode("utf-8")
    assert next(csv.reader(io.StringIO(text, newline=""))) == list(CALLS_COLUMNS)
