"""Pluggable judges for FinToolBench: an OpenAI-compatible LLM (cached) or the offline rule judge.

A judge answers ``ask(kind, fields, repeat) -> reply text``; the reply is the JSON text the released
evaluator expects (``{"score", "label", "reason"}`` for kind ``score``; ``{"match", "reason"}`` for
``timeliness`` / ``intent`` / ``domain``). The evaluator parses replies exactly as the released code does,
so a judge that returns garbage simply yields skipped verdicts.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.llm import ChatClient, Endpoint, LlmError
from finmcp.evaluator.progress import Progress


class Judge(Protocol):
    """What the FinToolBench evaluators need from a judge."""

    name: str

    def ask(self, kind: str, fields: dict[str, Any], repeat: int) -> str:
        """Reply text for one judgment; ``repeat`` numbers repeated judgments of the same prompt."""
        ...


_SCORE_RULES = {
    "numeric": (
        "Decide strictly whether the number in the model answer equals the number in the reference answer. "
        "Converting units is fine; approximations are not. Score 1.0 if equal, otherwise 0.0.",
        "correct|wrong",
    ),
    "choice": (
        "Decide strictly whether the model picked exactly the reference option. Several options or an "
        "unclear choice score 0.0; the exact option scores 1.0.",
        "correct|wrong",
    ),
    "criterium": (
        "The reference lists weighted criteria. Judge whether the model's multi-factor analysis is sound: "
        "does it cover the key factors, get their direction right and weigh them sensibly? "
        "Score 1.0 sound, 0.5 partly sound, 0.0 unsound.",
        "correct|partial|wrong",
    ),
    "other_str": (
        "Judge the model answer against the reference. 1.0: fully right (equivalent wording or units are "
        "fine); 0.5: the main conclusion is right but key points are missing or slightly wrong; "
        "0.0: wrong or not an answer.",
        "correct|partial|wrong",
    ),
}

_MATCH_RULES = {
    "timeliness": (
        "Does the data freshness the question needs (real-time, daily, as filed, periodic or static) fit "
        "the tool's timeliness? Ignore whether the call worked.",
        "Tool timeliness",
    ),
    "intent": (
        "Does what the question wants fit the tool's intent class (informational, advisory, "
        "transactional)? Consider intent only.",
        "Tool intent",
    ),
    "domain": (
        "Is the question's financial domain the same as, or clearly overlapping with, the tool's "
        "regulatory domains?",
        "Tool regulatory domains",
    ),
}


def build_prompt(kind: str, fields: dict[str, Any]) -> str:
    """finmcp's own judge prompt for one judgment (same intent as the released prompts)."""
    if kind == "score":
        rule, labels = _SCORE_RULES.get(fields.get("answer_type", ""), _SCORE_RULES["other_str"])
        return (
            f"You grade answers to financial questions. {rule}\n\n"
            f"Question: {fields.get('question', '')}\nModel answer: {fields.get('answer', '')}\n"
            f"Reference answer: {fields.get('gold', '')}\n\n"
            f'Reply with JSON only: {{"score": <number>, "label": "{labels}", "reason": "<20 words or fewer>"}}'
        )
    rule, tag_label = _MATCH_RULES[kind]
    return (
        f"You check whether a financial tool suits a question. {rule}\n\n"
        f"Question: {fields.get('question', '')}\nTool: {fields.get('tool_name', '')}\n"
        f"{tag_label}: {fields.get('tag')}\nTool description: {fields.get('description', '')}\n\n"
        'Reply with JSON only: {"match": "yes|no", "reason": "<20 words or fewer>"}'
    )


class JudgeCache:
    """Persistent judgment cache (SQLite, stdlib) keyed by a hash of model, prompt and repeat index."""

    def __init__(self, path: str | Path | None) -> None:
        self._lock = threading.Lock()
        self._mem: dict[str, str] = {}
        self._con = None
        if path:
            self._con = sqlite3.connect(str(path), check_same_thread=False)
            self._con.execute("CREATE TABLE IF NOT EXISTS judgments (key TEXT PRIMARY KEY, reply TEXT)")
            self._con.commit()

    @staticmethod
    def key(model: str, prompt: str, repeat: int) -> str:
        """Stable cache key."""
        return hashlib.sha256(f"{model}\x00{repeat}\x00{prompt}".encode()).hexdigest()

    def get(self, key: str) -> str | None:
        with self._lock:
            if key in self._mem:
                return self._mem[key]
            if self._con is not None:
                row = self._con.execute("SELECT reply FROM judgments WHERE key = ?", (key,)).fetchone()
                if row is not None:
                    self._mem[key] = row[0]
                    return row[0]
        return None

    def put(self, key: str, reply: str) -> None:
        with self._lock:
            self._mem[key] = reply
            if self._con is not None:
                self._con.execute("INSERT OR REPLACE INTO judgments VALUES (?, ?)", (key, reply))
                self._con.commit()


class LLMJudge:
    """An OpenAI-compatible ``/chat/completions`` judge (:class:`evaluator.llm.ChatClient`).

    A failed request replies '' (the verdict is skipped) and is never cached; a non-empty reply is
    cached under (model, repeat index, prompt). :meth:`prefetch` asks many judgments concurrently.
    """

    def __init__(
        self, chat: ChatClient, cache: JudgeCache | None = None, concurrency: int = 4, progress: bool = False
    ) -> None:
        self.chat = chat
        self.model = chat.model
        self.name = f"llm:{chat.model}"
        self.cache = cache or JudgeCache(None)
        self.concurrency = concurrency
        self.progress = progress
        """Show :meth:`prefetch`'s progress (count, rate, ETA) on stderr."""

    def ask(self, kind: str, fields: dict[str, Any], repeat: int) -> str:
        """The reply text for one judgment: cached, else asked now ('' when the request failed)."""
        prompt = build_prompt(kind, fields)
        key = JudgeCache.key(self.model, prompt, repeat)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        try:
            reply = _reply_text(self.chat.chat(_messages(prompt)))
        except LlmError:
            return ""
        self._keep(key, reply)
        return reply

    def prefetch(self, asks: Iterable[tuple[str, dict[str, Any], int]]) -> None:
        """Ask every (kind, fields, repeat) judgment not cached yet, ``concurrency`` requests at a time,
        and cache the replies; failed requests are left out, so :meth:`ask` tries them again."""
        todo: dict[str, str] = {}
        for kind, fields, repeat in asks:
            prompt = build_prompt(kind, fields)
            key = JudgeCache.key(self.model, prompt, repeat)
            if key not in todo and self.cache.get(key) is None:
                todo[key] = prompt
        enabled = self.progress and bool(todo)
        with Progress("judge", len(todo), enabled=enabled, unit="judgments") as bar:
            replies = self.chat.chat_many(
                [_messages(p) for p in todo.values()], self.concurrency, on_done=bar.advance
            )
        for key, reply in zip(todo, replies, strict=True):
            if not isinstance(reply, LlmError):
                self._keep(key, _reply_text(reply))

    def _keep(self, key: str, reply: str) -> None:
        if reply:  # an empty answer is not worth keeping: the next run asks again
            self.cache.put(key, reply)


class AskRecorder:
    """A judge that only notes what it is asked (and replies ''), to learn a run's judgments up front."""

    name = "recorder"

    def __init__(self) -> None:
        self.asks: list[tuple[str, dict[str, Any], int]] = []

    def ask(self, kind: str, fields: dict[str, Any], repeat: int) -> str:
        """Note the judgment; the empty reply makes the verdict skipped."""
        self.asks.append((kind, dict(fields), repeat))
        return ""


def _messages(prompt: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": prompt}]


def _reply_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else ""


def make_judge(
    kind: str, endpoint: Endpoint | None = None, cache_path: str | None = None, progress: bool = False
):
    """'rules' (offline, default) or 'llm' (asks ``endpoint`` at temperature 0.8, 500 tokens;
    ``progress`` shows its judgments' progress on stderr)."""
    if kind == "rules":
        from finmcp.evaluator.metrics.rule_judge import RuleJudge

        return RuleJudge()
    if kind == "llm":
        if endpoint is None:
            raise EvalInputError("--judge llm needs --llm-url URL and --llm-model NAME")
        try:
            chat = endpoint.client(temperature=0.8, max_tokens=500)  # the agent's retry policy
        except LlmError as exc:
            raise EvalInputError(str(exc)) from None
        return LLMJudge(chat, JudgeCache(cache_path), progress=progress)
    raise EvalInputError(f"unknown judge {kind!r}: use 'rules' or 'llm'")
