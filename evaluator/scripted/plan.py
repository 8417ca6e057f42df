"""What the scripted model says next: the gold plan of a (sample, trial, turn), walked statelessly.

A request carries the conversation so far. The plan of the turn is the benchmark's gold groups
(``oracle``) or the noisy agent's perturbed steps (``noisy``, seeded by (seed, sample, trial, turn)
like :class:`evaluator.agents.noisy.NoisyAgent`); every planned call gets the id
``call_fm_t{turn}_{index}``. The calls already answered are read from the conversation after the
turn's user message: tool results naming those ids (``tool`` messages, ``function_call_output``
items), else the ids written in text (frameworks that serialise calls as text, like smolagents), else
the number of tool results. The reply is the first step with calls not yet answered (the rest of a
step a framework ran only partly), or, when every call is answered, the gold reply — as a call of a
``final_answer`` tool when the request offers one that the benchmark does not have (smolagents).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from finmcp.evaluator.agents.arguments import QuestionEntities, tool_arguments
from finmcp.evaluator.agents.base import ToolCall, seeded_rng
from finmcp.evaluator.agents.noisy import NoiseRates, perturb
from finmcp.evaluator.inputs.model import Reference

CALL_ID = re.compile(r"call_fm_t(\d+)_(\d+)")
FINAL_TOOL = "final_answer"


class ScriptError(Exception):
    """A request the script cannot answer: ``status`` and ``code`` for the OpenAI-style error body."""

    def __init__(self, message: str, status: int = 400, code: str = "invalid_request") -> None:
        super().__init__(message)
        self.status = status
        self.code = code


@dataclass
class Entry:
    """One message of a request, normalised over Chat Completions and Responses."""

    role: str
    """``system``, ``user``, ``assistant`` or ``tool``."""
    text: str = ""
    call_ids: list[str] = field(default_factory=list)
    """Ids of the tool calls an assistant message made."""
    result_for: str | None = None
    """The call id a tool result answers."""


@dataclass
class Conversation:
    """A request's messages and the tools it offers (name -> JSON schema of the parameters)."""

    entries: list[Entry]
    tools: dict[str, dict[str, Any]]


@dataclass(frozen=True)
class PlannedCall:
    """A call of the reply: its id, the name the framework exposes, the arguments as JSON text."""

    id: str
    name: str
    arguments: str


@dataclass
class Reply:
    """The model's reply: tool calls (one parallel step) or the final text."""

    calls: list[PlannedCall]
    text: str = ""
    sample: str = ""
    turn: int = 0


@dataclass(frozen=True)
class Where:
    """Which task a request belongs to, from its tags (any may be missing)."""

    sample: str | None = None
    turn: int | None = None
    trial: int = 0


class Script:
    """A benchmark's references and a policy (``oracle`` or ``noisy`` with rates and a seed)."""

    def __init__(
        self,
        refs: list[Reference],
        policy: str = "oracle",
        rates: NoiseRates | None = None,
        seed: int = 0,
        tool_names: list[str] | None = None,
    ) -> None:
        if policy not in ("oracle", "noisy"):
            raise ValueError(f"unknown policy {policy!r}; choose oracle or noisy")
        self.refs = {r.id: r for r in refs}
        self.policy = policy
        self.rates = rates or NoiseRates()
        self.seed = seed
        self.tool_names = sorted(
            tool_names or {c.tool for r in refs for t in r.turns for g in t.calls for c in g}
        )
        self._by_text: dict[str, list[tuple[str, int]]] = {}
        for r in refs:
            for k, turn in enumerate(r.turns):
                self._by_text.setdefault(turn.user.strip(), []).append((r.id, k))

    def reply(self, where: Where, convo: Conversation) -> Reply:
        """The next reply for this conversation (raises :class:`ScriptError` when no task matches)."""
        ref, turn, anchor = self._locate(where, convo.entries)
        steps = self._steps(ref, turn, where.trial, convo.tools)
        done = answered(convo.entries[anchor + 1 :], turn)
        index = 0
        for step in steps:
            pending = []
            for call in step:
                if index not in done:
                    name = exposed_name(call.tool, list(convo.tools))
                    arguments = json.dumps(call.arguments, ensure_ascii=False)
                    pending.append(PlannedCall(f"call_fm_t{turn}_{index}", name, arguments))
                index += 1
            if pending:
                return Reply(pending, sample=ref.id, turn=turn)
        text = ref.turns[turn].assistant
        if FINAL_TOOL in convo.tools and FINAL_TOOL not in self.tool_names:
            answer = json.dumps({"answer": text}, ensure_ascii=False)
            return Reply([PlannedCall(f"call_fm_t{turn}_final", FINAL_TOOL, answer)], text, ref.id, turn)
        return Reply([], text, ref.id, turn)

    def _steps(
        self, ref: Reference, turn: int, trial: int, tools: dict[str, dict[str, Any]]
    ) -> list[list[ToolCall]]:
        gold = gold_calls(ref, turn, tools)
        if self.policy == "oracle":
            return gold
        rng = seeded_rng(self.seed, ref.id, trial, turn)
        return perturb(gold, self.rates, rng, self.tool_names)

    def _locate(self, where: Where, entries: list[Entry]) -> tuple[Reference, int, int]:
        """(reference, turn, index of the turn's user message in ``entries``; -1 when not found)."""
        users = [(i, e.text) for i, e in enumerate(entries) if e.role == "user"]
        if where.sample is not None:
            ref = self.refs.get(where.sample)
            if ref is None:
                raise ScriptError(
                    f"unknown sample {where.sample!r} (not in this benchmark)", 404, "unknown_sample"
                )
            if where.turn is not None and not 0 <= where.turn < len(ref.turns):
                raise ScriptError(
                    f"sample {ref.id}: turn {where.turn} out of range (it has {len(ref.turns)} turns)",
                    404,
                    "unknown_turn",
                )
            for i, text in reversed(users):
                for k in reversed(range(len(ref.turns))):
                    if (where.turn is None or k == where.turn) and _holds(text, ref.turns[k].user):
                        return ref, k, i
            if where.turn is None:
                raise ScriptError(
                    f"sample {ref.id}: no user message of its turns in the request; tag the turn"
                )
            last = users[-1][0] if users else -1
            return ref, where.turn, last
        for i, text in reversed(users):
            hits = self._by_text.get(text.strip())
            if hits is None:
                hits = [hit for key, found in self._by_text.items() if key and key in text for hit in found]
            if hits:
                sample, k = hits[0]
                return self.refs[sample], k, i
        raise ScriptError(
            "no task matches this request: tag the URL (/r/RUN/s/SAMPLE/t/TURN/v1/...) or send a "
            "benchmark sample's user message",
            404,
            "unknown_task",
        )


def _holds(text: str, user: str) -> bool:
    user = user.strip()
    return bool(user) and (text.strip() == user or user in text)


def gold_calls(ref: Reference, turn: int, tools: dict[str, dict[str, Any]]) -> list[list[ToolCall]]:
    """The gold groups of a turn as calls; references without arguments get schema-valid ones built
    from the offered tool's parameters and the question (as the oracle agent does)."""
    groups = ref.turns[turn].calls
    if ref.args_known:
        return [[ToolCall(c.tool, dict(c.arguments)) for c in group] for group in groups]
    entities = QuestionEntities.parse(ref.turns[turn].user)
    names = list(tools)
    out = []
    for group in groups:
        calls = []
        for c in group:
            schema = tools.get(exposed_name(c.tool, names))
            entry = {"name": c.tool, "inputSchema": schema} if schema is not None else None
            calls.append(ToolCall(c.tool, tool_arguments(entry, entities)))
        out.append(calls)
    return out


def answered(entries: list[Entry], turn: int) -> set[int]:
    """Indexes of this turn's planned calls that the conversation already answers."""
    results = [e.result_for for e in entries if e.role == "tool"]
    done = {
        int(m.group(2)) for r in results if r for m in [CALL_ID.fullmatch(r)] if m and int(m.group(1)) == turn
    }
    if done:
        return done
    if results:  # ids the framework made up: the first N calls
        return set(range(len(results)))
    text = "\n".join(e.text for e in entries)  # calls serialised as text
    return {int(m.group(2)) for m in CALL_ID.finditer(text) if int(m.group(1)) == turn}


def sanitized(name: str) -> str:
    """A tool name as OpenAI function names allow it (``[A-Za-z0-9_-]``)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)


def _folded(name: str) -> str:
    """A name lower-cased without separators (``fund-equity-position`` and ``fund_equity_position`` agree)."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def exposed_name(gold: str, offered: list[str]) -> str:
    """The name under which the framework offers the gold tool ``gold``.

    Exact, else a name ending with it after a prefix (``mcp__finmcp__Tool``, ``finmcp_Tool``), else
    one equal to it lower-cased without separators (``fund_equity_position`` for
    ``fund-equity-position``), else such a name ending with it after a prefix; the shortest such; else
    ``gold`` itself."""
    if not offered or gold in offered:
        return gold
    clean = sanitized(gold)
    for wanted in (gold, clean):
        ends = [n for n in offered if n.endswith(wanted) and not n[: -len(wanted)][-1:].isalnum()]
        if ends:
            return min(ends, key=len)
    key = _folded(gold)
    folded = [n for n in offered if _folded(n) == key]
    if not folded:
        folded = [n for n in offered if n.endswith(tuple(f"_{s}" for s in _suffixes(n, key)))]
    return min(folded, key=len) if folded else gold


def _suffixes(name: str, key: str) -> list[str]:
    """The trailing parts of ``name`` (split at ``_``) whose folded form is ``key``."""
    parts = name.split("_")
    return ["_".join(parts[i:]) for i in range(1, len(parts)) if _folded("_".join(parts[i:])) == key]
