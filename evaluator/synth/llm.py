"""Optional LLM helpers over any OpenAI-compatible ``/chat/completions`` endpoint (never required).

- :class:`PromptReplies`: reply texts of a :class:`evaluator.llm.ChatClient` (temperature 0), cached in
  memory per prompt; a failed request replies '' and is not cached;
- :class:`LlmEdgeJudge`: asks whether tool A's output can feed tool B (graph validation);
- :class:`LlmQueryWriter`: writes a user query for a chain, with real single-tool queries as
  in-context examples.
The API key is read from ``OPENAI_API_KEY``.
"""

from __future__ import annotations

import json
from typing import Any

from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.llm import ChatClient, Endpoint, LlmError
from finmcp.evaluator.synth.chains import Chain
from finmcp.evaluator.synth.context import SampleContext
from finmcp.evaluator.synth.texts import compose
from finmcp.tool_specs.inventory import Inventory


class PromptReplies:
    """``ask(prompt)`` is the model's reply text ('' on failure); successful replies are cached."""

    def __init__(self, chat: ChatClient) -> None:
        self.chat = chat
        self.cache: dict[str, str] = {}

    @classmethod
    def connect(cls, endpoint: Endpoint) -> PromptReplies:
        """A client for ``endpoint`` at temperature 0 (for reproducibility); a bad URL is an input error."""
        try:
            return cls(endpoint.client(temperature=0))
        except LlmError as exc:
            raise EvalInputError(str(exc)) from None

    def ask(self, prompt: str, system: str = "") -> str:
        """The reply text for one prompt ('' on failure, which is not cached)."""
        if prompt in self.cache:
            return self.cache[prompt]
        messages = ([{"role": "system", "content": system}] if system else []) + [
            {"role": "user", "content": prompt}
        ]
        try:
            message = self.chat.chat(messages)
        except LlmError:
            return ""
        text = str(message.get("content") or "")
        self.cache[prompt] = text
        return text


class LlmEdgeJudge:
    """``judge(a, b)`` is True when the model answers yes: A's output can supply B's input."""

    def __init__(self, replies: PromptReplies, inventory: Inventory) -> None:
        self.replies = replies
        self.inventory = inventory

    def __call__(self, a: str, b: str) -> bool:
        ta, tb = self.inventory.require(a), self.inventory.require(b)
        prompt = (
            f"Tool A: {a}: {ta.description}\nTool B: {b}: {tb.description}\n"
            f"B's input schema: {json.dumps(tb.input_schema, ensure_ascii=False)[:1500]}\n"
            "Can an output of A supply an argument of B in a realistic request? Answer yes or no."
        )
        return self.replies.ask(prompt).strip().lower().startswith("yes")


class LlmQueryWriter:
    """Writes (zh, en) queries for a chain; falls back to the templates when the reply is empty."""

    def __init__(self, replies: PromptReplies, inventory: Inventory, examples: list[str]) -> None:
        self.replies = replies
        self.inventory = inventory
        self.examples = examples[:8]

    def write(self, chain: Chain, ctx: SampleContext, parts: list[tuple[str, bool]]) -> tuple[str, str]:
        """A Chinese and an English query that need exactly the chain's tools."""
        tools = "\n".join(f"- {t}: {self.inventory.require(t).description}" for t in chain.tools)
        facts: dict[str, Any] = {
            "funds": ctx.funds[:2],
            "strategy": ctx.strategy,
            "keyword": ctx.news_keyword,
        }
        shots = "\n".join(f"- {q}" for q in self.examples)
        prompt = (
            f"Real user queries of a fund-advisory assistant:\n{shots}\n\nWrite one new user query in Chinese that "
            f"needs these tools in this order:\n{tools}\nUse these entities: {json.dumps(facts, ensure_ascii=False)}. "
            "Reply with the query only."
        )
        zh = self.replies.ask(prompt).strip()
        if not zh:
            return compose(parts, ctx, "zh", []), compose(parts, ctx, "en", [])
        en = self.replies.ask(f"Translate into English, reply with the translation only:\n{zh}").strip()
        return zh, en or compose(parts, ctx, "en", [])
