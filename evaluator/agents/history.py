"""Gold history in OpenAI chat format, as FinMCP-Bench's inference feeds it.

For turn k the model sees the gold prefix: every earlier turn's user message, one assistant message
with ``tool_calls`` per gold group, one ``tool`` message per call (the gold output), and the gold
reply; then turn k's user message. Gold outputs come from a recordings store (the one the server
replays); a call without a recording gets an empty output.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from evaluator.inputs.model import Call, Reference

OutputLookup = Callable[[str, dict[str, Any]], str | None]
"""(tool, arguments) -> the gold output text, or None when unknown."""


def call_id(sample_id: str, turn: int, group: int, index: int) -> str:
    """A stable ``call_<22 hex>`` id (the shape of the official files)."""
    digest = hashlib.sha256(f"{sample_id}/{turn}/{group}/{index}".encode()).hexdigest()
    return f"call_{digest[:22]}"


def assistant_tool_message(calls: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
    """An assistant message with ``tool_calls`` from ``(id, tool, arguments)`` triples."""
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": cid,
                "type": "function",
                "function": {"name": tool, "arguments": json.dumps(args, ensure_ascii=False)},
            }
            for cid, tool, args in calls
        ],
    }


def gold_messages(ref: Reference, turn: int, outputs: OutputLookup | None = None) -> list[dict[str, Any]]:
    """The gold prefix for ``turn`` (0-based): turns ``0..turn-1`` in full, then turn ``turn``'s user message."""
    if not 0 <= turn < len(ref.turns):
        raise IndexError(f"sample {ref.id}: turn {turn} out of range (it has {len(ref.turns)} turns)")
    messages: list[dict[str, Any]] = []
    for t, gold in enumerate(ref.turns[:turn]):
        messages.append({"role": "user", "content": gold.user})
        for g, group in enumerate(gold.calls):
            ids = [call_id(ref.id, t, g, i) for i in range(len(group))]
            messages.append(
                assistant_tool_message(
                    [(cid, c.tool, c.arguments) for cid, c in zip(ids, group, strict=True)]
                )
            )
            for cid, call in zip(ids, group, strict=True):
                messages.append({"role": "tool", "tool_call_id": cid, "content": _output(outputs, call)})
        messages.append({"role": "assistant", "content": gold.assistant})
    messages.append({"role": "user", "content": ref.turns[turn].user})
    return messages


def _output(outputs: OutputLookup | None, call: Call) -> str:
    if outputs is None:
        return ""
    text = outputs(call.tool, call.arguments)
    return text if text is not None else ""


class RecordedOutputs:
    """Gold outputs from a recordings SQLite file (``recordings.store.RecordingStore``)."""

    def __init__(self, path: str, inventory: Any, names: list[str] | None = None) -> None:
        from recordings.store import RecordingStore

        self.store = RecordingStore.open(path)
        self.inventory = inventory
        base = (getattr(inventory, "extra", None) or {}).get("base")
        self.names = names or [n for n in (getattr(inventory, "name", None), base) if n]

    def __call__(self, tool: str, arguments: dict[str, Any]) -> str | None:
        """The recorded text of this call (first inventory name that has it), or None."""
        spec = self.inventory.get(tool) if self.inventory is not None else None
        schema = getattr(spec, "input_schema", None)
        for name in self.names:
            try:
                result = self.store.get_response(name, tool, arguments, schema)
            except Exception:  # arguments that cannot be canonicalised have no recording
                return None
            if result is not None:
                texts = [c.get("text", "") for c in result.get("content") or [] if isinstance(c, dict)]
                return "\n".join(t for t in texts if isinstance(t, str))
        return None

    def close(self) -> None:
        """Close the store."""
        self.store.close()
