"""Optional LLM helpers over any OpenAI-compatible ``/chat/completions`` endpoint (never required).

- :class:`LlmEdgeJudge`: asks whether tool A's output can feed tool B (graph validation).
- :class:`LlmQueryWriter`: writes a user query for a chain, with real single-tool queries as
  in-context examples.
The API key is read from ``OPENAI_API_KEY``; replies are cached in memory per prompt.
"""

from __future__ import annotations

import json
import os
import urllib.request
from typing import Any

from evaluator.synth.chains import Chain
from evaluator.synth.context import SampleContext
from evaluator.synth.texts import compose
from tool_specs.inventory import Inventory


class LlmClient:
    """Minimal chat-completions client (temperature 0 for reproducibility)."""

    def __init__(self, url: str, model: str, timeout: float = 60.0) -> None:
        self.url = url.rstrip("/")
        self.model = model
        self.timeout = timeout
        self.cache: dict[str, str] = {}

    def chat(self, prompt: str, system: str = "") -> str:
        """The reply text for one prompt ('' on failure)."""
        if prompt in self.cache:
            return self.cache[prompt]
        messages = ([{"role": "system", "content": system}] if system else []) + [
            {"role": "user", "content": prompt}
        ]
        body = json.dumps({"model": self.model, "messages": messages, "temperature": 0}).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if os.environ.get("OPENAI_API_KEY"):
            headers["Authorization"] = f"Bearer {os.environ['OPENAI_API_KEY']}"
        request = urllib.request.Request(f"{self.url}/chat/completions", body, headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 (user-given URL)
                data = json.loads(response.read())
            text = str(data["choices"][0]["message"]["content"] or "")
        except (OSError, ValueError, KeyError, IndexError):
            text = ""
        self.cache[prompt] = text
        return text


class LlmEdgeJudge:
    """``judge(a, b)`` is True when the model answers yes: A's output can supply B's input."""

    def __init__(self, client: LlmClient, inventory: Inventory) -> None:
        self.client = client
        self.inventory = inventory

    def __call__(self, a: str, b: str) -> bool:
        ta, tb = self.inventory.get(a), self.inventory.get(b)
        prompt = (
            f"Tool A: {a}: {ta.description}\nTool B: {b}: {tb.description}\n"
            f"B's input schema: {json.dumps(tb.input_schema, ensure_ascii=False)[:1500]}\n"
            "Can an output of A supply an argument of B in a realistic request? Answer yes or no."
        )
        return self.client.chat(prompt).strip().lower().startswith("yes")


class LlmQueryWriter:
    """Writes (zh, en) queries for a chain; falls back to the templates when the reply is empty."""

    def __init__(self, client: LlmClient, inventory: Inventory, examples: list[str]) -> None:
        self.client = client
        self.inventory = inventory
        self.examples = examples[:8]

    def write(self, chain: Chain, ctx: SampleContext, parts: list[tuple[str, bool]]) -> tuple[str, str]:
        """A Chinese and an English query that need exactly the chain's tools."""
        tools = "\n".join(f"- {t}: {self.inventory.get(t).description}" for t in chain.tools)
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
        zh = self.client.chat(prompt).strip()
        if not zh:
            return compose(parts, ctx, "zh", []), compose(parts, ctx, "en", [])
        en = self.client.chat(f"Translate into English, reply with the translation only:\n{zh}").strip()
        return zh, en or compose(parts, ctx, "en", [])
