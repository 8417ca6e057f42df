"""``Tracer``: turns the messages the proxy forwards into trace rows (messages, sessions, calls).

Transport code (HTTP or stdio) hands every message it forwards to the tracer and never waits for
SQLite, except for one thing: the future returned by :meth:`Tracer.server_message` for a
``tools/call`` response resolves once that call's row is committed, and the transport forwards the
response only after it. Everything else is queued to the :class:`proxy.writer.TraceWriter`.

Rows are prepared (checked, redacted, encoded) when their message arrives, so the request's share
of that work is done while the upstream computes the answer. A call whose pending row is still
queued when its response arrives is written with one ``INSERT`` of the finished row. Message rows
are deferred: they are committed within the writer's ``linger`` (20 ms), never in the commit a
response waits for.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from finmcp.proxy.baseline import NOTE_METHOD, BaselineWatch
from finmcp.proxy.declare import Declared, call_notification
from finmcp.proxy.grouping import Channel, GroupAssigner, Placement
from finmcp.proxy.jsonrpc import (
    CLIENT_INFO_META,
    GROUP_META,
    PROTOCOL_VERSION_META,
    TAG_META,
    Message,
    classify,
)
from finmcp.proxy.logical_calls import TASK_METHODS, Correlator
from finmcp.proxy.tags import TagError, Tags
from finmcp.proxy.writer import TraceWriter
from finmcp.recordings.errors import InvalidValueError
from finmcp.recordings.plumbing.protocol import HANDSHAKE_ERA_LABEL, era_label
from finmcp.recordings.redact import redact_value
from finmcp.recordings.store import RecordingStore
from finmcp.recordings.trace_rows import CallRow, MessageRow, call_row, message_row, prepare_outcome
from finmcp.recordings.trace_store import SqliteTraceStore

log = logging.getLogger("finmcp.proxy")

_wall_cache: list[Any] = [-1, ""]


def wall_iso(ns: int | None = None) -> str:
    """UTC ISO-8601 text with microseconds and ``Z`` (as :func:`recordings.clock.utc_now_iso`), cached per second."""
    micros = (time.time_ns() if ns is None else ns) // 1000
    second, fraction = divmod(micros, 1_000_000)
    if second != _wall_cache[0]:
        _wall_cache[0] = second
        _wall_cache[1] = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
    return f"{_wall_cache[1]}.{fraction:06d}Z"


@dataclass(slots=True)
class Session:
    """What the proxy knows about one client session (handshake era) or client key (stateless era)."""

    key: str
    transport: str
    run: str | None = None
    client_name: str | None = None
    client_version: str | None = None
    protocol_version: str | None = None
    era: str | None = None
    cancelled: set[str] = field(default_factory=set)
    resuming: set[str] = field(default_factory=set)
    """Ids of calls whose POST stream ended resumable before the answer (SEP-1699): it comes on a GET."""


@dataclass(slots=True)
class PendingCall:
    """A ``tools/call`` awaiting its response."""

    session: Session
    id_text: str
    request_id: Any
    tool: str
    arguments: Any
    tags: Tags
    t_req_ns: int
    placement: Placement
    prepared: CallRow | None = None  # the row to insert (finished in place while still queued)
    written: bool = False  # the writer has run the INSERT (row_id None: it failed)
    row_id: int | None = None
    done: bool = False
    delivered: bool = False  # its answer has been written to the client
    parked: bool = False  # a logical call between hops: its last hop was answered, the next is to come
    progress_token: Any = None  # the request's _meta.progressToken (record mode ties progress to it)
    notifications: list[dict[str, Any]] | None = None  # record mode: progress/log sent while answering


class Tracer:
    """Shared by every connection of one proxy process; used only from the event loop."""

    def __init__(
        self,
        writer: TraceWriter,
        upstream: str,
        gap_ms: float = 30.0,
        recorder: Recorder | None = None,
        sequence: bool = True,
    ) -> None:
        self.writer = writer
        self.upstream = upstream
        self.groups = GroupAssigner(gap_ms, sequence)
        self.recorder = recorder
        self.sessions: dict[str, Session] = {}
        self.pending: dict[tuple[str, str], PendingCall] = {}
        self.calls_seen = 0
        self.calls_done = 0
        self.baseline: BaselineWatch | None = None  # --tool-baseline (proxy/baseline.py)
        self.faults: Any = None  # --fault-schedule: its tool globs are checked against the first tools/list
        self.logical: Correlator[PendingCall] = Correlator()  # calls spanning several wire requests

    # ---------------------------------------------------------------- sessions

    def session(self, key: str, transport: str, tags: Tags) -> Session:
        """The session with this key, created (and logged) on first sight."""
        session = self.sessions.get(key)
        if session is None:
            session = self.sessions[key] = Session(key, transport, tags.run)
            fields = {"run_id": tags.run, "transport": transport, "upstream": self.upstream}
            self.writer.submit(lambda store: store.start_session(key, **fields))
        return session

    def rename_session(self, old: str, new: str) -> Session:
        """Re-key a provisional session (e.g. once the upstream named the session id)."""
        session = self.sessions.pop(old, None)
        if session is None:
            raise KeyError(old)
        session.key = new
        self.sessions[new] = session
        fields = {
            "run_id": session.run,
            "transport": session.transport,
            "upstream": self.upstream,
            "client_name": session.client_name,
            "client_version": session.client_version,
            "protocol_version": session.protocol_version,
            "era": session.era,
        }
        self.writer.submit(lambda store: store.start_session(new, **fields))
        return session

    def end_session(self, key: str) -> None:
        """Stamp a session's end (DELETE, stdio EOF); calls still awaiting a resumed stream fail."""
        session = self.sessions.get(key)
        if session is None:
            return
        for call in self.pending_for(key, list(session.resuming)):
            self.fail(call, "transport_error", "the session ended before the resumed stream answered")
        for call in self.logical.drop_session(key):
            call.parked = False
            self.fail(call, "transport_error", "the session ended before the logical call's last hop")
        self.writer.submit(lambda store: store.end_session(key))

    def await_resumption(self, call: PendingCall) -> None:
        """``call``'s stream ended resumable (an event id, SEP-1699): its answer may come on a GET stream."""
        if not call.done:
            call.session.resuming.add(call.id_text)

    def resumed_call(self, session: Session, id_text: str) -> PendingCall | None:
        """The call awaiting a resumed stream that a response with this id answers, if any."""
        if id_text not in session.resuming:
            return None
        return self.pending.get((session.key, id_text))

    def fail_pending(self, reason: str) -> None:
        """Finish every call still awaiting its answer as a transport error (the proxy is stopping)."""
        for call in list(self.pending.values()):
            self.fail(call, "transport_error", reason)
        for key in list(self.sessions):
            for call in self.logical.drop_session(key):
                call.parked = False
                self.fail(call, "transport_error", reason)

    def _learn_client(self, session: Session, msg: Message) -> None:
        """Client name/version, protocol version and era from ``initialize`` or 2026 ``_meta``."""
        changed: dict[str, Any] = {}
        if msg.method == "initialize":
            params = msg.params
            info = params.get("clientInfo")
            version = params.get("protocolVersion")
            era = HANDSHAKE_ERA_LABEL
        else:
            meta = msg.meta
            version = meta.get(PROTOCOL_VERSION_META)
            if version is None:
                return
            info = meta.get(CLIENT_INFO_META)
            era = era_label(version)
        if isinstance(info, dict):
            name, cversion = info.get("name"), info.get("version")
            if isinstance(name, str) and name != session.client_name:
                session.client_name = changed["client_name"] = name
            if isinstance(cversion, str) and cversion != session.client_version:
                session.client_version = changed["client_version"] = cversion
        if isinstance(version, str) and version != session.protocol_version:
            session.protocol_version = changed["protocol_version"] = version
        if era != session.era:
            session.era = changed["era"] = era
        if changed:
            key = session.key
            self.writer.submit(lambda store: store.update_session(key, **changed))

    def _learn_server(self, session: Session, msg: Message, request_method: str | None) -> None:
        """The negotiated version from an ``initialize`` result; tool schemas from ``tools/list``."""
        if msg.kind != "response" or not isinstance(msg.obj.get("result"), dict):
            return
        result = msg.obj["result"]
        if request_method == "initialize":
            version = result.get("protocolVersion")
            if isinstance(version, str) and version != session.protocol_version:
                session.protocol_version = version
                key = session.key
                self.writer.submit(lambda store: store.update_session(key, protocol_version=version))
        baseline = self.baseline if request_method == "tools/list" else None
        if baseline is not None and (found := baseline.observe(session.key, result)):
            body = json.dumps({"finmcp_tool_drift": baseline.note(found)}).encode()
            self.log(session, Tags(run=session.run), "s2c", Message(body, None, "note", method=NOTE_METHOD))
        faults = self.faults if request_method == "tools/list" else None
        if faults is not None and (note := faults.check_tools(result)) is not None:  # --fault-schedule
            self.log(session, Tags(run=session.run), "s2c", note)
        if self.recorder is None:
            return
        if request_method in ("initialize", "server/discover"):
            self.recorder.declared.learn_server(result, discover=request_method == "server/discover")
        elif request_method == "tools/list":
            self.recorder.learn_tools(result.get("tools"))
            self.recorder.declared.learn_listing(session.key, result)

    def _note_for_call(self, session: Session, msg: Message) -> None:
        """Record mode: a progress or log notification joins the call it was sent for (see docs/proxy.md)."""
        note = call_notification(msg.method, msg.params)
        if note is None:
            return
        calls = [c for (key, _), c in self.pending.items() if key == session.key and not c.done]
        token = msg.params.get("progressToken") if msg.method == "notifications/progress" else None
        if token is not None:
            calls = [c for c in calls if c.progress_token == token]
        if len(calls) == 1:  # a log message while several calls run cannot be told apart: not recorded
            call = calls[0]
            call.notifications = (call.notifications or []) + [note]

    # ---------------------------------------------------------------- messages

    def log(
        self,
        session: Session | None,
        tags: Tags,
        direction: str,
        msg: Message,
        headers: Iterable[tuple[bytes, bytes]] | None = None,
        *,
        lazy: bool = False,
        t_ns: int = 0,
        wall: str = "",
    ) -> None:
        """Queue one message row, prepared now (a request, while the upstream works) or when written (``lazy``).

        ``t_ns`` (monotonic) and ``wall`` default to now.
        """
        key = session.key if session else None
        t_ns, wall = t_ns or time.monotonic_ns(), wall or wall_iso()
        if lazy:
            self.writer.submit(
                lambda store: store.write_message(
                    _message_row(direction, msg, key, tags, t_ns, wall, headers)
                ),
                defer=True,
            )
            return
        try:
            row = _message_row(direction, msg, key, tags, t_ns, wall, headers)
        except InvalidValueError as exc:  # never expected; the message is still forwarded
            self.writer.failures += 1
            log.warning("message not logged: %s", exc)
            return
        self.writer.submit(lambda store: store.write_message(row), defer=True)

    def log_raw(self, session: Session | None, tags: Tags, direction: str, raw: bytes) -> None:
        """Queue one message that was not parsed on arrival (it is parsed when the row is written)."""
        key = session.key if session else None
        t_ns = time.monotonic_ns()
        wall = wall_iso()

        def op(store: SqliteTraceStore) -> None:
            try:
                msg = classify(json.loads(raw), raw)
            except (ValueError, UnicodeDecodeError):
                msg = Message(raw, None, "invalid")
            store.write_message(_message_row(direction, msg, key, tags, t_ns, wall))

        self.writer.submit(op, defer=True)

    def log_truncated(
        self, session: Session | None, tags: Tags, prefix: bytes, total: int, sha256: str
    ) -> None:
        """Queue the row of a server→client body over ``--max-answer``: its first bytes, length and hash.

        The body is JSON (kind ``invalid``: not the message as sent), ``{"finmcp_truncated": {"bytes":
        N, "stored": L, "sha256": H}, "prefix": TEXT}``; readers show it like any other body.
        """
        key = session.key if session else None
        t_ns, wall = time.monotonic_ns(), wall_iso()
        marker = {"bytes": total, "stored": len(prefix), "sha256": sha256}
        text = prefix.decode("utf-8", errors="backslashreplace")

        def op(store: SqliteTraceStore) -> None:
            body = json.dumps({"finmcp_truncated": marker, "prefix": text}, ensure_ascii=False).encode()
            store.write_message(_message_row("s2c", Message(body, None, "invalid"), key, tags, t_ns, wall))

        self.writer.submit(op, defer=True)

    def client_message(
        self,
        session: Session,
        tags: Tags,
        msg: Message,
        headers: Iterable[tuple[bytes, bytes]] | None = None,
        arrived_ns: int | None = None,
        channel: Channel | None = None,
    ) -> PendingCall | None:
        """Log a client→server message; a ``tools/call`` request also starts a call row (returned).

        ``arrived_ns``: when the client started the message (the ``sequence`` group rule compares it
        with when earlier answers left; :mod:`proxy.grouping`). ``channel``: the HTTP connection it came
        on (the ``connection`` rule).
        """
        if msg.kind in ("request", "notification"):
            if msg.method == "initialize" or PROTOCOL_VERSION_META in msg.meta:
                self._learn_client(session, msg)
            tags = self._meta_tags(tags, msg)
        t_ns, wall = time.monotonic_ns(), wall_iso()
        self.log(session, tags, "c2s", msg, headers, t_ns=t_ns, wall=wall)
        if msg.kind == "notification" and msg.method == "notifications/cancelled":
            request_id = msg.params.get("requestId")
            if request_id is not None:
                session.cancelled.add(json.dumps(request_id, ensure_ascii=False))
            return None
        if msg.kind != "request":
            return None
        if msg.method == "tools/call" or msg.method in TASK_METHODS:  # a later hop of a logical call?
            parent = self.logical.hop(session.key, msg.id_text or "null", msg.method, msg.params)
            if parent is not None:
                parent.id_text, parent.request_id = msg.id_text or "null", msg.id
                parent.parked = False
                self.pending[(session.key, parent.id_text)] = parent
                return parent
        if msg.method != "tools/call":
            return None
        return self._begin_call(session, tags, msg, t_ns, wall, arrived_ns, channel)

    def _meta_tags(self, tags: Tags, msg: Message) -> Tags:
        meta = msg.meta
        if not meta or not any(k in meta for k in TAG_META):
            return tags
        try:
            return tags.merged(**{TAG_META[k]: str(v) for k, v in meta.items() if k in TAG_META})
        except TagError as exc:
            log.warning("ignoring _meta tags of request %s: %s", msg.id_text, exc)
            return tags

    def _begin_call(
        self,
        session: Session,
        tags: Tags,
        msg: Message,
        t_req: int,
        wall: str,
        arrived_ns: int | None,
        channel: Channel | None,
    ) -> PendingCall:
        params = msg.params
        tool = params.get("name")
        tool = tool if isinstance(tool, str) else json.dumps(tool)
        arguments = params.get("arguments")
        scope = (tags.run, tags.sample, tags.trial, tags.turn)
        placement = self.groups.place(
            scope, session.key, t_req, msg.meta.get(GROUP_META), arrived_ns, channel
        )
        id_text = msg.id_text or "null"
        call = PendingCall(session, id_text, msg.id, tool, arguments, tags, t_req, placement)
        call.progress_token = msg.meta.get("progressToken")
        previous = self.pending.get((session.key, id_text))
        if previous is not None and not previous.done:  # a reused id: the older call never got its answer
            self.fail(previous, "transport_error", "superseded by a new request with the same id")
        self.pending[(session.key, id_text)] = call
        self.logical.first(session.key, id_text, call, tool, arguments)
        self.calls_seen += 1
        try:
            call.prepared = call_row(  # the tracer built every value itself: no checks needed
                tool,
                arguments,
                tags.run,
                tags.sample,
                tags.turn,
                session.key,
                session.client_name,
                session.protocol_version,
                msg.id if isinstance(msg.id, int | str) else None,
                t_req,
                wall,
                None,  # the store numbers the group from its ref, unique in the scope across processes
                placement.source,
                tags.trial,
                group_ref=placement.ref,
            )
        except InvalidValueError as exc:  # e.g. arguments that are not JSON: forwarded, not logged
            call.written = True
            self.writer.failures += 1
            log.warning("call %s not logged: %s", id_text, exc)
            return call

        def op(store: SqliteTraceStore) -> None:
            call.written = True
            assert call.prepared is not None
            call.row_id = store.write_call(call.prepared)

        self.writer.submit(op)
        return call

    def server_message(
        self, session: Session, tags: Tags, msg: Message, request_method: str | None = None
    ) -> asyncio.Future[Any] | None:
        """Log a server→client message; for a call's response, the future of its committed row."""
        call = None
        if msg.kind in ("response", "error") and msg.id is not None:
            call = self.pending.pop((session.key, msg.id_text or "null"), None)
        self._learn_server(session, msg, "tools/call" if call else request_method)
        if msg.kind == "notification" and self.recorder is not None:
            self._note_for_call(session, msg)
        if call is None:
            self.log(session, tags, "s2c", msg)
            return None
        hop = self.logical.answer(session.key, msg.id_text or "null", msg.obj)
        if hop is not None and hop.verdict == "parked":  # the logical call goes on: its next hop comes
            call.parked = True
            for old in hop.evicted:  # past the bound of open logical calls: the oldest is given up
                old.parked = False
                self.fail(old, "transport_error", "finmcp-proxy gave up waiting for its next request")
            self.log(session, call.tags, "s2c", msg)
            return None
        if hop is not None and msg.kind == "response":  # the last hop's answer is the call's answer
            future = self._finish(call, result=hop.result, rpc_error=hop.rpc_error, status=hop.status)
        elif msg.kind == "response":
            result = msg.obj.get("result")
            future = self._finish(call, result=result if isinstance(result, dict) else {"content": result})
        else:  # an error answering a request the client cancelled is the cancellation's echo
            status = "cancelled" if call.id_text in session.cancelled else None
            future = self._finish(call, rpc_error=msg.obj.get("error"), status=status)
        self.log(session, call.tags, "s2c", msg, lazy=True)  # prepared after the response is forwarded
        return future

    def fail(self, call: PendingCall, status: str, reason: str) -> asyncio.Future[Any] | None:
        """Finish a call that got no response (``transport_error`` or ``cancelled``).

        A logical call between hops (``parked``) is not failed: the request that failed was answered.
        """
        if call.parked:
            return None
        if self.pending.get((call.session.key, call.id_text)) is call:
            del self.pending[(call.session.key, call.id_text)]
        self.logical.forget(call.session.key, call.id_text)
        if call.done:
            return None
        if status == "transport_error" and call.id_text in call.session.cancelled:
            status = "cancelled"
        return self._finish(call, rpc_error={"code": None, "message": reason}, status=status)

    def _finish(
        self,
        call: PendingCall,
        result: dict[str, Any] | None = None,
        rpc_error: Any = None,
        status: str | None = None,
    ) -> asyncio.Future[Any] | None:
        if call.done:
            return None
        call.done = True
        call.session.cancelled.discard(call.id_text)
        call.session.resuming.discard(call.id_text)
        t_resp = time.monotonic_ns()
        self.groups.finished(call.placement, t_resp)
        self.calls_done += 1
        latency = (t_resp - call.t_req_ns) / 1e6
        try:
            outcome = prepare_outcome(
                result=result, rpc_error=rpc_error, status=status, t_resp_ns=t_resp, latency_ms=latency
            )
        except InvalidValueError as exc:  # e.g. NaN in the answer, or an error without its object
            reason = f"finmcp-proxy could not store the upstream answer ({exc}); see its message row"
            outcome = prepare_outcome(
                rpc_error={"code": None, "message": reason},
                status="transport_error",
                t_resp_ns=t_resp,
                latency_ms=latency,
            )
        if not call.written and call.prepared is not None:  # its INSERT is still queued: make it final
            call.prepared = call.prepared.finished(outcome)

            def op(store: SqliteTraceStore) -> str | None:
                return outcome.status if call.row_id is not None else None

        else:

            def op(store: SqliteTraceStore) -> str | None:
                if call.row_id is None:  # the INSERT failed; nothing to finish
                    return None
                return store.write_outcome(call.row_id, outcome)

        # with no other call awaiting its answer, no other row could share this commit: write it now
        future = self.writer.submit(op, wait=True, now=not self.pending)
        if self.recorder is not None and status is None:
            if result is not None and rpc_error is None:
                self.recorder.record(call.tool, call.arguments, result, latency)
            self.recorder.record_step(
                call.tool, call.arguments, result, rpc_error, latency, call.notifications
            )
        return future

    def delivered(self, calls: Iterable[PendingCall]) -> None:
        """The answers of these calls have left the proxy (written to the client's connection or stdout)."""
        t_out = 0
        for call in calls:
            if call.done and not call.delivered:
                call.delivered = True
                t_out = t_out or time.monotonic_ns()
                self.groups.delivered(call.placement, t_out)

    def pending_for(self, session_key: str, id_texts: Iterable[str]) -> list[PendingCall]:
        """The still-pending calls of a session among the given request ids."""
        out = []
        for id_text in id_texts:
            call = self.pending.get((session_key, id_text))
            if call is not None:
                out.append(call)
        return out


def _message_row(
    direction: str,
    msg: Message,
    session_key: str | None,
    tags: Tags,
    t_ns: int,
    wall: str,
    headers: Iterable[tuple[bytes, bytes]] | None = None,
) -> MessageRow:
    """A message row of ``msg`` (unchecked: the tracer built every value itself)."""
    msg_id = msg.id
    return message_row(
        direction,
        msg.kind,
        msg.raw,
        session_key,
        tags.run,
        tags.sample,
        tags.turn,
        t_ns,
        wall,
        msg_id if isinstance(msg_id, int | str) else None,
        msg.method,
        headers,
    )


class Recorder:
    """Record mode: upstream answers also become recordings (``recorded:<upstream>``).

    A successful result becomes its key's one answer in ``responses`` (the last one wins); every
    answer, ``isError`` results and JSON-RPC errors included, is appended to its key's sequence in
    ``response_steps`` (sequence replay).
    """

    def __init__(
        self, writer: TraceWriter, store: RecordingStore, inventory: str | None, upstream: str
    ) -> None:
        """``inventory``: the name to store under; None: learned from the upstream (:mod:`proxy.declare`)."""
        self.writer = writer
        self.store = store
        self.provenance = f"recorded:{upstream}"
        self.declared = Declared(
            store, lambda op: writer.submit(lambda _store: op()), self.provenance, inventory
        )
        self.schemas: dict[str, Any] = {}
        self._fallback: dict[str, Any] | None = None
        self.recorded = 0
        self.skipped = 0  # answers that cannot be stored as recordings (no canonical key)
        self.recorded_steps = 0  # answers appended to their key's sequence (errors included)
        self.skipped_steps = 0

    @property
    def inventory(self) -> str:
        """The name answers are stored under (the declared server's)."""
        return self.declared.name

    def learn_tools(self, tools: Any) -> None:
        """Remember input schemas from a ``tools/list`` result (defaults matter for the lookup key)."""
        if not isinstance(tools, list):
            return
        for tool in tools:
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                self.schemas[tool["name"]] = tool.get("inputSchema")

    def _schema(self, tool: str) -> Any:
        if tool in self.schemas:
            return self.schemas[tool]
        if self._fallback is None:
            self._fallback = _inventory_schemas(self.inventory)
        return self._fallback.get(tool)

    def record_step(
        self,
        tool: str,
        arguments: Any,
        result: dict[str, Any] | None,
        rpc_error: Any,
        latency_ms: float,
        notifications: list[dict[str, Any]] | None = None,
    ) -> None:
        """Queue every answer (errors included) as the next step of its key's sequence (sequence replay),
        with the notifications the upstream sent while answering it."""
        stored: dict[str, Any] | None = None
        error: dict[str, Any] | None = None
        if result is not None and rpc_error is None:
            stored = redact_value(
                {k: result[k] for k in ("content", "structuredContent", "isError") if k in result}
            )
        elif isinstance(rpc_error, dict):
            error = redact_value(rpc_error)
        else:
            return
        arguments = {} if arguments is None else arguments
        schema = self._schema(tool)

        def op(_trace_store: SqliteTraceStore) -> None:
            try:
                self.store.append_response_step(
                    self.inventory,
                    tool,
                    arguments,
                    stored,
                    self.provenance,
                    latency_ms,
                    schema,
                    error,
                    notifications=notifications,
                )
            except InvalidValueError as exc:  # not storable as a recording (odd result, no key): logged only
                self.skipped_steps += 1
                log.warning("answer not recorded in its sequence: %s", exc)
                return
            self.recorded_steps += 1

        self.writer.submit(op)

    def record(self, tool: str, arguments: Any, result: dict[str, Any], latency_ms: float) -> None:
        """Queue a recording of a successful (non-``isError``) result."""
        if result.get("isError") or not isinstance(result.get("content"), list):
            return
        if arguments is None:
            arguments = {}
        stored: dict[str, Any] = redact_value(  # secrets the upstream reflected: as in the call row
            {k: result[k] for k in ("content", "structuredContent", "isError") if k in result}
        )
        schema = self._schema(tool)

        def op(_trace_store: SqliteTraceStore) -> None:
            try:
                self.store.put_response(
                    self.inventory, tool, arguments, stored, self.provenance, latency_ms, schema
                )
            except InvalidValueError as exc:  # no key for it (e.g. a lone surrogate): the call row stays
                self.skipped += 1
                log.warning("answer not recorded: %s", exc)
                return
            self.recorded += 1

        self.writer.submit(op)


def _inventory_schemas(name: str) -> dict[str, Any]:
    """Input schemas of a built-in inventory, when ``name`` is one (else none)."""
    try:
        from finmcp.tool_specs.inventory import load_inventory

        return {tool.name: tool.input_schema for tool in load_inventory(name).tools}
    except Exception:  # not a built-in inventory name: record without schema defaults
        return {}
