"""``--format otlp``: a run as one OpenTelemetry OTLP/JSON ``ExportTraceServiceRequest``.

- One trace per (sample, trial): the trace id is the first 16 bytes of SHA-256 over run, sample and
  trial, so exporting again (or another store holding the same run) gives the same ids.
- One span per MCP exchange, all roots of their trace (no synthetic parent), kind ``CLIENT`` (the MCP
  client span of the OpenTelemetry MCP conventions: the proxy sees what the client sent and got):
  each ``tools/call`` from its ``calls`` row, every other request with its response from ``messages``
  (either direction: a server's ``sampling/createMessage`` is a span too), each notification as a
  zero-length span at the moment it was logged. Unparseable messages, and responses with no request
  logged before them, get no span. Messages and calls without a sample tag are left out.
- Names and attributes per the OpenTelemetry GenAI/MCP semantic conventions: span name
  ``{mcp.method.name} {gen_ai.tool.name}`` (or the prompt name, else the method alone);
  ``mcp.method.name``, ``mcp.protocol.version``, ``mcp.session.id`` (only when the client sent that
  ``Mcp-Session-Id``), ``jsonrpc.request.id``, ``gen_ai.operation.name`` = ``execute_tool`` and
  ``gen_ai.tool.name`` for tool calls, ``gen_ai.tool.call.arguments`` / ``gen_ai.tool.call.result``
  (opt-in in the conventions; the trace already holds them, secrets redacted), ``network.transport``,
  ``server.address`` / ``server.port`` of the upstream; plus ``finmcp.run_id``, ``finmcp.sample_id``,
  ``finmcp.trial``, ``finmcp.turn``, ``finmcp.call_group``, ``finmcp.group_source``,
  ``finmcp.status``, ``finmcp.session_key``.
- Errors: status ``ERROR`` with the message; ``error.type`` is the JSON-RPC error code, ``tool_error``
  for an ``isError`` result, else the trace status (``transport_error``, ``cancelled``, ``pending``);
  a JSON-RPC error code is also ``rpc.response.status_code`` (current conventions, a string) and
  ``rpc.jsonrpc.error_code`` (older ones, an int).
- Times: unix nanoseconds from the logged monotonic clock (``t_req_ns``/``t_resp_ns``, ``t_ns``)
  anchored to the logged wall time (:class:`proxy.exports.exchanges.WallClock`): a span's duration is
  exactly the logged monotonic difference.
- A request whose ``params._meta`` carried a W3C ``traceparent`` (a client with an OpenTelemetry SDK)
  gets a span link to that context, which is where the server's own spans hang (docs/proxy.md).

Encoding (OTLP/JSON): ids as hex, 64-bit integers as decimal strings, enums as integers, attribute
values as ``{"stringValue"| "intValue" | "boolValue" | "doubleValue": ...}``.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from finmcp.proxy.exports.exchanges import (
    Exchange,
    WallClock,
    body_object,
    header_value,
    message_trials,
    pair_messages,
    trial_of,
)
from finmcp.recordings import transcripts
from finmcp.recordings.errors import RecordingsError
from finmcp.recordings.results import escape_surrogates
from finmcp.recordings.trace_store import TraceStore

SERVICE_NAME = "finmcp-proxy"
SCOPE_NAME = "finmcp.proxy.export"
SPAN_KIND_CLIENT = 3
STATUS_UNSET, STATUS_OK, STATUS_ERROR = 0, 1, 2


def trace_id(run_id: str, sample_id: str, trial: int) -> str:
    """The hex trace id of one (run, sample, trial)."""
    return _digest("trace", run_id, sample_id, str(trial))[:32]


def export_otlp(store: TraceStore, run_id: str) -> dict[str, Any]:
    """The run's ``ExportTraceServiceRequest`` as an OTLP/JSON object."""
    calls = store.calls(run_id)
    messages = store.messages(run_id=run_id)
    sessions = {s["session_key"]: s for s in store.sessions(run_id)}
    clock = WallClock(
        [(c["t_req_ns"], c["wall_time"]) for c in calls] + [(m["t_ns"], m["wall_time"]) for m in messages]
    )
    context = SessionFacts(messages, sessions)
    by_request, call_trials = message_trials(messages, calls)
    call_requests = {
        (m["session_key"], json.dumps(m["jsonrpc_id"])): m
        for m in messages
        if m["kind"] == "request" and m["method"] == "tools/call" and m["direction"] == "c2s"
    }
    spans: list[dict[str, Any]] = []
    for call in calls:
        if call["sample_id"] is not None:
            request = call_requests.get((call["session_key"], json.dumps(call["jsonrpc_id"])))
            spans.append(call_span(run_id, call, request, clock, context))
    for exchange in pair_messages(messages):
        request = exchange.request
        if request["sample_id"] is None or (
            request["method"] == "tools/call" and request["direction"] == "c2s"
        ):
            continue
        trial = trial_of(request, by_request, call_trials)
        spans.append(_message_span(run_id, trial, exchange, clock, context))
    return request_document(spans, {"finmcp.run_id": run_id})


def request_document(spans: list[dict[str, Any]], resource: dict[str, Any]) -> dict[str, Any]:
    """An ``ExportTraceServiceRequest`` of ``spans`` (sorted by trace, start, id) from finmcp-proxy;
    ``resource``: attributes beside ``service.name``."""
    spans.sort(key=lambda s: (s["traceId"], int(s["startTimeUnixNano"]), s["spanId"]))
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _attributes({"service.name": SERVICE_NAME, **resource})},
                "scopeSpans": [{"scope": {"name": SCOPE_NAME}, "spans": spans}],
            }
        ]
    }


def session_trace_id(session_key: str | None) -> str:
    """The hex trace id of a session's calls that carry no sample tag (the live export's traces)."""
    return _digest("session", session_key or "")[:32]


class SessionFacts:
    """Per session: the protocol version, the client-sent ``Mcp-Session-Id``, transport and upstream."""

    def __init__(self, messages: list[dict[str, Any]], sessions: Mapping[str, Mapping[str, Any]]) -> None:
        self.sessions = sessions
        self.sent_ids: set[str] = set()
        for message in messages:
            sid = header_value(message["headers"], "mcp-session-id")
            if sid is not None and sid == message["session_key"]:
                self.sent_ids.add(sid)

    def attributes(self, session_key: str | None, protocol_version: str | None) -> dict[str, Any]:
        session: Mapping[str, Any] = self.sessions.get(session_key or "", {})
        out: dict[str, Any] = {
            "mcp.protocol.version": protocol_version or session.get("protocol_version"),
            "finmcp.session_key": session_key,
        }
        if session_key in self.sent_ids:
            out["mcp.session.id"] = session_key
        transport = session.get("transport")
        if transport == "stdio":
            out["network.transport"] = "pipe"
        elif transport:
            out["network.transport"] = "tcp"
            out["network.protocol.name"] = "http"
        upstream = session.get("upstream")
        if upstream and "://" in upstream:
            parts = urlsplit(upstream)
            if parts.hostname:
                out["server.address"] = parts.hostname
                if parts.port:
                    out["server.port"] = parts.port
        return out


def call_span(
    run_id: str,
    call: dict[str, Any],
    request: dict[str, Any] | None,
    clock: WallClock,
    context: SessionFacts,
    trace: str | None = None,
) -> dict[str, Any]:
    """The span of one ``calls`` row (``request``: its logged ``tools/call`` message, for the client's
    traceparent link); in the (run, sample, trial) trace unless ``trace`` names another."""
    trial = int(call["trial"] or 0)
    start = clock.unix_ns(call["t_req_ns"], call["wall_time"]) or 0
    end = start + (call["t_resp_ns"] - call["t_req_ns"]) if call["t_resp_ns"] is not None else start
    attrs: dict[str, Any] = {
        "mcp.method.name": "tools/call",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call["tool"],
        "jsonrpc.request.id": _id_attr(call["jsonrpc_id"]),
        **context.attributes(call["session_key"], call["protocol_version"]),
        "gen_ai.tool.call.arguments": _json(call["arguments"]),
        "gen_ai.tool.call.result": _json(call["result"]) if call["result"] is not None else None,
        **_finmcp(run_id, call["sample_id"], trial, call["turn"]),
        "finmcp.call_group": call["call_group"],
        "finmcp.group_source": call["group_source"],
        "finmcp.status": call["status"],
        "finmcp.client_name": call["client_name"],
    }
    status: dict[str, Any] = {"code": STATUS_UNSET}
    failed = transcripts.failure(call["result"], call["rpc_error"], call["status"])
    if failed is not None:
        attrs.update(_error_attributes(call["status"], call["rpc_error"]))
        status = {"code": STATUS_ERROR, "message": failed[1]}
    span = _span(
        trace or trace_id(run_id, call["sample_id"], trial),
        _digest("call", run_id, str(call["id"]))[:16],
        f"tools/call {call['tool']}" if call["tool"] else "tools/call",
        start,
        end,
        attrs,
        status,
    )
    _link_parent(span, body_object(request))
    return span


def to_protobuf(document: dict[str, Any]) -> bytes:
    """The binary protobuf form of an OTLP/JSON document (for OTLP/HTTP receivers that take protobuf only,
    like Phoenix); needs the ``otel`` extra. The JSON encoding differs from protobuf's JSON mapping only
    in the ids (hex, not base64)."""
    try:
        from google.protobuf import json_format
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    except ImportError:
        raise RecordingsError(
            "--format otlp-proto needs the OpenTelemetry protobuf classes: pip install 'finmcp-kit[otel]'"
        ) from None
    message = json_format.ParseDict(_base64_ids(document), ExportTraceServiceRequest())
    return bytes(message.SerializeToString())


def _base64_ids(value: Any) -> Any:
    if isinstance(value, list):
        return [_base64_ids(item) for item in value]
    if not isinstance(value, dict):
        return value
    return {
        key: base64.b64encode(bytes.fromhex(item)).decode()
        if key in ("traceId", "spanId", "parentSpanId") and isinstance(item, str)
        else _base64_ids(item)
        for key, item in value.items()
    }


def _message_span(
    run_id: str, trial: int, exchange: Exchange, clock: WallClock, context: SessionFacts
) -> dict[str, Any]:
    request, response = exchange.request, exchange.response
    method = request["method"] or ""
    body = body_object(request)
    raw_params = body.get("params")
    params: dict[str, Any] = raw_params if isinstance(raw_params, dict) else {}
    target = params.get("name") if method in ("tools/call", "prompts/get") else None
    attrs: dict[str, Any] = {"mcp.method.name": method}
    if request["kind"] == "request":
        attrs["jsonrpc.request.id"] = _id_attr(request["jsonrpc_id"])
    if isinstance(target, str):
        attrs["gen_ai.prompt.name" if method == "prompts/get" else "gen_ai.tool.name"] = target
    if method == "tools/call":
        attrs["gen_ai.operation.name"] = "execute_tool"
    if isinstance(params.get("uri"), str):
        attrs["mcp.resource.uri"] = params["uri"]
    attrs.update(context.attributes(request["session_key"], None))
    attrs.update(_finmcp(run_id, request["sample_id"], trial, request["turn"]))
    attrs["finmcp.direction"] = request["direction"]
    start = clock.unix_ns(request["t_ns"], request["wall_time"]) or 0
    end = start
    if response is not None and response["t_ns"] is not None and request["t_ns"] is not None:
        end = start + max(response["t_ns"] - request["t_ns"], 0)
    status: dict[str, Any] = {"code": STATUS_UNSET}
    if response is not None and response["kind"] == "error":
        error = body_object(response).get("error")
        attrs.update(_error_attributes("rpc_error", error))
        message = error.get("message") if isinstance(error, dict) else None
        status = {"code": STATUS_ERROR, "message": str(message or "JSON-RPC error")}
    elif response is None and request["kind"] == "request":
        attrs["finmcp.status"] = "unanswered"
    span = _span(
        trace_id(run_id, request["sample_id"], trial),
        _digest("message", run_id, str(request["id"]))[:16],
        f"{method} {target}" if isinstance(target, str) and target else method or "(no method)",
        start,
        end,
        attrs,
        status,
    )
    _link_parent(span, body)
    return span


def _error_attributes(status: str, error: Any) -> dict[str, Any]:
    code = error.get("code") if isinstance(error, dict) else None
    if isinstance(code, int) and not isinstance(code, bool):
        return {
            "error.type": str(code),
            "rpc.response.status_code": str(code),
            "rpc.jsonrpc.error_code": code,
        }
    return {"error.type": status}


def _finmcp(run_id: str, sample_id: str, trial: int, turn: int | None) -> dict[str, Any]:
    return {
        "finmcp.run_id": run_id,
        "finmcp.sample_id": sample_id,
        "finmcp.trial": trial,
        "finmcp.turn": turn,
    }


def _link_parent(span: dict[str, Any], body: dict[str, Any]) -> None:
    """A link to the W3C trace context the request carried in ``params._meta`` (when valid)."""
    params = body.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    parent = meta.get("traceparent") if isinstance(meta, dict) else None
    if not isinstance(parent, str):
        return
    parts = parent.strip().split("-")
    if len(parts) < 4 or len(parts[1]) != 32 or len(parts[2]) != 16:
        return
    try:
        if int(parts[1], 16) == 0 or int(parts[2], 16) == 0:
            return
    except ValueError:
        return
    link: dict[str, Any] = {"traceId": parts[1].lower(), "spanId": parts[2].lower()}
    state = meta.get("tracestate") if isinstance(meta, dict) else None
    if isinstance(state, str) and state:
        link["traceState"] = state
    link["attributes"] = _attributes({"finmcp.link": "client traceparent"})
    span["links"] = [link]


def _span(
    trace: str,
    span_id: str,
    name: str,
    start: int,
    end: int,
    attributes: dict[str, Any],
    status: dict[str, Any],
) -> dict[str, Any]:
    return {
        "traceId": trace,
        "spanId": span_id,
        "name": escape_surrogates(name),
        "kind": SPAN_KIND_CLIENT,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": _attributes(attributes),
        "status": status,
    }


def _attributes(values: dict[str, Any]) -> list[dict[str, Any]]:
    """OTLP ``KeyValue`` list; None values are left out."""
    out = []
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool):
            any_value: dict[str, Any] = {"boolValue": value}
        elif isinstance(value, int):
            any_value = {"intValue": str(value)}
        elif isinstance(value, float):
            any_value = {"doubleValue": value}
        else:  # a lone surrogate (valid in JSON, not in a protobuf string) stays a JSON escape
            any_value = {"stringValue": escape_surrogates(str(value))}
        out.append({"key": key, "value": any_value})
    return out


def _id_attr(value: Any) -> str | None:
    """``jsonrpc.request.id``: the id as text (a string id without quotes); None for a null id."""
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _digest(*parts: str) -> str:
    text = "\0".join(parts).encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(text).hexdigest()
    return digest if int(digest[:16], 16) else "1" + digest[1:]  # an all-zero id is invalid
