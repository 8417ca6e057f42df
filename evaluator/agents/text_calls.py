"""Text that looks like a tool call but is not a structured one.

Small models often write a call into their reply instead of requesting it through ``tool_calls``:
``<tool_call>{"name": ...}</tool_call>`` (Hermes/Qwen/SmolLM2 chat templates), a bare
``{"name": ..., "arguments": ...}`` object, ``functions.NAME`` (the chatml function-calling syntax),
``[TOOL_CALLS]``, ``<function=NAME>`` or ``NAME(...)`` for a tool that was offered. No call is made
for such text; :func:`text_tool_call` names what it found so the run state and the report can say so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

SNIPPET = 160
"""Characters of the reply kept around a match."""

_MARKERS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("<tool_call>", re.compile(r"</?tool_call>")),
    ("[TOOL_CALLS]", re.compile(r"\[TOOL_CALLS\]")),
    ("<function=…>", re.compile(r"<function=[\w.-]+>")),
    ("<|python_tag|>", re.compile(r"<\|python_tag\|>")),
    (
        '{"name": …, "arguments": …}',
        re.compile(
            r'\{\s*"(?:name|function)"\s*:\s*"[^"]{1,120}"\s*,\s*"(?:arguments|parameters|args)"\s*:'
            r'|\{\s*"(?:arguments|parameters)"\s*:\s*\{[^{}]{0,400}\}\s*,\s*"name"\s*:\s*"'
        ),
    ),
    ("functions.NAME", re.compile(r"\bfunctions\.[A-Za-z_][\w-]*")),
)


def text_tool_call(text: str, tool_names: Iterable[str] = ()) -> dict[str, Any] | None:
    """What in ``text`` looks like a tool call (``pattern`` and a ``snippet`` around it), or None.

    ``tool_names``: the offered tools; ``NAME(`` or ``NAME {`` of one of them counts as call syntax."""
    if not text:
        return None
    found = [(label, m) for label, pattern in _MARKERS if (m := pattern.search(text))]
    names = sorted({n for n in tool_names if n}, key=len, reverse=True)
    if names:
        syntax = re.compile(r"(?<![\w.])(?:" + "|".join(map(re.escape, names)) + r")\s*[({]")
        m = syntax.search(text)
        if m:
            found.append(("NAME(…)", m))
    if not found:
        return None
    label, match = min(found, key=lambda item: item[1].start())
    start = max(0, match.start() - 20)
    return {"pattern": label, "snippet": text[start : start + SNIPPET]}
