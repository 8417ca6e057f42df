"""``--format har``: the HTTP side of a run as an HTTP Archive (HAR 1.2) log.

One entry per HTTP request the proxy logged: a POST carrying JSON-RPC messages, whose headers (with
``:method`` and ``:path``) the proxy stores on the request's first message. What the trace holds is
written as it was logged; what HAR requires and the trace does not hold gets HAR's placeholder:

- ``request``: method, URL (``http://`` + the ``Host`` header + the path as logged, credentials in
  the query redacted), headers in the order sent (secret values ``[REDACTED]`` as stored; tag headers
  kept), cookies and query string parsed from them, ``postData`` with the ``Content-Type`` and the
  JSON-RPC body (a batch is rebuilt as a JSON array of its messages' logged text), ``bodySize`` from
  ``Content-Length``. ``httpVersion`` is not logged: ``""``; ``headersSize``: -1.
- ``response``: the HTTP status, status text, headers and framing are not logged: ``status`` 0,
  ``statusText`` ``""``, ``httpVersion`` ``""``, ``headers`` []. ``content.text`` holds the JSON-RPC
  answers to the request's messages as logged (one: its text; several: a JSON array), ``mimeType``
  ``application/json``; whether they travelled as JSON or as SSE events is not logged. A request of
  notifications only has empty content. Server notifications and server requests on a stream are not
  tied to an HTTP request in the trace, so they are not in the HAR (the OTLP export has them).
- ``timings``: ``wait`` is the logged monotonic time from the request's first message to its last
  answer (0 when unanswered); ``send`` and ``receive`` 0; ``blocked``/``dns``/``connect``/``ssl`` -1.
  ``startedDateTime`` is the first message's logged time (:class:`proxy.exports.exchanges.WallClock`).
- ``_finmcp`` (a custom field, allowed by HAR 1.2): session key, run, sample, turn, trial, the
  JSON-RPC methods.

GET streams and DELETEs carry no JSON-RPC message and are not logged, so they are not in the HAR.
Stdio sessions have no HTTP side.
"""

from __future__ import annotations

from datetime import UTC, datetime
from importlib import metadata
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from finmcp.proxy.exports.exchanges import (
    WallClock,
    header_value,
    http_requests,
    message_trials,
    pair_messages,
    trial_of,
)
from finmcp.recordings.plumbing.flags import DISTRIBUTION
from finmcp.recordings.trace_store import TraceStore

HAR_VERSION = "1.2"


def export_har(store: TraceStore, run_id: str) -> dict[str, Any]:
    """The run's HTTP exchanges as a HAR 1.2 object (``{"log": ...}``)."""
    messages = store.messages(run_id=run_id)
    calls = store.calls(run_id)
    clock = WallClock([(m["t_ns"], m["wall_time"]) for m in messages])
    answers = {
        exchange.request["id"]: exchange.response
        for exchange in pair_messages(messages)
        if exchange.response is not None
    }
    by_request, call_trials = message_trials(messages, calls)
    entries = [
        _entry(
            request, [answers[m["id"]] for m in request if m["id"] in answers], clock, by_request, call_trials
        )
        for request in http_requests(messages)
    ]
    entries.sort(key=lambda e: (e["startedDateTime"], e["_finmcp"]["first_message_id"]))
    return {
        "log": {
            "version": HAR_VERSION,
            "creator": {"name": "finmcp-proxy", "version": _version()},
            "entries": entries,
            "comment": f"finmcp run {run_id}: HTTP exchanges as logged by finmcp-proxy (see docs/proxy.md)",
        }
    }


def _entry(
    request: list[dict[str, Any]],
    answers: list[dict[str, Any]],
    clock: WallClock,
    by_request: dict[int, int],
    call_trials: dict[tuple[Any, Any], set[int]],
) -> dict[str, Any]:
    first = request[0]
    stored = [(str(n), str(v)) for n, v in first["headers"]]
    headers = [(n, v) for n, v in stored if not n.startswith(":")]
    path = header_value(first["headers"], ":path") or "/"
    host = header_value(first["headers"], "host") or "localhost"
    content_type = header_value(first["headers"], "content-type") or "application/json"
    length = header_value(first["headers"], "content-length")
    body = first["body"] if len(request) == 1 else "[" + ",".join(m["body"] for m in request) + "]"
    started = clock.unix_ns(first["t_ns"], first["wall_time"]) or 0
    ends = [a["t_ns"] for a in answers if a["t_ns"] is not None and first["t_ns"] is not None]
    wait_ms = max((max(ends) - first["t_ns"]) / 1e6, 0.0) if ends else 0.0
    answer_text = (
        answers[0]["body"] if len(answers) == 1 else "[" + ",".join(a["body"] for a in answers) + "]"
    )
    content: dict[str, Any] = {"size": 0, "mimeType": "application/json" if answers else ""}
    if answers:
        content["size"] = len(answer_text.encode("utf-8", "surrogatepass"))
        content["text"] = answer_text
    return {
        "startedDateTime": _iso(started),
        "time": wait_ms,
        "request": {
            "method": header_value(first["headers"], ":method") or "POST",
            "url": f"http://{host}{path}",
            "httpVersion": "",
            "cookies": _cookies(header_value(first["headers"], "cookie")),
            "headers": [{"name": n, "value": v} for n, v in headers],
            "queryString": [{"name": n, "value": v} for n, v in parse_qsl(urlsplit(path).query)],
            "postData": {"mimeType": content_type, "params": [], "text": body},
            "headersSize": -1,
            "bodySize": int(length) if length and length.strip().isdigit() else -1,
        },
        "response": {
            "status": 0,
            "statusText": "",
            "httpVersion": "",
            "cookies": [],
            "headers": [],
            "content": content,
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": -1,
            "comment": "status, headers and framing of responses are not logged by finmcp-proxy",
        },
        "cache": {},
        "timings": {
            "blocked": -1,
            "dns": -1,
            "connect": -1,
            "send": 0,
            "wait": wait_ms,
            "receive": 0,
            "ssl": -1,
        },
        "_finmcp": {
            "session_key": first["session_key"],
            "run_id": first["run_id"],
            "sample_id": first["sample_id"],
            "turn": first["turn"],
            "trial": trial_of(first, by_request, call_trials),
            "methods": [m["method"] for m in request],
            "first_message_id": first["id"],
        },
    }


def _cookies(header: str | None) -> list[dict[str, str]]:
    out = []
    for part in (header or "").split(";"):
        name, sep, value = part.strip().partition("=")
        if sep and name:
            out.append({"name": name, "value": value})
    return out


def _iso(unix_ns: int) -> str:
    moment = datetime.fromtimestamp(unix_ns // 1_000_000_000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{unix_ns % 1_000_000_000 // 1000:06d}Z"


def _version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "0"
