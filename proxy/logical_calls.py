"""Logical tool calls that span several wire requests (2026-07-28 ``input_required``, the Tasks extension).

One tool call of the newest protocol can take several JSON-RPC requests:

- **input_required** (multi-round): the ``tools/call`` result is ``{"resultType": "input_required",
  "inputRequests": ..., "requestState": ...}``; the client answers by sending ``tools/call`` again
  (a new request id) with the same tool, ``inputResponses`` and the ``requestState`` echoed verbatim.
  The retry is matched by that token (the protocol's own), else by the same tool and arguments.
- **tasks** (2025-11-25 core, the ``io.modelcontextprotocol/tasks`` extension from 2026-07-28): the
  ``tools/call`` result is a task handle, ``{"task": {"taskId": ...}}`` (``resultType: "task"`` in
  2026-07-28); the client polls ``tasks/get {taskId}`` until a terminal status and fetches the
  answer with ``tasks/result {taskId}`` (or stops it with ``tasks/cancel``).

:class:`Correlator` decides, message by message, which wire requests are hops of which logical
call. It holds no clock and no trace: the proxy's tracer (:mod:`proxy.capture`) uses it live, and
:func:`link_hops` replays it over a session's logged messages to list each call's hops
(:func:`hops_of`: a call row's hop message rows from a trace store). A logical
call is keyed by its first request's id; ``T`` is whatever the caller keeps per call.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

if TYPE_CHECKING:
    from finmcp.recordings.trace_store_api import TraceStore
    from finmcp.recordings.trace_types import MessageDict

T = TypeVar("T")

TASK_METHODS = frozenset({"tasks/get", "tasks/result", "tasks/cancel"})
TERMINAL = frozenset({"completed", "failed", "cancelled"})

Verdict = Literal["final", "parked"]
MAX_OPEN = 10_000
"""Logical calls a proxy keeps open between hops; past it the oldest is given up (a client that never
came back must not grow the proxy without bound)."""


@dataclass(slots=True)
class Answer:
    """What a hop's answer means for its logical call.

    ``parked``: an interim answer (input asked, task handle, task still working): the call goes on.
    ``final``: the call ends with ``result`` or ``rpc_error`` (``status`` None: from the answer).
    """

    verdict: Verdict
    result: dict[str, Any] | None = None
    rpc_error: Any = None
    status: str | None = None
    evicted: list[Any] = field(default_factory=list)
    """Calls given up to keep at most ``limit`` open (the caller finishes them as failed)."""


@dataclass(slots=True)
class _Open(Generic[T]):
    call: T
    first_id: str
    tool: str
    arguments: Any
    token: str | None = None  # the requestState the retry must echo
    task_id: str | None = None
    completed: bool = False  # tasks/get said completed: the answer comes with tasks/result
    by_args: bool = False  # parked under its tool and arguments (no requestState)


def _args_key(arguments: Any) -> str:
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)


def task_handle(result: Any) -> str | None:
    """The task id of a ``tools/call`` result that is a task handle (not yet the tool's answer)."""
    if not isinstance(result, Mapping) or "content" in result:
        return None
    task = result.get("task")
    kind = result.get("resultType")
    if isinstance(task, Mapping) and isinstance(task.get("taskId"), str) and kind in (None, "task"):
        return str(task["taskId"])
    return None


def input_required(result: Any) -> bool:
    """True for a 2026-07-28 ``input_required`` interim result."""
    return isinstance(result, Mapping) and result.get("resultType") == "input_required"


class Correlator(Generic[T]):
    """Which wire requests of one proxy (all sessions) belong to which logical call.

    Calls are keyed ``(session key, first request id text)``; hops by ``(session key, request id text)``.
    """

    def __init__(self, limit: int = MAX_OPEN) -> None:
        self.limit = limit
        self._order: dict[int, tuple[str, _Open[T]]] = {}  # open calls between hops, oldest first
        self._by_token: dict[tuple[str, str], _Open[T]] = {}
        self._by_args: dict[tuple[str, str, str], list[_Open[T]]] = {}
        self._by_task: dict[tuple[str, str], _Open[T]] = {}
        self._firsts: dict[tuple[str, str], tuple[T, str, Any]] = {}  # first request -> (call, tool, args)
        self._inflight: dict[tuple[str, str], tuple[_Open[T], str]] = {}  # later hop -> (call, method)

    @property
    def open_calls(self) -> int:
        """Logical calls between hops (awaiting the client's next request)."""
        return len(self._order)

    def first(self, session: str, id_text: str, call: T, tool: str, arguments: Any) -> None:
        """A ``tools/call`` that starts a (possibly logical) call: its answer is judged by :meth:`answer`."""
        self._firsts[(session, id_text)] = (call, tool, arguments)

    def forget(self, session: str, id_text: str) -> None:
        """The request with this id will get no answer (it failed in transport): stop following it."""
        self._firsts.pop((session, id_text), None)
        self._inflight.pop((session, id_text), None)

    def hop(self, session: str, id_text: str, method: str | None, params: Any) -> T | None:
        """The logical call this client request continues, if it is a hop of one (else None)."""
        if type(params) is not dict:  # parsed JSON: a dict or nothing to follow
            return None
        entry: _Open[T] | None = None
        if method == "tools/call" and ("inputResponses" in params or "requestState" in params):
            token = params.get("requestState")
            if isinstance(token, str):
                entry = self._by_token.pop((session, token), None)
            name = params.get("name")
            if entry is None and isinstance(name, str):
                key = (session, name, _args_key(params.get("arguments")))
                queue = self._by_args.get(key)
                if queue:
                    entry = queue.pop(0)
                    entry.by_args = False
                    if not queue:
                        del self._by_args[key]
            if entry is not None:  # in flight again: no longer waiting for the client
                self._order.pop(id(entry), None)
        elif method in TASK_METHODS:
            task_id = params.get("taskId")
            if isinstance(task_id, str):
                entry = self._by_task.get((session, task_id))
        if entry is None:
            return None
        self._inflight[(session, id_text)] = (entry, method or "")
        return entry.call

    def answer(self, session: str, id_text: str, obj: Mapping[str, Any]) -> Answer | None:
        """Judge the answer (a JSON-RPC response or error object) to a first request or a hop.

        None: the caller finishes the call with this answer as it is (a call of one request, the
        usual case, costs a dict lookup or two), or the request is not one this correlator follows.
        """
        first = self._firsts.pop((session, id_text), None)
        if first is not None:
            result = obj.get("result")
            if type(result) is not dict or (
                "content" in result and result.get("resultType") in (None, "complete")
            ):
                return None
            entry = _Open(first[0], id_text, first[1], first[2])
            method = "tools/call"
        else:
            found = self._inflight.pop((session, id_text), None)
            if found is None:
                return None
            entry, method = found
        if "error" in obj:
            self._close(session, entry)
            return Answer("final", rpc_error=obj.get("error"))
        result = obj.get("result")
        if method == "tools/call":
            if input_required(result):
                token = result.get("requestState") if isinstance(result, Mapping) else None
                if isinstance(token, str):
                    entry.token = token
                    self._by_token[(session, token)] = entry
                else:
                    entry.by_args = True
                    self._by_args.setdefault((session, entry.tool, _args_key(entry.arguments)), []).append(
                        entry
                    )
                return self._park(session, entry)
            task_id = task_handle(result)
            if task_id is not None:
                entry.task_id = task_id
                self._by_task[(session, task_id)] = entry
                return self._park(session, entry)
            return self._final(session, entry, result)
        if method == "tasks/result":
            return self._final(session, entry, result)
        status = result.get("status") if isinstance(result, Mapping) else None
        if method == "tasks/cancel" or status == "cancelled":
            self._close(session, entry)
            return Answer("final", rpc_error={"code": None, "message": "task cancelled"}, status="cancelled")
        if status == "failed":
            self._close(session, entry)
            message = result.get("statusMessage") if isinstance(result, Mapping) else None
            return Answer("final", rpc_error={"code": None, "message": f"task failed: {message or ''}"})
        if status == "completed":
            entry.completed = True
            inline = result.get("result") if isinstance(result, Mapping) else None
            if isinstance(inline, Mapping):  # a tasks/get that carries the answer itself
                return self._final(session, entry, inline)
        return self._park(session, entry)  # still working: polled, so the newest open call

    def _park(self, session: str, entry: _Open[T]) -> Answer:
        """``entry`` waits for the client's next hop; the oldest open calls past ``limit`` are given up."""
        self._order.pop(id(entry), None)
        self._order[id(entry)] = (session, entry)
        answer = Answer("parked")
        while len(self._order) > self.limit:
            oldest_session, oldest = self._order[next(iter(self._order))]
            self._close(oldest_session, oldest)
            answer.evicted.append(oldest.call)
        return answer

    def _final(self, session: str, entry: _Open[T], result: Any) -> Answer:
        self._close(session, entry)
        return Answer("final", result=result if isinstance(result, dict) else {"content": result})

    def _close(self, session: str, entry: _Open[T]) -> None:
        self._order.pop(id(entry), None)
        if entry.task_id is not None and self._by_task.get((session, entry.task_id)) is entry:
            del self._by_task[(session, entry.task_id)]
        if entry.token is not None and self._by_token.get((session, entry.token)) is entry:
            del self._by_token[(session, entry.token)]
        if entry.by_args:
            entry.by_args = False
            key = (session, entry.tool, _args_key(entry.arguments))
            queue = self._by_args.get(key, [])
            if entry in queue:
                queue.remove(entry)
            if not queue:
                self._by_args.pop(key, None)

    def drop_session(self, session: str) -> list[T]:
        """Forget a session's logical calls (it ended); the calls that were between hops."""
        out: list[T] = []
        for owner, entry in list(self._order.values()):
            if owner == session:
                self._close(owner, entry)
                out.append(entry.call)
        for hop_key in [k for k in self._inflight if k[0] == session]:
            del self._inflight[hop_key]
        for first_key in [k for k in self._firsts if k[0] == session]:
            del self._firsts[first_key]
        return out


def link_hops(messages: Iterable[Mapping[str, Any]]) -> dict[Any, list[Any]]:
    """Each logical call's hops from one session's logged message rows (in ``seq`` order).

    ``messages`` are rows as the trace store reads them (``direction``, ``kind``, ``method``,
    ``jsonrpc_id``, ``body``); the answer maps each ``tools/call``'s first request id to the ids of
    its later wire requests, in order (``[]`` for a call of one request). The same rules as the live
    proxy: the protocol's own tokens (``requestState``, ``taskId``) link them. Request ids are only
    unique within a session: rows of more than one session raise ``ValueError``.
    """
    correlator: Correlator[Any] = Correlator()
    out: dict[Any, list[Any]] = {}
    sessions: set[Any] = set()
    for row in messages:
        sessions.add(row.get("session_key"))
        if len(sessions) > 1:
            raise ValueError(
                f"link_hops takes one session's messages, got sessions {sorted(map(str, sessions))}"
            )
        rid = row.get("jsonrpc_id")
        body = row.get("body")
        if rid is None or not isinstance(body, str | bytes):
            continue
        try:
            obj = json.loads(body)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        id_text = json.dumps(rid, ensure_ascii=False)
        session = ""
        if row.get("direction") == "c2s" and row.get("kind") == "request":
            first = correlator.hop(session, id_text, row.get("method"), obj.get("params"))
            if first is not None:
                out[first].append(rid)
            elif row.get("method") == "tools/call":
                params = obj.get("params")
                params = params if isinstance(params, dict) else {}
                tool = params.get("name")
                tool = tool if isinstance(tool, str) else json.dumps(tool)
                correlator.first(session, id_text, rid, tool, params.get("arguments"))
                out[rid] = []
        elif row.get("direction") == "s2c" and row.get("kind") in ("response", "error"):
            correlator.answer(session, id_text, obj)
    return out


def hops_of(store: TraceStore, call: Mapping[str, Any]) -> list[MessageDict]:
    """The message rows of a call row's later wire hops (requests and their answers), in order.

    ``call`` is a row from ``store.calls(...)``; ``store`` any trace store (SQLite or PostgreSQL). A call
    of one request has none. Reads the call's session's messages once.
    """
    messages = store.messages(session_key=call["session_key"])
    ids = set(map(_id_key, link_hops(messages).get(call["jsonrpc_id"], [])))
    return [m for m in messages if m["jsonrpc_id"] is not None and _id_key(m["jsonrpc_id"]) in ids]


def _id_key(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
