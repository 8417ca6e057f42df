"""The task format ``finmcp-task/1``: what an outside agent gets for one (sample, trial, turn).

A task is one JSON object (one line of ``finmcp-eval tasks``' JSONL, the stdin of a ``--agent cmd:``
program, the argument of a ``--agent python:`` callable as a :class:`Task`). Its JSON Schema is
``finmcp-task-1.schema.json`` in this package (:func:`schema`). Fields:

- ``format``: ``"finmcp-task/1"``; ``run``, ``sample``, ``turn`` (0-based), ``trial`` (0-based),
  ``turns`` (how many the sample has), ``benchmark`` (``finmcp`` or ``fintoolbench``: whose
  protocol the sample follows);
- ``user``: this turn's user message; ``messages``: the gold history in OpenAI chat format, exactly
  what finmcp's own agents get (earlier turns with their gold calls, outputs and replies, then this
  user message last);
- ``mcp_url``: the tagged MCP endpoint of this (sample, trial, turn) on the proxy; every tool call
  must go there (the trace is keyed by its tags). With ``tools`` set, its ``tools/list`` lists only
  those (the ``?tools=`` query, docs/evaluator.md);
- ``model_url``: the tagged model endpoint (``…/t/{turn}/v1``, OpenAI-compatible) of the proxy's
  model door, for agents whose model traffic should be logged with the tools;
- ``limits``: ``max_calls`` (tool calls per turn; FinMCP-Bench: 20) and ``max_steps`` (assistant
  steps per turn; FinToolBench: 5; null: none);
- ``tools``: the tool names the protocol offers (FinToolBench: FATR-style top-K by BM25), or null
  (every tool of ``tools/list``).

A later version adds a field only with a new ``format`` (``finmcp-task/2``); readers ignore fields
they do not know.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from importlib.resources import files
from typing import Any

TASK_FORMAT = "finmcp-task/1"
SCHEMA_FILE = "finmcp-task-1.schema.json"


class TaskFormatError(ValueError):
    """A task that is not a ``finmcp-task/1`` object (named in the message)."""


@dataclass(frozen=True)
class Limits:
    """How much an agent may do in one turn."""

    max_calls: int = 20
    max_steps: int | None = None


@dataclass(frozen=True)
class Task:
    """One (sample, trial, turn) for an outside agent (see the module docstring)."""

    run: str
    sample: str
    turn: int
    trial: int
    turns: int
    benchmark: str
    user: str
    messages: list[dict[str, Any]]
    mcp_url: str
    model_url: str
    limits: Limits = field(default_factory=Limits)
    tools: list[str] | None = None
    format: str = TASK_FORMAT

    def to_dict(self) -> dict[str, Any]:
        """The task as its JSON object."""
        return asdict(self)

    def to_json(self) -> str:
        """One line of JSON (UTF-8 text, no newline)."""
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: Any) -> Task:
        """A task from its JSON object; :class:`TaskFormatError` names what is wrong."""
        if not isinstance(data, dict):
            raise TaskFormatError(f"a task is a JSON object, not {type(data).__name__}")
        if data.get("format") != TASK_FORMAT:
            raise TaskFormatError(f"task format {data.get('format')!r}: expected {TASK_FORMAT!r}")
        try:
            limits = Limits(**(data.get("limits") or {}))
            return cls(
                run=str(data["run"]),
                sample=str(data["sample"]),
                turn=int(data["turn"]),
                trial=int(data["trial"]),
                turns=int(data["turns"]),
                benchmark=str(data["benchmark"]),
                user=str(data["user"]),
                messages=list(data["messages"]),
                mcp_url=str(data["mcp_url"]),
                model_url=str(data["model_url"]),
                limits=limits,
                tools=None if data.get("tools") is None else [str(t) for t in data["tools"]],
            )
        except KeyError as exc:
            raise TaskFormatError(f"task without field {exc.args[0]!r}") from None
        except (TypeError, ValueError) as exc:
            raise TaskFormatError(f"task field of the wrong type: {exc}") from None

    @classmethod
    def from_json(cls, text: str | bytes) -> Task:
        """A task from its JSON text."""
        try:
            return cls.from_dict(json.loads(text))
        except json.JSONDecodeError as exc:
            raise TaskFormatError(f"task is not JSON: {exc}") from None


@dataclass(frozen=True)
class AgentResult:
    """What a ``--agent python:`` callable may return instead of the answer string."""

    answer: str | None = None
    error: str | None = None
    """Why the agent has no answer (the turn is then a failure, said so in the run state and report)."""


def schema() -> dict[str, Any]:
    """The JSON Schema of ``finmcp-task/1`` (the file shipped in this package)."""
    text = files("finmcp.evaluator.tasks").joinpath(SCHEMA_FILE).read_text("utf-8")
    return dict(json.loads(text))
