"""The tool service of one inventory: ``tools/list`` pages and the ``tools/call`` policy.

A call goes through, in order:

1. unknown tool -> JSON-RPC error (``INVALID_PARAMS``) naming the tool;
2. arguments checked against the tool's ``inputSchema`` -> an ``isError`` result naming each field;
3. fault injection: a scheduled fault (``--fault-schedule``, :mod:`server.fault_schedule`), else
   ``--faults`` when a rule matches;
4. with ``--replay sequence``, the recorded answer of this call's place in its key's sequence
   (:mod:`server.sequence`); else (and when that falls through) replay of the recorded response for
   the canonical argument key, else the simulator (``--miss simulate``), else an ``isError`` "no
   recording" result (``--miss strict``);
5. the latency model's wait (progress notifications while a long wait runs; cancellable).

Every result carries ``_meta`` with ``io.finmcp/source`` (``replay``, ``simulated``, ``fault``,
``invalid`` or ``miss``) and ``io.finmcp/provenance``. ``structuredContent`` is sent only when the tool
declares an ``outputSchema`` and the content validates against it (clients reject anything else).
"""

from __future__ import annotations

import copy
import json
import logging
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS

from finmcp.recordings.canonical import CanonicalArgs, canonicalize
from finmcp.recordings.errors import InvalidValueError
from finmcp.recordings.responses import RECORDING_META_KEY
from finmcp.recordings.store import RecordingStore
from finmcp.server.fault_schedule import altered_answer, replacing_answer, scheduled_fault
from finmcp.server.faults import FaultPlan, FaultRule
from finmcp.server.latency import LatencyModel
from finmcp.server.seeded import OccurrenceCounter
from finmcp.server.sequence import (
    EXHAUSTED_POLICIES,
    REPLAY_META,
    REPLAY_MODES,
    ExhaustedPolicy,
    ReplayMode,
    ReplaySession,
    SequenceCursors,
)
from finmcp.server.validation import MAX_ARGUMENT_DEPTH, compile_schema, describe_errors, too_deep
from finmcp.tool_specs.inventory import Inventory
from finmcp.tool_specs.model import ToolSpec

logger = logging.getLogger("finmcp.server")

SOURCE_KEY = "io.finmcp/source"
PROVENANCE_KEY = "io.finmcp/provenance"
ARGS_KEY = "io.finmcp/args_key"
STEP_KEY = "io.finmcp/step"
FAULT_KEY = "io.finmcp/fault"

MissPolicy = Literal["simulate", "strict"]
SimulateFn = Callable[[str, dict[str, Any]], Mapping[str, Any]]
ProgressFn = Callable[[float, float | None, str | None], Awaitable[None]]

PROGRESS_INTERVAL_MS = 250.0
PREPARED_KEPT = 2048
"""Validated argument sets remembered per service (about 0.8 KiB each), so a repeated call skips
validation; the oldest is forgotten beyond it (a long run of distinct calls keeps its memory flat)."""


@dataclass
class _Tool:
    """A tool with everything a call needs, prepared at start-up."""

    spec: ToolSpec
    input_validator: Any
    output_validator: Any | None
    warned_output: bool = False


@dataclass
class _Answer:
    """A prepared result plus what the latency model needs."""

    result: dict[str, Any]
    recorded_ms: float | None = None
    rpc_error: dict[str, Any] | None = None  # a recorded JSON-RPC error (sequence replay)


@dataclass
class ServiceStats:
    """Counters shown by ``/healthz``."""

    counts: Counter[str] = field(default_factory=Counter)

    def add(self, name: str) -> None:
        """Count one event."""
        self.counts[name] += 1


def paginate(
    tools: Sequence[dict[str, Any]], page_size: int | None = None, page_bytes: int | None = None
) -> list[list[dict[str, Any]]]:
    """``tools`` cut into pages (always at least one, maybe empty).

    ``page_size``: at most that many tools per page. ``page_bytes``: consecutive tools per page while
    their JSON (ASCII-escaped, an upper bound of any encoder's UTF-8 output) stays within that many
    bytes; a tool bigger than that alone gets a page of its own. Neither: one page.
    """
    if page_size is not None:
        return [list(tools[i : i + page_size]) for i in range(0, len(tools), page_size)] or [[]]
    if page_bytes is None:
        return [list(tools)]
    pages: list[list[dict[str, Any]]] = [[]]
    used = 0
    for tool in tools:
        size = len(json.dumps(tool)) + 1  # + the separating comma
        if pages[-1] and used + size > page_bytes:
            pages.append([])
            used = 0
        pages[-1].append(tool)
        used += size
    return pages


def _text_result(text: str, source: str, is_error: bool, **meta: Any) -> dict[str, Any]:
    return {
        "content": [{"type": "text", "text": text}],
        "isError": is_error,
        "_meta": {SOURCE_KEY: source, **meta},
    }


class ToolService:
    """Answers ``tools/list`` and ``tools/call`` for one inventory (transport-independent).

    ``store`` is an open :class:`RecordingStore` (or None: every call misses); recordings are looked
    up under ``recording_inventories`` in order (default: the inventory's name, then its ``base``).
    ``simulate`` is the simulator's ``simulate(tool, arguments)``; it is required for
    ``miss="simulate"``. ``tools/list`` is one page unless ``page_size`` (tools per page) or
    ``page_bytes`` (the most JSON bytes of tools per page, see :func:`paginate`) is given.
    """

    def __init__(
        self,
        inventory: Inventory,
        *,
        store: RecordingStore | None = None,
        recording_inventories: Sequence[str] | None = None,
        miss: MissPolicy = "simulate",
        simulate: SimulateFn | None = None,
        latency: LatencyModel | None = None,
        faults: FaultPlan | None = None,
        page_size: int | None = None,
        page_bytes: int | None = None,
        output_schemas: bool = True,
        cache_size: int = 8192,
        progress_after_ms: float = 1000.0,
        replay: ReplayMode = "key",
        exhausted: ExhaustedPolicy = "repeat-last",
        schedule: Any = None,
    ) -> None:
        if replay not in REPLAY_MODES:
            raise ValueError(f"replay mode {replay!r}: expected one of {', '.join(REPLAY_MODES)}")
        if exhausted not in EXHAUSTED_POLICIES:
            raise ValueError(
                f"exhausted policy {exhausted!r}: expected one of {', '.join(EXHAUSTED_POLICIES)}"
            )
        if miss not in ("simulate", "strict"):
            raise ValueError(f"miss policy {miss!r}: expected 'simulate' or 'strict'")
        if miss == "simulate" and simulate is None:
            raise ValueError("miss policy 'simulate' needs a simulator")
        if page_size is not None and page_size < 1:
            raise ValueError(f"page size {page_size}: expected a positive number of tools")
        if page_bytes is not None and page_bytes < 1:
            raise ValueError(f"page bytes {page_bytes}: expected a positive number of bytes")
        if page_size is not None and page_bytes is not None:
            raise ValueError("give page_size or page_bytes, not both")
        self.inventory = inventory
        self.name = inventory.name
        self.store = store
        base = inventory.extra.get("base") if inventory.extra else None
        default_names = [
            inventory.name,
            *([base] if isinstance(base, str) and base != inventory.name else []),
        ]
        self.recording_inventories = tuple(recording_inventories or default_names)
        self.miss = miss
        self.simulate = simulate
        self.latency = latency or LatencyModel()
        self.faults = faults or FaultPlan()
        self.schedule = schedule
        """A :class:`recordings.fault_schedule.ScheduleInjector` (``--fault-schedule``), or None."""
        self.output_schemas = output_schemas
        self.progress_after_ms = progress_after_ms
        self.stats = ServiceStats()
        self.replay = replay
        self.exhausted = exhausted
        self._cursors = SequenceCursors()
        self._steps: OrderedDict[tuple[str, str], list[dict[str, Any]]] = OrderedDict()
        self._occurrences = OccurrenceCounter()
        self._cache: OrderedDict[tuple[str, str], _Answer | None] = OrderedDict()
        self._cache_size = cache_size
        self._prepared_memo: dict[tuple[str, str], CanonicalArgs | str] = {}
        self._tools = {
            spec.name: _Tool(
                spec=spec,
                input_validator=compile_schema(spec.input_schema),
                output_validator=(
                    compile_schema(spec.output_schema)
                    if output_schemas and spec.output_schema is not None
                    else None
                ),
            )
            for spec in inventory.tools
        }
        self._pages = self._build_pages(page_size, page_bytes)

    # ------------------------------------------------------------------ tools/list

    def _build_pages(self, page_size: int | None, page_bytes: int | None) -> list[dict[str, Any]]:
        tools = []
        for wire in self.inventory.mcp_tools:
            if not self.output_schemas and "outputSchema" in wire:
                wire = {k: v for k, v in wire.items() if k != "outputSchema"}
            tools.append(wire)
        chunks = paginate(tools, page_size, page_bytes)
        pages = []
        for index, chunk in enumerate(chunks):
            # The 2026-07-28 era requires the cache hints and resultType; older eras drop them.
            page: dict[str, Any] = {
                "tools": chunk,
                "ttlMs": 0,
                "cacheScope": "private",
                "resultType": "complete",
            }
            if index + 1 < len(chunks):
                page["nextCursor"] = str(index + 1)
            pages.append(page)
        return pages

    def list_only(self, names: list[str]) -> dict[str, Any]:
        """One ``tools/list`` result of just the named tools, in the inventory's order (unknown names
        are left out; no paging): what the ``?tools=`` query of an endpoint lists."""
        wanted = set(names)
        tools = [wire for page in self._pages for wire in page["tools"] if wire.get("name") in wanted]
        return {"tools": tools, "ttlMs": 0, "cacheScope": "private", "resultType": "complete"}

    def list_tools(self, cursor: str | None = None) -> dict[str, Any]:
        """One ``tools/list`` result (the first page, or the page a cursor names)."""
        if cursor is None:
            return self._pages[0]
        if not cursor.isdigit() or not 0 < int(cursor) < len(self._pages):
            raise MCPError(INVALID_PARAMS, f"Invalid cursor {cursor!r} for tools/list of {self.name}")
        return self._pages[int(cursor)]

    def input_schema(self, name: str) -> Mapping[str, Any] | None:
        """A tool's input schema by name (the SDK's ``get_tool_input_schema`` hook)."""
        tool = self._tools.get(name)
        return None if tool is None else tool.spec.input_schema

    # ------------------------------------------------------------------ tools/call

    async def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        progress: ProgressFn | None = None,
        occurrence: int | OccurrenceCounter | None = None,
        session: Any = None,
        meta: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Answer one ``tools/call``; raises :class:`MCPError` for an unknown tool or an injected RPC error.

        ``occurrence`` keys the call's latency and fault draws (:mod:`server.seeded`): a number (the
        stateless era's attempt), a counter to count the call in (a handshake-era session's), or None
        to count it in this service. ``session`` names the replay session of sequence replay (see
        :mod:`server.sequence`). ``meta`` is the request's ``params._meta`` (a fault schedule reads the
        call's place from it, :mod:`server.fault_schedule`).
        """
        tool = self._tools.get(name)
        if tool is None:
            self.stats.add("unknown_tool")
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {name!r} is not a tool of {self.name}")
        args = {} if arguments is None else arguments
        canon = self._prepared(tool, args)
        if isinstance(canon, str):
            self.stats.add("invalid")
            return _text_result(canon, "invalid", True)
        if not isinstance(occurrence, int):
            occurrence = (occurrence or self._occurrences).next(name, canon.key)
        scheduled = None if self.schedule is None else scheduled_fault(self.schedule, meta, name, canon.key)
        if scheduled is not None:
            self.stats.add("fault")
            replaced = await replacing_answer(scheduled, name, lambda ms: self._wait(ms, name, progress))
            if replaced is not None:
                return replaced
        fault = self.faults.decide(name, canon.key, occurrence) if self.faults else None
        if fault is not None and fault[0] == "rpc_error":
            self.stats.add("fault")
            raise MCPError(INTERNAL_ERROR, f"Internal error in tool {name!r} (injected fault)")
        if fault is not None and fault[0] == "timeout":
            self.stats.add("fault")
            result = self._timeout_result(name, fault[1])
            await self._wait(fault[1].timeout_ms, name, progress)
            return result
        answer = None
        if self.replay == "sequence":
            answer = self._sequence_answer(tool, canon.key, canon.json, session)
        if answer is None:
            answer = self._answer(tool, canon.key, canon.arguments, canon.json)
        if answer.rpc_error is not None:
            delay = self.latency.delay_ms(name, canon.key, occurrence, answer.recorded_ms)
            if delay > 0:
                await self._wait(delay, name, progress)
            error = answer.rpc_error
            raise MCPError(error["code"], error.get("message", ""), error.get("data"))
        if scheduled is not None:
            result = altered_answer(scheduled, answer.result, self.schedule.schedule.seed)
        elif fault is not None:
            self.stats.add("fault")
            result = self._faulty(name, fault[0], answer.result)
        else:
            result = dict(answer.result)
        delay = self.latency.delay_ms(name, canon.key, occurrence, answer.recorded_ms)
        if delay > 0:
            await self._wait(delay, name, progress)
        return result

    def _prepared(self, tool: _Tool, args: Mapping[str, Any]) -> CanonicalArgs | str:
        """The canonical form of valid arguments, or the "Invalid arguments" text; memoised per tool and
        argument JSON (both are pure functions of the two), so a repeated call skips validation."""
        name = tool.spec.name
        if too_deep(args):  # the validators and the canonical key recurse: refuse before they overflow
            return f"Invalid arguments for {name}: nested deeper than {MAX_ARGUMENT_DEPTH} levels"
        try:
            memo_key: tuple[str, str] | None = (name, json.dumps(args, ensure_ascii=False))
        except (TypeError, ValueError):  # not JSON (a direct call): no memo
            memo_key = None
        if memo_key is not None:
            known = self._prepared_memo.get(memo_key)
            if known is not None:
                return known
        prepared: CanonicalArgs | str
        problems = [] if tool.input_validator.is_valid(args) else describe_errors(tool.input_validator, args)
        if problems:
            prepared = f"Invalid arguments for {name}: " + "; ".join(problems)
        else:
            try:
                prepared = canonicalize(args, tool.spec.input_schema)
            except InvalidValueError as exc:
                prepared = f"Invalid arguments for {name}: {exc}"
        if memo_key is not None:
            self._prepared_memo[memo_key] = prepared
            if len(self._prepared_memo) > PREPARED_KEPT:
                self._prepared_memo.pop(next(iter(self._prepared_memo)))
        return prepared

    async def _wait(self, delay_ms: float, name: str, progress: ProgressFn | None) -> None:
        try:
            if progress is None or delay_ms < self.progress_after_ms:
                await anyio.sleep(delay_ms / 1000)
                return
            waited = 0.0
            while waited < delay_ms:
                step = min(PROGRESS_INTERVAL_MS, delay_ms - waited)
                await anyio.sleep(step / 1000)
                waited += step
                await progress(
                    round(waited, 3), round(delay_ms, 3), f"{name}: waiting for the upstream answer"
                )
        except anyio.get_cancelled_exc_class():
            self.stats.add("cancelled")
            raise

    # ------------------------------------------------------------------ answers

    def _sequence_answer(self, tool: _Tool, key: str, args_json: str, session: Any) -> _Answer | None:
        """The recorded answer of this call's place in its key's sequence; None: use the default lookup."""
        name = tool.spec.name
        if not isinstance(session, ReplaySession):  # a direct call (tests): one session per given value
            session = ReplaySession(session, str(session))
        if session.reset:
            self._cursors.reset(session.key)
        steps = self._recorded_steps(name, key)
        if not steps:
            return None
        index = self._cursors.step(session.key, (name, key), len(steps), self.exhausted, args_json)
        if index is None:
            return None
        if isinstance(index, str):
            self.stats.add("sequence_exhausted")
            return _Answer({}, None, {"code": INVALID_PARAMS, "message": index})
        step = steps[index]
        self.stats.add("replayed")
        if step["rpc_error"] is not None:
            return _Answer({}, step["latency_ms"], step["rpc_error"])
        recorded = step["result"]
        result: dict[str, Any] = {"content": recorded["content"], "isError": recorded["isError"]}
        structured = self._checked_structured(tool, recorded["structuredContent"], recorded["isError"], key)
        if structured is not None:
            result["structuredContent"] = structured
        result["_meta"] = {
            SOURCE_KEY: "replay",
            PROVENANCE_KEY: step["provenance"],
            ARGS_KEY: key,
            STEP_KEY: step["step"],
            REPLAY_META: {"sequence": session.label, "step": step["step"]},
        }
        return _Answer(result, step["latency_ms"])

    def _recorded_steps(self, name: str, key: str) -> list[dict[str, Any]]:
        cache_key = (name, key)
        steps = self._steps.get(cache_key)
        if steps is not None:
            self._steps.move_to_end(cache_key)
            return steps
        steps = []
        if self.store is not None:
            for inventory in self.recording_inventories:
                steps = self.store.response_steps(inventory, name, key)
                if steps:
                    break
        self._steps[cache_key] = steps
        if len(self._steps) > self._cache_size:
            self._steps.popitem(last=False)
        return steps

    def _answer(self, tool: _Tool, key: str, arguments: dict[str, Any], args_json: str) -> _Answer:
        name = tool.spec.name
        cache_key = (name, key)
        if cache_key in self._cache:
            self._cache.move_to_end(cache_key)
            cached = self._cache[cache_key]
        else:
            cached = self._lookup(tool, key)
            if cached is not None:  # a miss is looked up again (cheap beside simulating), not held
                self._cache[cache_key] = cached
                if len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        if cached is not None:
            self.stats.add("replayed")
            return cached
        if self.miss == "strict":
            self.stats.add("miss")
            text = (
                f"No recording for these arguments: {name} {args_json} (in {', '.join(self.recording_inventories)};"
                " the server runs with --miss strict)"
            )
            return _Answer(_text_result(text, "miss", True, **{ARGS_KEY: key}))
        self.stats.add("simulated")
        return _Answer(self._simulated(tool, key, arguments))

    def _lookup(self, tool: _Tool, key: str) -> _Answer | None:
        if self.store is None:
            return None
        for inventory in self.recording_inventories:
            recorded = self.store.get_response_by_key(inventory, tool.spec.name, key)
            if recorded is not None:
                break
        else:
            return None
        info = recorded["_meta"][RECORDING_META_KEY]
        result: dict[str, Any] = {"content": recorded["content"], "isError": recorded["isError"]}
        structured = self._checked_structured(tool, recorded["structuredContent"], recorded["isError"], key)
        if structured is not None:
            result["structuredContent"] = structured
        result["_meta"] = {SOURCE_KEY: "replay", PROVENANCE_KEY: info["provenance"], ARGS_KEY: key}
        return _Answer(result, info.get("latency_ms"))

    def _checked_structured(self, tool: _Tool, structured: Any, is_error: bool, key: str) -> Any | None:
        if tool.output_validator is None or structured is None:
            return None
        if tool.output_validator.is_valid(structured):
            return structured
        if not is_error:
            error = next(iter(tool.output_validator.iter_errors(structured)))
            logger.warning(
                "%s/%s key %s: structured content does not match the outputSchema (%s); sending text only",
                self.name,
                tool.spec.name,
                key,
                error.message[:200],
            )
        return None

    def _simulated(self, tool: _Tool, key: str, arguments: dict[str, Any]) -> dict[str, Any]:
        name = tool.spec.name
        assert self.simulate is not None
        try:
            raw = self.simulate(name, copy.deepcopy(arguments))  # the memoised canonical form stays intact
            content = raw.get("content")
            if not isinstance(content, list):
                raise TypeError("the simulator returned no content list")
            is_error = bool(raw.get("isError", False))
        except Exception as exc:  # a simulator bug must not crash the call
            logger.exception("simulator failed for %s/%s", self.name, name)
            return _text_result(f"Simulator failed for {name}: {exc}", "simulated", True, **{ARGS_KEY: key})
        result: dict[str, Any] = {"content": content, "isError": is_error}
        structured = self._checked_structured(tool, raw.get("structuredContent"), is_error, key)
        if structured is not None:
            result["structuredContent"] = structured
        result["_meta"] = {SOURCE_KEY: "simulated", PROVENANCE_KEY: "simulated", ARGS_KEY: key}
        return result

    # ------------------------------------------------------------------ faults

    def _timeout_result(self, name: str, rule: FaultRule) -> dict[str, Any]:
        text = f"Upstream timeout: {name} did not answer within {rule.timeout_ms:g} ms (injected fault)"
        return _text_result(text, "fault", True, **{FAULT_KEY: "timeout"})

    def _faulty(self, name: str, kind: str, normal: dict[str, Any]) -> dict[str, Any]:
        meta = {SOURCE_KEY: "fault", FAULT_KEY: kind}
        if kind == "error":
            text = f"Upstream service error: {name} failed, please retry later (injected fault)"
            return _text_result(text, "fault", True, **{FAULT_KEY: kind})
        if kind == "empty":
            return {"content": [], "isError": False, "_meta": meta}
        texts = [b.get("text", "") for b in normal.get("content", []) if b.get("type") == "text"]
        whole = "".join(texts) or json.dumps(normal.get("structuredContent"), ensure_ascii=False)
        cut = whole[: max(1, len(whole) // 2)]
        return {"content": [{"type": "text", "text": cut}], "isError": False, "_meta": meta}
