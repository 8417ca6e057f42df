"""Gold history in OpenAI chat format, as FinMCP-Bench's inference feeds it.

For turn k the model sees the gold prefix: every earlier turn's user message, one assistant message
with ``tool_calls`` per gold group, one ``tool`` message per call (the gold output), and the gold
reply; then turn k's user message. Gold outputs come from a recordings store (the one the server
replays); a call without a recording gets an empty output.
"""

from __future__ import annotations

import json
from typing import Any

from finmcp.evaluator.inputs.finmcp_json import OutputLookup, gold_chat_turns
from finmcp.evaluator.inputs.model import Reference
from finmcp.recordings.transcripts import ChatTurn, chat_messages

__all__ = ["OutputLookup", "RecordedOutputs", "gold_messages"]


def gold_messages(ref: Reference, turn: int, outputs: OutputLookup | None = None) -> list[dict[str, Any]]:
    """The gold prefix for ``turn`` (0-based): turns ``0..turn-1`` in full, then turn ``turn``'s user message."""
    if not 0 <= turn < len(ref.turns):
        raise IndexError(f"sample {ref.id}: turn {turn} out of range (it has {len(ref.turns)} turns)")
    return chat_messages([*gold_chat_turns(ref, outputs, upto=turn), ChatTurn(ref.turns[turn].user)])


class RecordedOutputs:
    """Gold outputs from a recordings SQLite file (``recordings.store.RecordingStore``).

    Answers are memoised per (tool, arguments), up to ``MEMO_SIZE`` of them: a demo's three agents
    ask for the same sample's gold history, and each lookup canonicalises the arguments, queries
    SQLite and parses the recorded result. The store is treated as fixed while this object is open.
    """

    MEMO_SIZE = 16384

    def __init__(self, path: str, inventory: Any, names: list[str] | None = None) -> None:
        from finmcp.recordings.store import RecordingStore

        self.store = RecordingStore.open(path)
        self.inventory = inventory
        base = (getattr(inventory, "extra", None) or {}).get("base")
        self.names = names or [n for n in (getattr(inventory, "name", None), base) if n]
        self._memo: dict[tuple[str, str], str | None] = {}

    def __call__(self, tool: str, arguments: dict[str, Any]) -> str | None:
        """The recorded text of this call (first inventory name that has it), or None."""
        try:
            key = (tool, json.dumps(arguments, sort_keys=True, ensure_ascii=False, allow_nan=False))
        except (TypeError, ValueError):  # not plain JSON: look it up without the memo
            return self._lookup(tool, arguments)
        if key in self._memo:
            return self._memo[key]
        text = self._lookup(tool, arguments)
        if len(self._memo) >= self.MEMO_SIZE:
            self._memo.clear()
        self._memo[key] = text
        return text

    def _lookup(self, tool: str, arguments: dict[str, Any]) -> str | None:
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
