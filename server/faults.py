"""Fault injection: seeded, per-tool-pattern errors, timeouts and broken outputs.

A rule is ``PATTERN:KIND=RATE[,KIND=RATE...][,timeout_ms=N]``; several rules are separated by ``;`` or
given as repeated ``--faults`` options, and the first rule whose glob ``PATTERN`` matches the tool
name applies. Kinds:

- ``error``: an ``isError`` result saying the upstream service failed;
- ``rpc_error``: a JSON-RPC internal error instead of a result;
- ``timeout``: wait ``timeout_ms`` (default 30000), then an ``isError`` result saying it timed out;
- ``malformed``: the normal answer's text cut in half (invalid JSON), without ``structuredContent``;
- ``empty``: an answer with no content at all.

Example: ``--faults 'Get*:error=0.1,timeout=0.02;SearchFunds:malformed=0.5'``. Whether a call
faults is drawn from (seed, tool, canonical arguments, occurrence), see :mod:`server.seeded`.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from finmcp.recordings.plumbing.seeding import unit_draw

FAULT_KINDS = ("error", "rpc_error", "timeout", "malformed", "empty")
DEFAULT_TIMEOUT_MS = 30_000.0


class FaultSpecError(ValueError):
    """A ``--faults`` value that cannot be parsed."""


@dataclass(frozen=True)
class FaultRule:
    """Fault rates for the tools whose names match ``pattern``."""

    pattern: str
    rates: tuple[tuple[str, float], ...]
    timeout_ms: float = DEFAULT_TIMEOUT_MS

    def matches(self, tool: str) -> bool:
        """True when the rule's glob matches the tool name."""
        return fnmatch.fnmatchcase(tool, self.pattern)

    def pick(self, u: float) -> str | None:
        """The fault kind for a uniform draw ``u``, or None for no fault."""
        total = 0.0
        for kind, rate in self.rates:
            total += rate
            if u < total:
                return kind
        return None


@dataclass(frozen=True)
class FaultPlan:
    """Parsed fault rules plus the seed; :meth:`decide` says which fault (if any) a call gets."""

    rules: tuple[FaultRule, ...] = ()
    seed: int = 0

    def __bool__(self) -> bool:
        return bool(self.rules)

    def rule_for(self, tool: str) -> FaultRule | None:
        """The first rule matching ``tool``."""
        for rule in self.rules:
            if rule.matches(tool):
                return rule
        return None

    def decide(self, tool: str, key: str, occurrence: int) -> tuple[str, FaultRule] | None:
        """``(kind, rule)`` when this call gets a fault, else None."""
        rule = self.rule_for(tool)
        if rule is None:
            return None
        kind = rule.pick(unit_draw(self.seed, "fault", tool, key, occurrence))
        return None if kind is None else (kind, rule)


_RULE_RE = re.compile(r"^\s*(?P<pattern>[^:;]+?)\s*:\s*(?P<body>.+?)\s*$")


def _parse_rule(text: str) -> FaultRule:
    match = _RULE_RE.match(text)
    if not match:
        raise FaultSpecError(f"--faults {text!r}: expected PATTERN:KIND=RATE[,KIND=RATE...][,timeout_ms=N]")
    pattern = match["pattern"]
    rates: dict[str, float] = {}
    timeout_ms = DEFAULT_TIMEOUT_MS
    for item in match["body"].split(","):
        name, sep, value = (part.strip() for part in item.partition("="))
        if not sep:
            raise FaultSpecError(f"--faults {text!r}: {item.strip()!r} should be KIND=RATE")
        try:
            number = float(value)
        except ValueError:
            raise FaultSpecError(f"--faults {text!r}: {name}={value!r} is not a number") from None
        if not math.isfinite(number):
            raise FaultSpecError(f"--faults {text!r}: {name}={value!r} must be finite")
        if name == "timeout_ms":
            if number < 0:
                raise FaultSpecError(f"--faults {text!r}: timeout_ms must be >= 0")
            timeout_ms = number
            continue
        if name not in FAULT_KINDS:
            raise FaultSpecError(
                f"--faults {text!r}: unknown fault kind {name!r}; expected one of {', '.join(FAULT_KINDS)}"
            )
        if not 0 <= number <= 1:
            raise FaultSpecError(f"--faults {text!r}: rate {name}={value} must be between 0 and 1")
        rates[name] = number
    if not rates:
        raise FaultSpecError(f"--faults {text!r}: no fault kind given")
    if sum(rates.values()) > 1 + 1e-9:
        raise FaultSpecError(f"--faults {text!r}: the rates add up to more than 1")
    ordered = tuple((kind, rates[kind]) for kind in FAULT_KINDS if kind in rates)
    return FaultRule(pattern=pattern, rates=ordered, timeout_ms=timeout_ms)


def parse_faults(specs: Iterable[str], seed: int = 0) -> FaultPlan:
    """Parse ``--faults`` values (each may hold several ``;``-separated rules)."""
    rules = [_parse_rule(part) for spec in specs for part in spec.split(";") if part.strip()]
    return FaultPlan(rules=tuple(rules), seed=seed)
