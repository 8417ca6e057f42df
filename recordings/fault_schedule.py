"""Fault schedules: which ``tools/call`` of which sample fails, and how, decided by seed and call position.

A schedule is a JSON file (docs/server.md, "Fault schedules")::

    {"version": 1, "seed": 7,
     "rules": [{"kind": "rate_limit", "probability": 0.5, "transient": true, "scope": "turn",
                "at": [0], "tools": "Get*", "samples": ["s1"], "member": [1], "retry_after": 0.2}]}

A call's *place* is its tags (run, sample, trial, turn) and its positions: the n-th ``tools/call`` of
its (sample, trial, turn) (``scope: "turn"``, the default) or of its (sample, trial) (``scope:
"sample"``), and its index inside its parallel group (``member``). Whether a rule fires is drawn from
(seed, rule index, sample, turn for turn scope, position) only, never from the arguments, so the same
seed gives the same faults at the same places whatever the agent does; the first rule that matches
and fires wins.

Transient and permanent: a faulted call is remembered per (run, sample, trial) by tool and argument
key. A permanent fault answers every later call with the same tool and arguments the same way; after a
transient one the same call is answered normally (a ``rate_limit`` only once its ``retry_after``
seconds have passed: an earlier retry is rate-limited again). Such a remembered answer is not drawn
again. The module is pure (no I/O): the server (:mod:`server.fault_schedule`) and the proxy use it.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from finmcp.recordings.plumbing.seeding import unit_draw

SCHEDULE_KINDS = ("rpc_error", "is_error", "timeout", "rate_limit", "truncated", "empty", "wrong_values")
"""Fault kinds of a schedule (docs/server.md)."""
SCOPES = ("turn", "sample")
DEFAULT_RETRY_AFTER_S = 1.0
DEFAULT_TIMEOUT_MS = 1000.0
POSITION_META = "io.finmcp/position"
"""``params._meta`` key a harness sends: ``{"turn": n, "sample": m, "member": i}`` (0-based positions)."""
TRIAL_META = "io.finmcp/trial"
SAMPLE_META = "io.finmcp/sample"
TURN_META = "io.finmcp/turn"
RUN_META = "io.finmcp/run"
GROUP_META = "io.finmcp/group"

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["seed", "rules"],
    "additionalProperties": False,
    "properties": {
        "version": {"const": 1},
        "name": {"type": "string"},
        "seed": {"type": "integer"},
        "rules": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["kind"],
                "additionalProperties": False,
                "properties": {
                    "kind": {"enum": list(SCHEDULE_KINDS)},
                    "probability": {"type": "number", "minimum": 0, "maximum": 1},
                    "transient": {"type": "boolean"},
                    "scope": {"enum": list(SCOPES)},
                    "at": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                    "tools": {"type": "string", "minLength": 1},
                    "samples": {"type": "array", "items": {"type": "string"}},
                    "member": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                    "retry_after": {"type": "number", "minimum": 0},
                    "timeout_ms": {"type": "number", "minimum": 0},
                },
            },
        },
    },
}
"""The JSON Schema of a schedule file (checked with jsonschema before anything else)."""


class ScheduleError(ValueError):
    """A schedule that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class ScheduleRule:
    """One rule of a schedule (field meanings in the module docstring)."""

    index: int
    kind: str
    probability: float = 1.0
    transient: bool = True
    scope: str = "turn"
    at: frozenset[int] | None = None
    tools: str = "*"
    samples: frozenset[str] | None = None
    member: frozenset[int] | None = None
    retry_after: float = DEFAULT_RETRY_AFTER_S
    timeout_ms: float = DEFAULT_TIMEOUT_MS

    def matches(self, place: CallPlace, tool: str) -> bool:
        """True when the rule applies to this call (before its probability is drawn)."""
        position = place.turn_position if self.scope == "turn" else place.sample_position
        return (
            fnmatch.fnmatchcase(tool, self.tools)
            and (self.samples is None or (place.sample or "") in self.samples)
            and (self.at is None or position in self.at)
            and (self.member is None or place.member in self.member)
        )


@dataclass(frozen=True)
class FaultSchedule:
    """A parsed schedule: seed, rules, and the digest of its canonical JSON (what runs are compared by)."""

    seed: int
    rules: tuple[ScheduleRule, ...]
    digest: str
    name: str = ""
    document: Mapping[str, Any] = field(default_factory=dict)

    def fires(self, place: CallPlace, tool: str) -> ScheduleRule | None:
        """The first rule that matches the call and whose seeded draw fires, else None."""
        for rule in self.rules:
            if not rule.matches(place, tool):
                continue
            if rule.probability >= 1:
                return rule
            position = place.turn_position if rule.scope == "turn" else place.sample_position
            turn = place.turn if rule.scope == "turn" else "-"
            if (
                unit_draw(self.seed, "fault-schedule", rule.index, place.sample or "", turn, position)
                < rule.probability
            ):
                return rule
        return None


@dataclass(frozen=True)
class CallPlace:
    """Where a call sits: tags and positions (0-based)."""

    run: str | None = None
    sample: str | None = None
    trial: int = 0
    turn: int = 0
    turn_position: int = 0
    sample_position: int = 0
    member: int = 0

    def as_meta(self) -> dict[str, int]:
        """The positions as the fault marker records them."""
        return {"turn": self.turn_position, "sample": self.sample_position, "member": self.member}


@dataclass(frozen=True)
class Fault:
    """One injected fault: its kind, whether a retry of the same call succeeds, and where it happened."""

    kind: str
    transient: bool
    place: CallPlace
    schedule: str
    rule: int
    retry_after: float = DEFAULT_RETRY_AFTER_S
    timeout_ms: float = DEFAULT_TIMEOUT_MS
    repeat: bool = False
    """True when this answers a retry of a call faulted before (a permanent fault, or an early retry
    after a rate limit), not a fresh draw."""

    def marker(self) -> dict[str, Any]:
        """``_meta["io.finmcp/fault"]`` of the faulted answer (docs/server.md)."""
        out: dict[str, Any] = {
            "kind": self.kind,
            "transient": self.transient,
            "position": self.place.as_meta(),
            "schedule": self.schedule,
            "rule": self.rule,
            "repeat": self.repeat,
        }
        if self.kind == "rate_limit":
            out["retry_after"] = self.retry_after
        return out


def _where(path: Any) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def parse_schedule(
    document: Any, source: str = "schedule", tools: Collection[str] | None = None
) -> FaultSchedule:
    """Check a decoded schedule (jsonschema, then tool names against ``tools`` when given) and parse it.

    Raises :class:`ScheduleError` naming ``source`` and the field (``rules[2].kind``) of the first problem.
    """
    validator = jsonschema.Draft202012Validator(SCHEMA)
    errors = sorted(validator.iter_errors(document), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        error = errors[0]
        where = _where(error.absolute_path)
        message = error.message
        if error.validator == "enum" and list(error.absolute_path)[-1:] == ["kind"]:
            message = f"unknown fault kind {error.instance!r}; expected one of {', '.join(SCHEDULE_KINDS)}"
        elif error.validator in ("minimum", "maximum") and list(error.absolute_path)[-1:] == ["probability"]:
            message = f"probability {error.instance!r} is out of range: expected a number in [0, 1]"
        raise ScheduleError(f"{source}: {where}: {message}")
    rules = []
    for index, raw in enumerate(document["rules"]):
        pattern = raw.get("tools", "*")
        if tools is not None and not any(fnmatch.fnmatchcase(t, pattern) for t in tools):
            raise ScheduleError(
                f"{source}: rules[{index}].tools: {pattern!r} names no tool of the inventory"
                f" ({len(tools)} tools)"
            )
        rules.append(
            ScheduleRule(
                index=index,
                kind=raw["kind"],
                probability=float(raw.get("probability", 1.0)),
                transient=bool(raw.get("transient", True)),
                scope=raw.get("scope", "turn"),
                at=frozenset(raw["at"]) if "at" in raw else None,
                tools=pattern,
                samples=frozenset(raw["samples"]) if "samples" in raw else None,
                member=frozenset(raw["member"]) if "member" in raw else None,
                retry_after=float(raw.get("retry_after", DEFAULT_RETRY_AFTER_S)),
                timeout_ms=float(raw.get("timeout_ms", DEFAULT_TIMEOUT_MS)),
            )
        )
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    digest = "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]
    return FaultSchedule(
        int(document["seed"]), tuple(rules), digest, str(document.get("name", "")), dict(document)
    )


def load_schedule(path: str | Path, tools: Collection[str] | None = None) -> FaultSchedule:
    """Read and parse a schedule file; a missing file or bad JSON is a :class:`ScheduleError` (with line)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ScheduleError(f"fault schedule {path}: cannot read it: {exc.strerror or exc}") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScheduleError(
            f"fault schedule {path}: line {exc.lineno} column {exc.colno}: not JSON: {exc.msg}"
        ) from None
    return parse_schedule(document, f"fault schedule {path}", tools)


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


@dataclass
class _SampleState:
    """What the injector remembers of one (run, sample, trial)."""

    faulted: dict[tuple[str, str], tuple[Fault, float]] = field(default_factory=dict)
    turn_counts: dict[int, int] = field(default_factory=dict)
    sample_count: int = 0
    members: dict[tuple[int, Any], int] = field(default_factory=dict)


class ScheduleInjector:
    """Decides each call's fault under one schedule; remembers faulted calls per (run, sample, trial).

    ``clock`` gives seconds (monotonic); the most recent ``limit`` samples are remembered.
    """

    def __init__(
        self, schedule: FaultSchedule, clock: Callable[[], float] | None = None, limit: int = 65536
    ) -> None:
        import time

        self.schedule = schedule
        self._clock = clock or time.monotonic
        self._samples: OrderedDict[tuple[Any, ...], _SampleState] = OrderedDict()
        self._limit = limit
        self._lock = threading.Lock()

    def place(self, meta: Mapping[str, Any] | None, tags: Mapping[str, Any] | None = None) -> CallPlace:
        """The call's place from its ``params._meta`` (tags and ``io.finmcp/position``), else ``tags``
        (the proxy's URL/header tags); positions missing from the request are counted here, in arrival
        order per (run, sample, trial, turn)."""
        meta = meta or {}
        tags = tags or {}
        run = meta.get(RUN_META, tags.get("run"))
        sample = meta.get(SAMPLE_META, tags.get("sample"))
        trial = _int(meta.get(TRIAL_META, tags.get("trial"))) or 0
        turn = _int(meta.get(TURN_META, tags.get("turn"))) or 0
        given = meta.get(POSITION_META)
        given = given if isinstance(given, Mapping) else {}
        key = (None if run is None else str(run), None if sample is None else str(sample), trial)
        with self._lock:
            state = self._state(key)
            counted_turn = state.turn_counts.get(turn, 0)
            state.turn_counts[turn] = counted_turn + 1
            counted_sample = state.sample_count
            state.sample_count += 1
            group = meta.get(GROUP_META)
            member_key = (turn, json.dumps(group))
            counted_member = state.members.get(member_key, 0) if group is not None else 0
            if group is not None:
                state.members[member_key] = counted_member + 1
        turn_position = _int(given.get("turn"))
        sample_position = _int(given.get("sample"))
        member = _int(given.get("member"))
        return CallPlace(
            key[0],
            key[1],
            trial,
            turn,
            counted_turn if turn_position is None else turn_position,
            counted_sample if sample_position is None else sample_position,
            counted_member if member is None else member,
        )

    def _state(self, key: tuple[Any, ...]) -> _SampleState:
        state = self._samples.get(key)
        if state is None:
            state = self._samples[key] = _SampleState()
            if len(self._samples) > self._limit:
                self._samples.popitem(last=False)
        else:
            self._samples.move_to_end(key)
        return state

    def decide(self, place: CallPlace, tool: str, args_key: str) -> Fault | None:
        """The fault of this call, or None: a remembered answer for a retried call, else the schedule's draw."""
        key = (place.run, place.sample, place.trial)
        now = self._clock()
        with self._lock:
            state = self._state(key)
            seen = state.faulted.get((tool, args_key))
            if seen is not None:
                fault, when = seen
                early = fault.kind == "rate_limit" and now - when < fault.retry_after
                if not fault.transient or early:
                    again = Fault(
                        fault.kind,
                        fault.transient,
                        place,
                        fault.schedule,
                        fault.rule,
                        fault.retry_after,
                        fault.timeout_ms,
                        repeat=True,
                    )
                    if early:
                        state.faulted[(tool, args_key)] = (fault, now)
                    return again
                del state.faulted[(tool, args_key)]  # a transient fault passes once retried
                return None
            rule = self.schedule.fires(place, tool)
            if rule is None:
                return None
            fault = Fault(
                rule.kind,
                rule.transient,
                place,
                self.schedule.digest,
                rule.index,
                rule.retry_after,
                rule.timeout_ms,
            )
            state.faulted[(tool, args_key)] = (fault, now)
            return fault
