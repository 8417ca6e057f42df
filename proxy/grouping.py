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
3. ``gap``: otherwise the think-time gap decides: a call arriving less than ``gap_ms`` after the
   current group's last response joins it (clients that issue parallel calls one by one); a
   later one, or the first call of a scope, opens a new group.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

Scope = tuple[str | None, str | None, int, int | None]


@dataclass(slots=True)
class _Inferred:
    group: int
    pending: int = 0
    last_response_ns: int = 0


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

    @property
    def ref(self) -> tuple[str, int]:
        """The group as the trace store knows it (``CallRow.group_ref``): this assigner's token and number."""
        return (self.token, self.group)


class GroupAssigner:
    """Assigns ``(call_group, group_source)`` to calls as they arrive (single-threaded, on the loop)."""

    def __init__(self, gap_ms: float = 30.0) -> None:
        self.gap_ns = int(gap_ms * 1_000_000)
        self.token = f"assigner-{next(_tokens)}"  # names this assigner's groups to the trace store
        self._scopes: dict[Scope, _ScopeState] = {}

    def place(self, scope: Scope, client_key: str, t_req_ns: int, explicit: Any = None) -> Placement:
        """The group of a call whose request arrived at ``t_req_ns`` (monotonic)."""
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
            return Placement(scope, client_key, current.group, "overlap", True, self.token)
        if current is not None and t_req_ns - current.last_response_ns < self.gap_ns:
            current.pending += 1
            return Placement(scope, client_key, current.group, "gap", True, self.token)
        current = state.inferred[client_key] = _Inferred(state.new_group(), pending=1)
        return Placement(scope, client_key, current.group, "gap", True, self.token)

    def finished(self, placement: Placement, t_resp_ns: int) -> None:
        """A placed call got its response (or failed) at ``t_resp_ns``."""
        if not placement.inferred:
            return
        state = self._scopes.get(placement.scope)
        current = state.inferred.get(placement.client_key) if state else None
        if current is None or current.group != placement.group:
            return
        current.pending = max(0, current.pending - 1)
        current.last_response_ns = max(current.last_response_ns, t_resp_ns)
