"""A retry policy for tool failures, read from what a client sees (never from finmcp's fault marker).

:func:`failure` classifies an outcome: ``None`` (a usable answer), ``"transient"`` (worth retrying: a
JSON-RPC error, an ``isError`` result, or a JSON answer cut short) or ``"permanent"`` (the answer says
so: ``(permanent`` / ``do not retry``, or the arguments were refused). :func:`retry_after` reads a
``Retry-After: N`` (seconds) from the answer. :func:`give_up_text` is what the agent tells the user
when a call still fails: which tools failed and that it will not guess the figures.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from finmcp.evaluator.agents.base import ToolOutcome

PERMANENT = re.compile(
    r"\(permanent|do not retry|invalid arguments|unknown tool|not a tool of", re.IGNORECASE
)
RETRY_AFTER = re.compile(r"retry-after:\s*([0-9]+(?:\.[0-9]+)?)", re.IGNORECASE)
MAX_WAIT_S = 30.0
"""The longest Retry-After the policy honours (a longer one is waited this long)."""


def _text(outcome: ToolOutcome) -> str:
    if outcome.error is not None:
        return outcome.error
    blocks = (outcome.result or {}).get("content") or []
    return "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")


def failure(outcome: ToolOutcome) -> str | None:
    """``None`` for a usable answer, else ``"transient"`` or ``"permanent"`` (see the module docstring)."""
    text = _text(outcome)
    if outcome.error is not None or (outcome.result or {}).get("isError"):
        return "permanent" if PERMANENT.search(text) else "transient"
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            json.loads(stripped)
        except json.JSONDecodeError:
            return "transient"  # a JSON answer cut short
    return None


def retry_after(outcome: ToolOutcome) -> float:
    """Seconds the answer asks to wait before a retry (``Retry-After: N``; 0 when it says nothing)."""
    match = RETRY_AFTER.search(_text(outcome))
    return min(MAX_WAIT_S, float(match.group(1))) if match else 0.0


def give_up_text(failed: Sequence[ToolOutcome]) -> str:
    """The reply when calls still fail: names the tools and says no figures are given instead of guessed."""
    tools = ", ".join(sorted({o.call.tool for o in failed}))
    return (
        f"I could not complete this request: the data service failed for {tools} and did not recover. "
        "I will not guess the figures; please try again later. "
        "（数据服务调用失败，无法获取数据，请稍后再试。）"
    )
