"""``--otlp-endpoint URL``: the proxy's calls sent live to an OpenTelemetry collector, off its path.

The proxy's promise is unchanged: a call's row is committed to its SQLite file before its answer is
forwarded. A :class:`LiveOtlp` thread, with its own read-only connection to that file, looks for
finished calls every ``interval`` seconds and POSTs them as OTLP/JSON (``application/json``, the
encoding of :mod:`proxy.exports.otlp`: same span names, attributes, ids and exact durations as
``finmcp-proxy export --format otlp``) to the endpoint, ``batch`` calls per request.

- What is sent: ``tools/call`` spans of calls logged after the proxy started, once each, when they
  are no longer ``pending``. A tagged call goes to its (run, sample, trial) trace, the trace a file
  export of the same run gives it; a call without a sample tag goes to one trace per session
  (:func:`proxy.exports.otlp.session_trace_id`), which the file export leaves out.
- Collector down or answering non-2xx: nothing on the proxy's path notices; the batch is retried with
  backoff (``RETRY_FIRST`` doubling up to ``RETRY_MAX`` seconds), one log line when sending pauses and
  one when it resumes, and no call is skipped. At a clean stop the thread sends what is left for up
  to ``DRAIN_TIMEOUT`` seconds. The rows stay in the file whatever happens: ``export --format otlp``
  sends a whole run again.
- ``/healthz`` shows ``otlp``: state, the endpoint (credentials removed), spans sent, calls waiting.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

from finmcp.proxy.exports.exchanges import WallClock
from finmcp.proxy.exports.otlp import SessionFacts, call_span, request_document, session_trace_id
from finmcp.recordings.errors import RecordingsError
from finmcp.recordings.redact import redact_url
from finmcp.recordings.trace_store import SqliteTraceStore
from finmcp.recordings.trace_types import MessageDict, SessionDict

log = logging.getLogger("finmcp.proxy.otlp")
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
"""No ``http_proxy`` from the environment: the collector is reached directly, as the upstream is."""

DEFAULT_INTERVAL = 1.0
DEFAULT_BATCH = 512
RETRY_FIRST = 0.25
RETRY_MAX = 5.0
DRAIN_TIMEOUT = 5.0
POST_TIMEOUT = 5.0


def check_endpoint(url: str) -> str:
    """``url`` when it is an http(s) URL with a host, else ValueError with the reason."""
    scheme, _, rest = url.partition("://")
    if scheme not in ("http", "https") or not rest or rest.startswith("/"):
        raise ValueError(f"{url!r}: expected an OTLP/HTTP traces URL, e.g. http://127.0.0.1:4318/v1/traces")
    return url


class LiveOtlp:
    """Sends the finished calls of the trace store at ``db`` to ``endpoint``; :meth:`start` / :meth:`stop`."""

    def __init__(
        self,
        db: str,
        endpoint: str,
        *,
        headers: Sequence[tuple[bytes, bytes]] = (),
        interval: float = DEFAULT_INTERVAL,
        batch: int = DEFAULT_BATCH,
    ) -> None:
        self.db = db
        self.endpoint = check_endpoint(endpoint)
        self.headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in headers}
        self.interval = interval
        self.batch = batch
        self.sent_spans = 0
        self.state = "starting"
        self.last_error: str | None = None
        self._low = 0  # every call with an id <= _low is sent (or was logged before the start)
        self._sent_above: set[int] = set()  # ids > _low already sent (a pending call holds _low back)
        self._waiting = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._store: SqliteTraceStore | None = None

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> None:
        """Open the file read-only, skip the calls already in it, and send on a daemon thread."""
        self._store = SqliteTraceStore.open_readonly(self.db)
        self._low = self._store.change_cursor()
        self.state = "sending"
        self._thread = threading.Thread(target=self._run, name="finmcp-otlp", daemon=True)
        self._thread.start()

    def stop(self, drain_timeout: float = DRAIN_TIMEOUT) -> None:
        """Send what is finished (for up to ``drain_timeout`` seconds), then stop the thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(drain_timeout + POST_TIMEOUT + 1)
        if self._store is not None:
            self._store.close()
            self._store = None

    def status(self) -> dict[str, Any]:
        """The ``/healthz`` view: state, endpoint (credentials removed), spans sent, calls waiting."""
        out: dict[str, Any] = {
            "state": self.state,
            "endpoint": redact_url(self.endpoint),
            "spans_sent": self.sent_spans,
            "calls_waiting": self._waiting,
        }
        if self.last_error:
            out["last_error"] = self.last_error
        return out

    # ---------------------------------------------------------------- the loop

    def _run(self) -> None:
        delay = RETRY_FIRST
        drain_until: float | None = None
        while True:
            if self._stop.is_set() and drain_until is None:
                drain_until = time.monotonic() + DRAIN_TIMEOUT
            try:
                sent = self.send_once()
            except (OSError, RecordingsError, urllib.error.URLError) as exc:
                if self.state != "retrying":
                    log.warning("otlp: sending to %s paused: %s", redact_url(self.endpoint), exc)
                self.state, self.last_error = "retrying", str(exc)
                if drain_until is not None and time.monotonic() >= drain_until:
                    return
                time.sleep(min(delay, max(drain_until - time.monotonic(), 0)) if drain_until else delay)
                delay = min(delay * 2, RETRY_MAX)
                continue
            if self.state == "retrying":
                log.warning("otlp: sending to %s resumed", redact_url(self.endpoint))
            self.state, self.last_error, delay = "sending", None, RETRY_FIRST
            if sent >= self.batch:
                continue  # more is waiting
            if drain_until is not None:
                return
            self._stop.wait(self.interval)

    def send_once(self) -> int:
        """Send the next finished calls (at most ``batch``); returns how many spans went out."""
        assert self._store is not None, "start() first"
        calls = []
        for logged in self._store.calls_after(self._low, self.batch * 4):
            logged.call["_id_text"] = logged.jsonrpc_id_text  # as the messages table holds it
            calls.append(logged.call)
        ready = [c for c in calls if c["status"] != "pending" and c["id"] not in self._sent_above]
        ready = ready[: self.batch]
        self._waiting = sum(1 for c in calls if c["id"] not in self._sent_above)
        if ready:
            self._post(self._document(ready))
            self.sent_spans += len(ready)
            self._sent_above.update(c["id"] for c in ready)
            self._waiting -= len(ready)
        for call in calls:  # move the low-water mark over the finished prefix
            if call["id"] not in self._sent_above:
                break
            self._low = call["id"]
            self._sent_above.discard(call["id"])
        return len(ready)

    def _document(self, calls: list[dict[str, Any]]) -> dict[str, Any]:
        assert self._store is not None
        keys = sorted({c["session_key"] for c in calls if c["session_key"] is not None})
        sessions: dict[str, SessionDict] = {}
        requests: dict[tuple[str, str], MessageDict] = {}
        for key in keys:
            session = self._store.session(key)
            if session is not None:
                sessions[key] = session
        for call in calls:
            found = self._store.tools_call_request(call["session_key"], call["_id_text"])
            if found is not None:
                requests[(call["session_key"], call["_id_text"])] = found
        clock = WallClock([(c["t_req_ns"], c["wall_time"]) for c in calls])
        context = SessionFacts(list(requests.values()), sessions)
        spans = []
        for call in calls:
            request = requests.get((call["session_key"], call["_id_text"]))
            trace = None if call["sample_id"] is not None else session_trace_id(call["session_key"])
            spans.append(call_span(call["run_id"] or "", call, request, clock, context, trace))
        return request_document(spans, {})

    def _post(self, document: dict[str, Any]) -> None:
        body = json.dumps(document, ensure_ascii=False).encode("utf-8")
        request = urllib.request.Request(
            self.endpoint,
            data=body,
            method="POST",
            headers={**self.headers, "Content-Type": "application/json"},
        )
        with _OPENER.open(request, timeout=POST_TIMEOUT) as reply:
            if not 200 <= reply.status < 300:
                raise OSError(f"the collector answered HTTP {reply.status}")
            reply.read()
