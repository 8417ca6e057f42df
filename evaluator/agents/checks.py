"""What a model's requested calls got wrong, as agent events (kept per sample in the run state).

- ``malformed_arguments``: the argument text is not a JSON object (not JSON at all, or a list,
  string, number). The call is still made with the text as sent, so the trace keeps it and the
  server's error reaches the model; the evaluator flags the call ``malformed``.
- ``wrong_argument_types``: a JSON object that does not fit the tool's ``inputSchema`` (first
  violation named); the call is made as asked.
- ``unknown_tool``: a tool name that was not offered.
- ``repeated_call``: the same tool with the same arguments several times in a row
  (:data:`LOOP_AT` or more), e.g. until the call cap.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from jsonschema import validators
from jsonschema.exceptions import SchemaError

from finmcp.evaluator.inputs.model import LOOP_AT

RAW_LIMIT = 300
"""Characters of a malformed argument text kept in an event."""


def read_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """The model's arguments as an object, and why they are malformed (None when they are fine).

    Empty or missing arguments read as ``{}``; so does anything malformed (with the reason)."""
    if isinstance(raw, dict):
        return raw, None
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None
    if not isinstance(raw, str):
        return {}, f"arguments are a JSON {type(raw).__name__}, not a string or object"
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return {}, f"not JSON: {exc.msg} at character {exc.pos}"
    if not isinstance(value, dict):
        return {}, f"JSON {type(value).__name__}, not an object"
    return value, None


@dataclass
class CallChecker:
    """Checks the calls of one turn against the offered tools; collects the events."""

    schemas: dict[str, dict[str, Any]]
    """Offered tool name -> its ``inputSchema``."""
    events: list[dict[str, Any]] = field(default_factory=list)
    last: str | None = None
    streak: int = 0
    longest: tuple[int, str] = (0, "")
    _validators: dict[str, Any] = field(default_factory=dict)

    def check(self, step: int, tool: str, raw: Any) -> tuple[dict[str, Any], str | None]:
        """(arguments to use, raw text to send instead when malformed) for one requested call."""
        arguments, problem = read_arguments(raw)
        where = {"step": step, "tool": tool}
        send_raw = None
        if problem is not None:
            text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
            self.events.append(
                {"kind": "malformed_arguments", **where, "why": problem, "raw": text[:RAW_LIMIT]}
            )
            send_raw = text
        elif tool not in self.schemas:
            self.events.append({"kind": "unknown_tool", **where})
        else:
            violation = self._violation(tool, arguments)
            if violation:
                self.events.append({"kind": "wrong_argument_types", **where, "why": violation})
        self._count(tool, send_raw if send_raw is not None else arguments)
        return arguments, send_raw

    def _violation(self, tool: str, arguments: dict[str, Any]) -> str | None:
        if tool not in self._validators:
            schema = self.schemas[tool] or {}
            try:
                cls = validators.validator_for(schema)
                cls.check_schema(schema)
                self._validators[tool] = cls(schema)
            except SchemaError:
                self._validators[tool] = None
        validator = self._validators[tool]
        if validator is None:
            return None
        error = next(iter(validator.iter_errors(arguments)), None)
        if error is None:
            return None
        path = "/".join(str(p) for p in error.absolute_path)
        return f"{path}: {error.message}" if path else error.message

    def _count(self, tool: str, arguments: Any) -> None:
        key = tool + "\0" + json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)
        self.streak = self.streak + 1 if key == self.last else 1
        self.last = key
        if self.streak > self.longest[0]:
            self.longest = (self.streak, tool)

    def repeat_note(self) -> str | None:
        """'repeated identical call ×N: TOOL' when the turn ended on a streak of LOOP_AT or more."""
        if self.streak < LOOP_AT or self.last is None:
            return None
        return f"repeated identical call ×{self.streak}: {self.last.split(chr(0), 1)[0]}"

    def finish(self) -> list[dict[str, Any]]:
        """The turn's events, with one ``repeated_call`` event for its longest streak (>= LOOP_AT)."""
        times, tool = self.longest
        if times >= LOOP_AT:
            self.events.append({"kind": "repeated_call", "tool": tool, "times": times})
        return self.events
