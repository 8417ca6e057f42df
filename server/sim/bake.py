"""Bake: record simulated outputs for a list of calls, so a benchmark ships with its recordings.

Calls are read from JSONL (``{"tool", "arguments"}`` per line), from finmcp reference samples
(``turns[].calls`` groups) or from official FinMCP-Bench sample files (assistant ``tool_calls``);
the reader walks any of these shapes. Tools outside the inventory are reported, not baked.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from finmcp.recordings.store import RecordingStore
from finmcp.server.sim.simulator import Simulator
from finmcp.tool_specs.inventory import Inventory
from finmcp.tool_specs.jsonlines import JsonLineError, json_lines


class CallsFileError(ValueError):
    """The calls file cannot be read; the message names the file and the place."""


@dataclass
class BakeReport:
    """What a bake did: outcome counts, tools outside the inventory, failures."""

    outcomes: Counter = field(default_factory=Counter)
    unknown_tools: Counter = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line for the command line."""
        parts = [f"{k} {v}" for k, v in sorted(self.outcomes.items())]
        if self.unknown_tools:
            parts.append(
                f"not in inventory {sum(self.unknown_tools.values())} ({', '.join(sorted(self.unknown_tools))})"
            )
        if self.errors:
            parts.append(f"errors {len(self.errors)}")
        return "; ".join(parts) or "nothing to bake"


def _arguments(raw: Any, where: str) -> dict[str, Any]:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as exc:
            raise CallsFileError(f"{where}: arguments are not valid JSON: {exc}") from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise CallsFileError(f"{where}: arguments must be a JSON object, got {type(raw).__name__}")
    return raw


def _walk(node: Any, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, list):
        for i, item in enumerate(node):
            yield from _walk(item, f"{where}[{i}]")
        return
    if not isinstance(node, dict):
        return
    if isinstance(node.get("tool"), str) and "arguments" in node:  # finmcp call / JSONL line
        yield node["tool"], _arguments(node["arguments"], where)
        return
    for i, call in enumerate(node.get("tool_calls") or []):  # OpenAI-style assistant message
        function = call.get("function", call) if isinstance(call, dict) else {}
        if isinstance(function.get("name"), str):
            yield function["name"], _arguments(function.get("arguments"), f"{where}.tool_calls[{i}]")
    for key, value in node.items():
        if key != "tool_calls" and isinstance(value, (list, dict)):
            yield from _walk(value, f"{where}.{key}")


def read_calls(path: str | Path) -> list[tuple[str, dict[str, Any]]]:
    """Every (tool, arguments) pair in a calls file, in file order."""
    path = Path(path)
    if not path.is_file():
        raise CallsFileError(f"calls file not found: {path}")
    text = path.read_text("utf-8")
    if path.suffix == ".jsonl":
        calls: list[tuple[str, dict[str, Any]]] = []
        try:
            for number, node in json_lines(text.splitlines()):
                calls.extend(_walk(node, f"{path}:{number}"))
        except JsonLineError as exc:
            raise CallsFileError(f"{path}:{exc.number}: not valid JSON: {exc.error}") from None
        return calls
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CallsFileError(f"{path}: not valid JSON: {exc}") from None
    return list(_walk(document, path.name))


def bake(
    inventory: Inventory,
    calls: list[tuple[str, dict[str, Any]]],
    store: RecordingStore,
    seed: int = 0,
    replace: bool = False,
    simulator: Simulator | None = None,
) -> BakeReport:
    """Simulate every call and store it as a ``simulated`` recording (existing ones kept unless ``replace``)."""
    simulator = simulator or Simulator(inventory, seed=seed)
    report = BakeReport()
    with store.transaction():  # one commit for the whole bake
        _bake_into(inventory, calls, store, simulator, replace, report)
    return report


def _bake_into(
    inventory: Inventory,
    calls: list[tuple[str, dict[str, Any]]],
    store: RecordingStore,
    simulator: Simulator,
    replace: bool,
    report: BakeReport,
) -> None:
    for tool, arguments in calls:
        spec = inventory.get(tool)
        if spec is None:
            report.unknown_tools[tool] += 1
            continue
        try:
            result = simulator.simulate(tool, arguments)
            outcome = store.put_response(
                inventory.name,
                tool,
                arguments,
                result,
                "simulated",
                input_schema=spec.input_schema,
                replace=replace,
            )
        except (ValueError, TypeError) as exc:
            report.errors.append(f"{tool} {json.dumps(arguments, ensure_ascii=False)[:200]}: {exc}")
            continue
        report.outcomes[outcome] += 1
