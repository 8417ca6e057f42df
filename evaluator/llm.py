"""The one client for OpenAI-compatible ``/chat/completions`` endpoints (vLLM, Ollama, hosted APIs).

The ``openai`` agent, the FinToolBench LLM judge and dataset synthesis all use :class:`ChatClient`:

- one ``httpx2`` POST per completion with a per-request ``timeout``; no SDK;
- transient failures are retried (``retries`` times at most): connection errors, timeouts, HTTP 429,
  408, 409 and 5xx. The wait before retry *n* (1-based) is ``backoff * 2**(n-1)`` capped at
  ``max_backoff``, stretched by up to ``jitter`` (a fraction) drawn deterministically from the request
  body and *n*, so the same request waits the same on every run. A ``Retry-After`` header on 429/503
  (seconds or an HTTP-date) is honoured instead; one longer than ``max_retry_after`` ends the retries;
- any other HTTP error, or a body that is not a chat completion, raises :class:`LlmError` at once.
  A failure is always an :class:`LlmError`, never an empty answer, so callers cannot cache it as one;
- :meth:`ChatClient.chat` is blocking, :meth:`ChatClient.complete` awaits it from asyncio, and
  :meth:`ChatClient.chat_many` runs several conversations at once on threads.

The API key is read only from an environment variable (``api_key_env``, default ``OPENAI_API_KEY``)
and sent as a bearer token; without it no ``Authorization`` header is sent (local servers need none).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import threading
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

import httpx2

from finmcp.evaluator.errors import EvalInputError

RETRY_STATUS = frozenset({408, 409, 429})
"""Client-side statuses worth retrying; every 5xx is retried too."""
RETRY_AFTER_STATUS = frozenset({429, 503})
"""Statuses whose ``Retry-After`` header sets the wait."""

Messages = list[dict[str, Any]]


class LlmError(Exception):
    """The endpoint gave no usable completion (after retries)."""


@dataclass(frozen=True)
class RetryPolicy:
    """How a failed request is retried: at most ``retries`` times, waiting ``backoff * 2**(n-1)`` seconds
    before retry *n* (capped at ``max_backoff``, stretched by up to ``jitter``), or what the server's
    ``Retry-After`` says, unless that is longer than ``max_retry_after`` (then it gives up)."""

    retries: int = 2
    backoff: float = 0.5
    max_backoff: float = 8.0
    jitter: float = 0.1
    max_retry_after: float = 120.0

    def wait(self, attempt: int, payload: bytes, retry_after: float | None = None) -> float:
        """Seconds to wait before retry ``attempt`` (1-based) of the request ``payload``: the server's
        ``retry_after`` when it gave one, else the backoff with a jitter drawn from payload and attempt."""
        if retry_after is not None:
            if retry_after > self.max_retry_after:
                raise LlmError(
                    f"the server asks to retry after {retry_after:g} s (more than {self.max_retry_after:g} s)"
                )
            return retry_after
        base = min(self.max_backoff, self.backoff * 2 ** (attempt - 1))
        draw = random.Random(zlib.crc32(payload) * 64 + attempt).random()
        return base * (1.0 + self.jitter * draw)


class ChatClient:
    """A chat-completions endpoint: ``chat(messages, tools)`` returns the first choice's ``message``."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout: float = 60.0,
        retry: RetryPolicy = RetryPolicy(),
        temperature: float | None = None,
        max_tokens: int | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        url_label: str = "--llm-url",
    ) -> None:
        self.url = endpoint_url(base_url, url_label)
        self.model, self.timeout, self.retry = model, timeout, retry
        self.temperature, self.max_tokens = temperature, max_tokens
        self.sleep, self.clock = sleep, clock
        self.http = httpx2.Client(timeout=timeout, headers=_headers(api_key_env), trust_env=False)
        self.requests = 0
        """HTTP requests sent so far (attempts, retries included)."""
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    # ------------------------------------------------------------------ requests
    def body(self, messages: Messages, tools: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
        """The request body: model, messages, tools (with ``tool_choice: auto``), temperature, max_tokens."""
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:
            body["tools"] = list(tools)
            body["tool_choice"] = "auto"
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        return body

    def chat(
        self,
        messages: Messages,
        tools: Sequence[dict[str, Any]] = (),
        headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """One completion, retried on transient failures; raises :class:`LlmError` with the last cause.
        ``headers`` are added to the request (e.g. the ``X-Finmcp-*`` tags the proxy's model door reads)."""
        payload = json.dumps(self.body(messages, tools), ensure_ascii=False).encode("utf-8")
        last = ""
        hint: float | None = None
        for attempt in range(self.retry.retries + 1):
            if attempt:
                try:
                    self.sleep(self.retry.wait(attempt, payload, hint))
                except LlmError as exc:
                    raise LlmError(f"{self.url}: {exc}") from None
            hint = None
            with self._lock:
                self.requests += 1
            try:
                response = self.http.post(self.url, content=payload, headers=headers)
            except httpx2.TimeoutException:
                last = f"timed out after {self.timeout:g} s"
                continue
            except httpx2.HTTPError as exc:
                last = f"{type(exc).__name__}: {exc}"
                continue
            status = response.status_code
            if status in RETRY_STATUS or status >= 500:
                last = f"HTTP {status}: {response.text[:200]}"
                if status in RETRY_AFTER_STATUS:
                    hint = parse_retry_after(response.headers.get("retry-after"), self.clock())
                continue
            if status >= 400:
                raise LlmError(f"{self.url}: HTTP {status}: {response.text[:300]}")
            return _message(response, self.url)
        raise LlmError(f"{self.url}: no completion after {self.retry.retries + 1} attempt(s): {last}")

    async def complete(
        self,
        messages: Messages,
        tools: Sequence[dict[str, Any]] = (),
        headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """:meth:`chat` awaited from asyncio (it runs on the client's worker threads)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor(), self.chat, messages, tools, headers)

    def chat_many(
        self,
        conversations: Sequence[Messages],
        concurrency: int = 4,
        tools: Sequence[dict[str, Any]] = (),
        on_done: Callable[[], None] | None = None,
    ) -> list[dict[str, Any] | LlmError]:
        """Every conversation's message, ``concurrency`` requests in flight at once, in input order; a
        conversation that failed gets its :class:`LlmError` instead of a message. ``on_done`` is called
        (under a lock) as each conversation finishes, e.g. to advance a progress bar."""
        done_lock = threading.Lock()

        def one(messages: Messages) -> dict[str, Any] | LlmError:
            try:
                return self.chat(messages, tools)
            except LlmError as exc:
                return exc
            finally:
                if on_done is not None:
                    with done_lock:
                        on_done()

        if concurrency <= 1 or len(conversations) <= 1:
            return [one(m) for m in conversations]
        with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="llm") as pool:
            return list(pool.map(one, conversations))

    # ------------------------------------------------------------------ lifecycle
    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=32, thread_name_prefix="llm")
            return self._pool

    def close(self) -> None:
        """Close the connection pool and the worker threads."""
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None
        self.http.close()

    async def aclose(self) -> None:
        """:meth:`close` from asyncio."""
        self.close()


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible endpoint as the command line names it (``--llm-url``, ``--llm-model``,
    ``--llm-key-env``, ``--llm-timeout``, ``--llm-retries``), the same for agent, judge and synthesis."""

    url: str
    model: str
    key_env: str | None = "OPENAI_API_KEY"
    timeout: float = 60.0
    retries: int = 2

    @classmethod
    def from_args(cls, args: Any, needed_by: str) -> Endpoint:
        """The endpoint of parsed arguments; an input error naming the missing flags otherwise."""
        flags = (("--llm-url URL", args.llm_url), ("--llm-model NAME", args.llm_model))
        missing = [flag for flag, value in flags if not value]
        if missing:
            raise EvalInputError(f"{needed_by} needs {' and '.join(missing)}")
        return cls(args.llm_url, args.llm_model, args.llm_key_env, args.llm_timeout, max(0, args.llm_retries))

    def client(self, *, backoff: float | None = None, **kwargs: Any) -> ChatClient:
        """A :class:`ChatClient` for this endpoint; ``kwargs`` are its sampling options."""
        retry = RetryPolicy(retries=self.retries) if backoff is None else RetryPolicy(self.retries, backoff)
        return ChatClient(
            self.url, self.model, self.key_env, self.timeout, retry, url_label="--llm-url", **kwargs
        )


def endpoint_url(base_url: str, label: str = "--llm-url") -> str:
    """The ``/chat/completions`` URL of an OpenAI-compatible base URL (kept when already given)."""
    if not base_url.startswith(("http://", "https://")):
        raise LlmError(f"{label} {base_url!r}: expected an http(s):// URL such as http://127.0.0.1:8000/v1")
    url = base_url.rstrip("/")
    return url if url.endswith("/chat/completions") else url + "/chat/completions"


def _headers(api_key_env: str | None) -> dict[str, str]:
    """JSON content type, and a bearer token when the environment variable ``api_key_env`` holds one."""
    key = os.environ.get(api_key_env) if api_key_env else None
    headers = {"content-type": "application/json"}
    if key:
        headers["authorization"] = f"Bearer {key}"
    return headers


def parse_retry_after(value: str | None, now: float) -> float | None:
    """A ``Retry-After`` header as seconds from ``now`` (a Unix time): delta-seconds or an HTTP-date;
    None when absent or unreadable. A date in the past gives 0."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - now)


def _message(response: Any, url: str) -> dict[str, Any]:
    try:
        data = response.json()
        message = data["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise LlmError(f"{url}: not a chat completion: {response.text[:300]!r}") from None
    if not isinstance(message, dict):
        raise LlmError(f"{url}: choices[0].message is not an object")
    return message
