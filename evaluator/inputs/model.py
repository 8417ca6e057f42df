"""In-memory shapes shared by the evaluator: calls, turns, references and predictions, and their sets."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SAMPLE_TYPES = ("single_tool", "multi_tool", "multi_turn")
DIFFICULTIES = ("easy", "medium", "hard")

Groups = list[list["Call"]]
"""Calls of one turn, as ordered groups; calls inside a group are parallel."""
LOOP_AT = 3
"""Identical calls (same tool, same arguments) in a row from which an agent's turn counts as looping."""


@dataclass(slots=True)
class Call:
    """One tool call: name and arguments, plus what a trace knows about its outcome."""

    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    status: str | None = None
    """'ok' | 'tool_error' | 'rpc_error' | 'transport_error' | 'cancelled' (traces only)."""
    output: Any = None
    """Observation as the agent saw it (string or object); None when unknown."""
    malformed: bool = False
    """True when the arguments could not be parsed as a JSON object."""


@dataclass(slots=True)
class Turn:
    """One user turn of a reference: the user text, the gold call groups, the gold reply."""

    user: str
    calls: Groups
    assistant: str = ""


def difficulty_from_count(total_calls: int) -> str:
    """FinMCP-Bench difficulty from the total number of calls: easy <= 5, medium 6-10, hard > 10."""
    if total_calls <= 5:
        return "easy"
    if total_calls <= 10:
        return "medium"
    return "hard"


@dataclass(slots=True)
class Reference:
    """A gold sample in the project's reference format (whatever file it was read from)."""

    id: str
    type: str
    scenario: str
    turns: list[Turn]
    sub_scenario: str = ""
    inventory: str = ""
    difficulty: str = ""
    """Difficulty level; derived from the call count when the source has none."""
    task: str = ""
    """Grouping key of the official FinMCP script ('single_step' ...); defaults to ``type``."""
    level1: str = ""
    """Level-1 scenario as the official script computes it (``scenery.split('-')[0].strip()``)."""
    args_known: bool = True
    """False when the source gives tool names only (FinToolBench ``select_tools``)."""
    question: str = ""
    ground_truth: str = ""
    source: str = "finmcp"
    """'finmcp' (own or official FinMCP-Bench JSON) or 'fintoolbench'."""

    def __post_init__(self) -> None:
        if not self.difficulty:
            self.difficulty = difficulty_from_count(self.call_count)
        if not self.task:
            self.task = self.type
        if not self.level1:
            self.level1 = self.scenario

    @property
    def call_count(self) -> int:
        """Total number of gold calls over all turns."""
        return sum(len(g) for t in self.turns for g in t.calls)

    def groups_by_turn(self) -> list[Groups]:
        """Gold groups of every turn."""
        return [t.calls for t in self.turns]


@dataclass(slots=True)
class Prediction:
    """What an agent did on one sample (one trial): call groups per turn and, if known, answers."""

    sample_id: str
    turns: list[Groups]
    trial: int = 0
    run_id: str = ""
    answer: str | None = None
    """Final answer text (last turn), when the source records it."""
    error: Any = None
    """Sample-level error (official FinMCP ``error`` flag, FinToolBench record ``error``)."""
    question: str | None = None
    ground_truth: str | None = None
    record: dict[str, Any] | None = None
    """The raw FinToolBench result record when read from one (scored verbatim by its evaluator)."""
    invalid: str | None = None
    """Why the official FinMCP script would skip this prediction (malformed tool_calls), or None."""
    agent: dict[str, Any] | None = None
    """What the harness's run state says the agent saw of the model: ``stopped`` (per turn) and
    ``events`` (:mod:`evaluator.agents.checks`); None when not known."""

    def calls(self) -> list[Call]:
        """All calls in order (turns, then groups, then position)."""
        return [c for groups in self.turns for g in groups for c in g]


@dataclass
class ReferenceSet:
    """Loaded references plus what was noticed while loading them."""

    samples: list[Reference]
    format: str
    path: str = ""
    warnings: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)

    def by_id(self) -> dict[str, Reference]:
        """References keyed by sample id."""
        return {r.id: r for r in self.samples}


@dataclass
class PredictionSet:
    """Predictions of one run: per sample id, the trials in trial order."""

    by_sample: dict[str, list[Prediction]]
    format: str
    source: str
    run_id: str = ""
    warnings: list[str] = field(default_factory=list)
    records: list[Any] | None = None
    """Raw records of an official FinMCP prediction file (they embed the references)."""
    fingerprint: dict[str, Any] | None = None
    """What the run was measured on (a trace store's ``runs.meta``; :mod:`evaluator.inputs.fingerprint`)."""

    def first_trial(self) -> dict[str, Prediction]:
        """The lowest-numbered trial of every sample."""
        return {sid: trials[0] for sid, trials in self.by_sample.items() if trials}

    def trial_count(self) -> int:
        """Largest number of trials any sample has."""
        return max((len(t) for t in self.by_sample.values()), default=0)


def add_trial(by_sample: dict[str, list[Prediction]], pred: Prediction) -> None:
    """Add ``pred`` to its sample's trials, kept in trial order."""
    trials = by_sample.setdefault(pred.sample_id, [])
    trials.append(pred)
    if len(trials) > 1:
        trials.sort(key=lambda p: p.trial)
