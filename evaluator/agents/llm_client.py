"""A plain client for OpenAI-compatible ``/chat/completions`` endpoints (vLLM, Ollama, hosted APIs).

No SDK: one ``httpx2`` POST per completion, a per-request timeout (default 60 s) and retries
(default 2) on timeouts, connection errors, HTTP 429 and 5xx. The API key is read only from an
environment variable (``--api-key-env``, default ``OPENAI_API_KEY``) and sent as a bearer token;
without it no ``Authorization`` header is sent (local servers need none).
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import httpx2

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


class LlmError(Exception):
    """The endpoint gave no usable completion (after retries)."""


class ChatClient:
    """``await complete(messages, tools)`` returns the first choice's ``message`` dict."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout: float = 60.0,
        retries: int = 2,
        backoff: float = 0.5,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise LlmError(
                f"--base-url {base_url!r}: expected an http(s):// URL such as http://127.0.0.1:8000/v1"
            )
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.timeout = timeout
        self.retries = max(0, retries)
        self.backoff = backoff
        self.temperature = temperature
        self.max_tokens = max_tokens
        key = os.environ.get(api_key_env) if api_key_env else None
        headers = {"content-type": "application/json"}
        if key:
            headers["authorization"] = f"Bearer {key}"
        self.http = httpx2.AsyncClient(timeout=timeout, headers=headers, trust_env=False)
        self.requests = 0

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self.http.aclose()

    def body(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        """The request body."""
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        return body

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        """One completion, retried on transient failures; raises :class:`LlmError` with the last cause."""
        payload = json.dumps(self.body(messages, tools), ensure_ascii=False).encode("utf-8")
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                await asyncio.sleep(self.backoff * attempt)
            self.requests += 1
            try:
                response = await self.http.post(self.url, content=payload)
            except httpx2.TimeoutException:
                last = f"timed out after {self.timeout:g} s"
                continue
            except httpx2.HTTPError as exc:
                last = f"{type(exc).__name__}: {exc}"
                continue
            if response.status_code in RETRY_STATUS:
                last = f"HTTP {response.status_code}: {response.text[:200]}"
                continue
            if response.status_code >= 400:
                raise LlmError(f"{self.url}: HTTP {response.status_code}: {response.text[:300]}")
            return _message(response, self.url)
        raise LlmError(f"{self.url}: no completion after {self.retries + 1} attempt(s): {last}")


def _message(response: Any, url: str) -> dict[str, Any]:
    try:
        data = response.json()
        message = data["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise LlmError(f"{url}: not a chat completion: {response.text[:300]!r}") from None
    if not isinstance(message, dict):
        raise LlmError(f"{url}: choices[0].message is not an object")
    return message
