"""Serving a recorded server as it was: the recording is the truth (``finmcp-server --recordings FILE``).

A recordings file that holds a server's declaration (``servers``, written by ``finmcp-proxy
--recordings``; :mod:`recordings.declarations`) can be served as that server, with no inventory:
``initialize`` answers its recorded ``serverInfo``, ``capabilities`` and ``instructions``;
``tools/list`` returns its recorded tools verbatim; ``tools/call`` is looked up in the recording and
nothing else — no validation against any schema, no simulator. A recorded result comes back as
recorded (``isError`` ones too), a recorded JSON-RPC error as the same error (code, message, data),
after the notifications recorded with it (progress re-addressed to the new request's
``progressToken``). A call with no recording is a JSON-RPC error (:data:`MISS_CODE`) naming the tool
and the arguments' key: there is nothing to simulate for a foreign server.

:class:`RecordedService` is transport-free (the lookups); :mod:`server.recorded_mcp` puts it behind the
SDK's ``Server``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp_types import INVALID_PARAMS

from finmcp.recordings.canonical import canonicalize
from finmcp.recordings.errors import InvalidValueError
from finmcp.recordings.store import RecordingStore
from finmcp.server.latency import LatencyModel
from finmcp.server.seeded import OccurrenceCounter
from finmcp.server.sequence import (
    REPLAY_META,
    ExhaustedPolicy,
    ReplayMode,
    ReplaySession,
    SequenceCursors,
)
from finmcp.server.service import ARGS_KEY, PROVENANCE_KEY, SOURCE_KEY, STEP_KEY, ServiceStats, paginate

MISS_CODE = -32050
"""JSON-RPC error code of a call the recording has no answer for (implementation-defined range)."""


class RecordedServerError(Exception):
    """A recordings file cannot be served as a recorded server (the message says why)."""


@dataclass
class RecordedAnswer:
    """One replayed answer: a result or a JSON-RPC error, and the notifications sent before it."""

    result: dict[str, Any] | None = None
    rpc_error: dict[str, Any] | None = None
    notifications: list[dict[str, Any]] = field(default_factory=list)
    latency_ms: float | None = None


def pick_server(store: RecordingStore, wanted: str | None, path: Any) -> str:
    """The declared server to serve: ``wanted`` (``--server``), else the only one; errors list them."""
    names = store.declared_servers()
    listed = ", ".join(names) if names else "none"
    if wanted is not None:
        if wanted not in names:
            raise RecordedServerError(
                f"--server {wanted}: {path} holds no declaration of that server (declared: {listed})"
            )
        return wanted
    if len(names) != 1:
        raise RecordedServerError(
            f"--recordings {path} declares {len(names)} servers ({listed}); pick one with --server NAME"
        )
    return names[0]


class RecordedService:
    """Answers ``tools/list`` and ``tools/call`` of one recorded server from its recording."""

    def __init__(
        self,
        name: str,
        declaration: Mapping[str, Any],
        store: RecordingStore,
        *,
        replay: ReplayMode = "key",
        exhausted: ExhaustedPolicy = "repeat-last",
        latency: LatencyModel | None = None,
        page_size: int | None = None,
        page_bytes: int | None = None,
    ) -> None:
        self.name = name
        self.declaration = dict(declaration)
        self.store = store
        self.replay = replay
        self.exhausted = exhausted
        self.latency = latency or LatencyModel()
        self.faults: Sequence[Any] = ()  # the fast path's question: nothing is injected here
        self.schedule: Any = None
        self.stats = ServiceStats()
        tools = declaration.get("tools") or []
        self.inventory: tuple[dict[str, Any], ...] = tuple(tools)  # len() for /healthz
        self._schemas = {t["name"]: t.get("inputSchema") for t in tools if isinstance(t, dict)}
        self._cursors = SequenceCursors()
        self._occurrences = OccurrenceCounter()
        self._pages = []
        chunks = paginate(list(tools), page_size, page_bytes)
        for index, chunk in enumerate(chunks):
            page: dict[str, Any] = {"tools": chunk}
            if index + 1 < len(chunks):
                page["nextCursor"] = str(index + 1)
            self._pages.append(page)

    @classmethod
    def from_store(cls, store: RecordingStore, name: str, **options: Any) -> RecordedService:
        """The service of declared server ``name`` (its declaration read once)."""
        declaration = store.declaration(name)
        if declaration is None:
            raise RecordedServerError(f"no declaration of server {name!r} in the recordings")
        return cls(name, declaration, store, **options)

    # ------------------------------------------------------------------ what it declared

    @property
    def server_info(self) -> dict[str, Any]:
        """The recorded ``serverInfo`` (at least a name)."""
        info = self.declaration.get("serverInfo")
        return dict(info) if isinstance(info, dict) else {"name": self.name, "version": ""}

    def list_tools(self, cursor: str | None = None) -> dict[str, Any]:
        """One ``tools/list`` result: the recorded tools, verbatim (one page unless ``--page-size``)."""
        if cursor is None:
            return copy.deepcopy(self._pages[0])
        if not cursor.isdigit() or not 0 < int(cursor) < len(self._pages):
            raise ValueError(f"Invalid cursor {cursor!r} for tools/list of {self.name}")
        return copy.deepcopy(self._pages[int(cursor)])

    def input_schema(self, name: str) -> Mapping[str, Any] | None:
        """A recorded tool's input schema (None: not declared)."""
        schema = self._schemas.get(name)
        return schema if isinstance(schema, dict) else None

    # ------------------------------------------------------------------ tools/call

    async def call(
        self, name: str, arguments: Mapping[str, Any] | None, session: ReplaySession
    ) -> RecordedAnswer:
        """The recorded answer of one call (after the latency model's wait); a miss is a JSON-RPC error."""
        args: Any = {} if arguments is None else arguments
        try:
            canon = canonicalize(args, self.input_schema(name))
        except InvalidValueError as exc:
            self.stats.add("miss")
            return self._miss(name, None, f"the arguments have no recording key ({exc})")
        if session.reset:
            self._cursors.reset(session.key)
        answer = None
        if self.replay == "sequence":
            answer = self._sequence(name, canon.key, canon.json, session)
        if answer is None:
            answer = self._by_key(name, canon.key)
        if answer is None:
            self.stats.add("miss")
            return self._miss(name, canon.key, f"arguments {canon.json}")
        self.stats.add("replayed")
        occurrence = self._occurrences.next(name, canon.key)
        delay = self.latency.delay_ms(name, canon.key, occurrence, answer.latency_ms)
        if delay > 0:
            await anyio.sleep(delay / 1000)
        return answer

    def _miss(self, name: str, key: str | None, what: str) -> RecordedAnswer:
        message = (
            f"No recording of {name} for these arguments in the recording of {self.name} ({what}); a recorded"
            " server is replayed strictly"
        )
        return RecordedAnswer(
            rpc_error={"code": MISS_CODE, "message": message, "data": {"tool": name, "args_key": key}}
        )

    def _sequence(self, name: str, key: str, args_json: str, session: ReplaySession) -> RecordedAnswer | None:
        steps = self.store.response_steps(self.name, name, key)
        if not steps:
            return None
        index = self._cursors.step(session.key, (name, key), len(steps), self.exhausted, args_json)
        if index is None:  # nothing to simulate: the one-answer-per-key recording
            return None
        if isinstance(index, str):
            self.stats.add("sequence_exhausted")
            return RecordedAnswer(rpc_error={"code": INVALID_PARAMS, "message": index})
        return self._from_step(steps[index], key, session)

    def _by_key(self, name: str, key: str) -> RecordedAnswer | None:
        recorded = self.store.get_response_by_key(self.name, name, key)
        if recorded is None:  # only errors recorded for the key: the last recorded answer
            steps = self.store.response_steps(self.name, name, key)
            return self._from_step(steps[-1], key, None) if steps else None
        info = recorded.pop("_meta")
        result = _result(recorded)
        meta = info.get("io.finmcp/recording", {})
        result["_meta"] = {SOURCE_KEY: "replay", PROVENANCE_KEY: meta.get("provenance"), ARGS_KEY: key}
        return RecordedAnswer(result=result, latency_ms=meta.get("latency_ms"))

    @staticmethod
    def _from_step(step: dict[str, Any], key: str, session: ReplaySession | None) -> RecordedAnswer:
        notes = list(step.get("notifications") or [])
        if step["rpc_error"] is not None:
            return RecordedAnswer(
                rpc_error=step["rpc_error"], notifications=notes, latency_ms=step["latency_ms"]
            )
        result = _result(step["result"])
        meta: dict[str, Any] = {
            SOURCE_KEY: "replay",
            PROVENANCE_KEY: step["provenance"],
            ARGS_KEY: key,
            STEP_KEY: step["step"],
        }
        if session is not None:
            meta[REPLAY_META] = {"sequence": session.label, "step": step["step"]}
        result["_meta"] = meta
        return RecordedAnswer(result=result, notifications=notes, latency_ms=step["latency_ms"])


def _result(recorded: Mapping[str, Any]) -> dict[str, Any]:
    """The wire result of a recorded ``{content, structuredContent, isError}`` (absent parts left out)."""
    result: dict[str, Any] = {"content": recorded["content"]}
    if recorded.get("structuredContent") is not None:
        result["structuredContent"] = recorded["structuredContent"]
    result["isError"] = bool(recorded.get("isError"))
    return result
