"""Parallel-group assignment, decided when a call's request arrives.

Groups are numbered 0, 1, 2, ... within one scope ``(run, sample, trial, turn)``, in order of the
first call of each group. These are the process's own numbers: the stored ``call_group`` is given by
the trace store from :attr:`Placement.ref` when the call's row is written, unique in the scope even
when several proxy processes log it (``recordings/trace.py``). A call's group comes from the first
rule that applies:

1. ``explicit``: the request carries ``params._meta["io.finmcp/group"]``; calls of one scope with
   the same value share a group.
2. ``overlap``: within the same client key and scope, a call of the current group is still awaiting
   its response, so the two calls ran concurrently.
3. ``connection`` (HTTP): the client's connections show it sent this call before it had read an
   answer of the current group (sent on another connection within :data:`CONNECTION_WINDOW_MS`).
   Checked only where the sequence or the gap rule would open a new group. The sign is the pool:
   the call came on a connection newer than the one that carried the answer, which still lies
   quiet (open, idle, nothing from the client since the answer). An HTTP/1.1 pool opens or takes
   another connection only when the ones it has are busy, and a connection is busy until the client
   has read its answer; one that reuses its oldest idle connection (httpx, undici) never moves to a
   newer one while an older is free. Only for connections that carried this client key alone (a pool
   shared by many clients, like the harness's, picks whatever another client freed), and not when the
   call came on a connection that carried an answer of the group (a pool that reuses its latest freed
   connection, like aiohttp's, goes there next). Bytes an older connection still holds unread at the
   client are no sign: a client may leave an answer's last framing unread on a pooled connection it
   has already finished with.
   A client that awaits each answer sends its next call on the connection that brought the answer,
   on an older one, or after closing it (the SDK after an SSE answer), having read it: no sign, and
   the sequence rule decides.
4. ``sequence``: the request arrived after the answer to a call of the current group, from the same
   client key (session), had left the proxy: the client may well have sent it having read that
   answer, so it opens a new group, however short the pause. (Off with ``sequence=False``.)
5. ``gap``: otherwise the think-time gap decides: a call arriving less than ``gap_ms`` after the
   current group's last response joins it; a later one, or the first call of a scope, opens a new
   group. With the sequence rule on, this joins only a call that arrived before that response had
   left the proxy (a client that sends before reading); with it off, it also joins calls a client
   issues one after another.

"Arrived" is when the client started the request: the arrival of its first byte, or for the first
request on a fresh HTTP connection the connection's accept. So a request pipelined behind the
previous one, a parallel burst on connections opened before the first answer left, or a line
written to the stdio pipe before the answer, is no evidence.
The rule errs on the side of splitting: a parallel client that staggers its calls by more than a
call's round trip gets one group per call (which ``emr_lenient`` accepts), where the gap rule
merged sequential calls into one group (which no metric accepts). See docs/proxy.md.
"""

from __future__ import annotations

import itertools
import weakref
from dataclasses import dataclass, field
from typing import Any, Protocol

_SHARED = "\x00shared"  # the owner of a connection that carried calls of two client keys

CONNECTION_WINDOW_MS = 1000.0
"""How long after an answer left a newer connection's call is still weighed against it (``connection``)."""

Scope = tuple[str | None, str | None, int, int | None]


class Channel(Protocol):
    """The client connection a call came on (HTTP; the stdio side has none)."""

    @property
    def order(self) -> int:
        """The connection's number on its listener (accept order): its key among a group's answers."""
        ...

    def mark(self) -> int:
        """A number that grows with every request the connection carries."""
        ...

    def quiet(self, mark: int) -> bool:
        """No request since ``mark``, open, idle, and nothing from the client waiting (not even its end)."""
        ...


@dataclass(slots=True)
class _Inferred:
    group: int
    pending: int = 0
    last_response_ns: int = 0
    delivered_ns: int = 0  # when the latest answer of the group left the proxy (0: none yet)
    # the connections that carried answers of the group: order -> (channel, when the answer left);
    # weak, so a closed connection is not kept alive by a scope that sees no more calls
    answered: dict[int, tuple[weakref.ref[Channel], int, int]] = field(default_factory=dict)  # + its mark


@dataclass(slots=True)
class _ScopeState:
    next_group: int = 0
    explicit: dict[str, int] = field(default_factory=dict)
    inferred: dict[str, _Inferred] = field(default_factory=dict)

    def new_group(self) -> int:
        group = self.next_group
        self.next_group += 1
        return group


_tokens = itertools.count()


@dataclass(slots=True)
class Placement:
    """Where one call went; pass it back to :meth:`GroupAssigner.finished`."""

    scope: Scope
    client_key: str
    group: int
    source: str
    inferred: bool
    token: str = ""
    channel: Channel | None = None

    @property
    def ref(self) -> tuple[str, int]:
        """The group as the trace store knows it (``CallRow.group_ref``): this assigner's token and number."""
        return (self.token, self.group)


class GroupAssigner:
    """Assigns ``(call_group, group_source)`` to calls as they arrive (single-threaded, on the loop)."""

    def __init__(self, gap_ms: float = 30.0, sequence: bool = True) -> None:
        self.gap_ns = int(gap_ms * 1_000_000)
        self.window_ns = int(CONNECTION_WINDOW_MS * 1_000_000)
        self.sequence = sequence
        self.token = f"assigner-{next(_tokens)}"  # names this assigner's groups to the trace store
        self._scopes: dict[Scope, _ScopeState] = {}
        self._owners: weakref.WeakKeyDictionary[Channel, str] = weakref.WeakKeyDictionary()  # client key

    def place(
        self,
        scope: Scope,
        client_key: str,
        t_req_ns: int,
        explicit: Any = None,
        arrived_ns: int | None = None,
        channel: Channel | None = None,
    ) -> Placement:
        """The group of a call whose request was read at ``t_req_ns`` (monotonic).

        ``arrived_ns``: when the client started the request (see the module docstring; default ``t_req_ns``).
        ``channel``: the HTTP connection it came on (the ``connection`` rule; None on stdio).
        """
        if channel is not None:
            self._own(channel, client_key)
        state = self._scopes.get(scope)
        if state is None:
            state = self._scopes[scope] = _ScopeState()
        if explicit is not None and not isinstance(explicit, dict | list):
            label = f"{type(explicit).__name__}:{explicit}"
            group = state.explicit.get(label)
            if group is None:
                group = state.explicit[label] = state.new_group()
            return Placement(scope, client_key, group, "explicit", False, self.token)
        current = state.inferred.get(client_key)
        if current is not None and current.pending > 0:
            current.pending += 1
            return Placement(scope, client_key, current.group, "overlap", True, self.token, channel)
        source = "gap"
        if current is not None:
            arrived = t_req_ns if arrived_ns is None else arrived_ns
            if self.sequence and current.delivered_ns and arrived > current.delivered_ns:
                source = "sequence"  # sent after an answer of this group had left: it comes after it
            elif t_req_ns - current.last_response_ns < self.gap_ns:
                current.pending += 1
                return Placement(scope, client_key, current.group, "gap", True, self.token, channel)
            if channel is not None and self._behind_an_answer(current, channel, client_key, t_req_ns):
                current.pending += 1  # the client sent it before it had read an answer of the group
                return Placement(scope, client_key, current.group, "connection", True, self.token, channel)
        current = state.inferred[client_key] = _Inferred(state.new_group(), pending=1)
        return Placement(scope, client_key, current.group, source, True, self.token, channel)

    def _own(self, channel: Channel, client_key: str) -> None:
        """Note which client key a connection carries; one that carried two is shared (a pool of many)."""
        owner = self._owners.get(channel)
        if owner is None:
            self._owners[channel] = client_key
        elif owner != client_key:
            self._owners[channel] = _SHARED

    def _behind_an_answer(self, current: _Inferred, channel: Channel, client_key: str, t_req_ns: int) -> bool:
        """The client sent this call before it had read an answer of the group (module docstring, rule 3)."""
        own = self._owners.get(channel) == client_key and channel.order not in current.answered
        for ref, t_out, mark in current.answered.values():
            other = ref()
            if other is None or other is channel or t_req_ns - t_out > self.window_ns:
                continue  # gone, the call's own connection (the client read its answer), or too long ago
            if (
                own
                and other.order < channel.order
                and self._owners.get(other) == client_key
                and other.quiet(mark)
            ):
                return True  # the client's pool still held the older connection: it had not read the answer
        return False

    def finished(self, placement: Placement, t_resp_ns: int) -> None:
        """A placed call got its response (or failed) at ``t_resp_ns``."""
        current = self._current(placement)
        if current is not None:
            current.pending = max(0, current.pending - 1)
            current.last_response_ns = max(current.last_response_ns, t_resp_ns)

    def delivered(self, placement: Placement, t_out_ns: int) -> None:
        """A placed call's answer left the proxy at ``t_out_ns`` (the sequence rule's evidence)."""
        current = self._current(placement)
        if current is not None:
            current.delivered_ns = max(current.delivered_ns, t_out_ns)
            if placement.channel is not None:
                channel = placement.channel
                current.answered[channel.order] = (weakref.ref(channel), t_out_ns, channel.mark())

    def _current(self, placement: Placement) -> _Inferred | None:
        """The inferred group state of a placement, while its group is still the client's current one."""
        if not placement.inferred:
            return None
        state = self._scopes.get(placement.scope)
        current = state.inferred.get(placement.client_key) if state else None
        if current is None or current.group != placement.group:
            return None
        return current
