"""What the standard exports share: a run's logged rows as exchanges, HTTP requests and wall-clock times.

- :func:`pair_messages`: each request with its response (per session, by JSON-RPC id, in ``seq``
  order, so a reused id pairs with the answer that followed it); notifications and unanswered requests
  stand alone. A response or error with no request before it in its session is dropped.
- :func:`http_requests`: the messages of each HTTP request the proxy logged. The proxy stores the
  request's headers (with ``:method`` and ``:path`` first) on the first message of each POST body, so
  a message with headers starts a request and the client messages after it without headers (the rest
  of a batch) belong to it.
- :class:`WallClock`: unix nanoseconds for a logged monotonic time. Each row holds a monotonic time
  and the wall time read at the same moment; rows whose offsets (wall minus monotonic) lie within
  :data:`CLUSTER_GAP_NS` of each other share one anchor (the median offset of the cluster), so every
  duration is exactly the monotonic difference. One machine's processes share ``CLOCK_MONOTONIC``
  and so one cluster; another machine, or a stepped wall clock, starts another.
- :func:`trial_of`: the trial a message belongs to (the ``messages`` table has no trial column).
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from finmcp.proxy.tags import TagError, Tags, header_tags, split_path

CLUSTER_GAP_NS = 50_000_000
"""Offsets (wall − monotonic) closer than this belong to one clock: 50 ms, far above a read's jitter."""
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def wall_ns(text: str | None) -> int | None:
    """Unix nanoseconds of a stored wall time (``2026-05-09T07:35:25.123456Z``); None when absent or unreadable."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


class WallClock:
    """Maps logged monotonic nanoseconds to unix nanoseconds (see the module docstring)."""

    def __init__(self, pairs: Iterable[tuple[int | None, str | None]]) -> None:
        offsets = sorted(
            wall - mono for mono, text in pairs if mono is not None and (wall := wall_ns(text)) is not None
        )
        self._starts: list[int] = []  # smallest offset of each cluster
        self._anchors: list[int] = []  # median offset of each cluster
        cluster: list[int] = []
        for offset in offsets:
            if cluster and offset - cluster[-1] > CLUSTER_GAP_NS:
                self._close(cluster)
                cluster = []
            cluster.append(offset)
        if cluster:
            self._close(cluster)

    def _close(self, cluster: list[int]) -> None:
        self._starts.append(cluster[0])
        self._anchors.append(cluster[len(cluster) // 2])

    def unix_ns(self, mono: int | None, wall: str | None) -> int | None:
        """Unix ns of a row's monotonic time, anchored by its cluster; its wall time when it has no monotonic one."""
        stamped = wall_ns(wall)
        if mono is None:
            return stamped
        if stamped is None or not self._anchors:
            return None
        index = max(bisect.bisect_right(self._starts, stamped - mono) - 1, 0)
        return mono + self._anchors[index]


@dataclass
class Exchange:
    """A request (or a notification) and, when one was logged, its response or error."""

    request: dict[str, Any]
    response: dict[str, Any] | None = None


def pair_messages(messages: Sequence[dict[str, Any]]) -> list[Exchange]:
    """Requests with their responses, notifications alone, in logged order (see the module docstring)."""
    out: list[Exchange] = []
    pending: dict[tuple[Any, str, str], Exchange] = {}
    for message in sorted(messages, key=_order):
        kind = message["kind"]
        if kind == "notification":
            out.append(Exchange(message))
        elif kind == "request":
            exchange = Exchange(message)
            out.append(exchange)
            pending[(message["session_key"], message["direction"], _id_text(message))] = exchange
        elif kind in ("response", "error"):
            asker = "s2c" if message["direction"] == "c2s" else "c2s"
            found = pending.pop((message["session_key"], asker, _id_text(message)), None)
            if found is not None:
                found.response = message
    return out


def http_requests(messages: Sequence[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The client messages of each logged HTTP request, in order (see the module docstring)."""
    out: list[list[dict[str, Any]]] = []
    open_in: dict[Any, list[dict[str, Any]]] = {}
    for message in sorted(messages, key=_order):
        if message["direction"] != "c2s":
            continue
        session = message["session_key"]
        if message["headers"] is not None:
            open_in[session] = [message]
            out.append(open_in[session])
        elif session in open_in:
            open_in[session].append(message)
    return out


def header_value(headers: Sequence[Sequence[str]] | None, name: str) -> str | None:
    """The last value of header ``name`` (case-insensitive) among stored ``[[name, value], ...]``."""
    found = None
    for pair in headers or ():
        if len(pair) == 2 and str(pair[0]).lower() == name:
            found = str(pair[1])
    return found


_UNNAMED = -1


def request_trial(headers: Sequence[Sequence[str]] | None) -> int | None:
    """The trial tag a stored request named in its ``:path`` or ``X-Finmcp-Trial`` header; None when it
    named none (the proxy's ``--trial`` default is not in the trace)."""
    if not headers:
        return None
    try:
        tags, _rest = split_path((header_value(headers, ":path") or "/").split("?")[0], Tags(trial=_UNNAMED))
        pairs = [(str(n).lower().encode("latin-1"), str(v).encode("latin-1")) for n, v in headers]
        tags = header_tags(tags, pairs)
    except (TagError, UnicodeEncodeError):
        return None
    return None if tags.trial == _UNNAMED else tags.trial


def trial_of(
    message: dict[str, Any], by_request: dict[int, int], call_trials: dict[tuple[Any, Any], set[int]]
) -> int:
    """A message's trial: its HTTP request's trial tag, else the one trial of its session's calls for
    that sample, else 0."""
    if message["id"] in by_request:
        return by_request[message["id"]]
    trials = call_trials.get((message["session_key"], message["sample_id"]), set())
    return next(iter(trials)) if len(trials) == 1 else 0


def message_trials(
    messages: Sequence[dict[str, Any]], calls: Sequence[dict[str, Any]]
) -> tuple[dict[int, int], dict[tuple[Any, Any], set[int]]]:
    """The inputs of :func:`trial_of`: message id → trial tag of its HTTP request (when it named one),
    and (session, sample) → the trials of its calls."""
    by_request: dict[int, int] = {}
    for request in http_requests(messages):
        trial = request_trial(request[0]["headers"])
        if trial is not None:
            for message in request:
                by_request[message["id"]] = trial
    call_trials: dict[tuple[Any, Any], set[int]] = {}
    for call in calls:
        call_trials.setdefault((call["session_key"], call["sample_id"]), set()).add(int(call["trial"] or 0))
    return by_request, call_trials


def body_object(message: dict[str, Any] | None) -> dict[str, Any]:
    """A logged message's JSON object (``{}`` when absent, unparseable or not an object)."""
    if message is None:
        return {}
    try:
        value = json.loads(message["body"])
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _order(message: dict[str, Any]) -> tuple[str, int, int]:
    return (str(message["session_key"]), message["seq"] if message["seq"] is not None else -1, message["id"])


def _id_text(message: dict[str, Any]) -> str:
    return json.dumps(message["jsonrpc_id"], ensure_ascii=False)
