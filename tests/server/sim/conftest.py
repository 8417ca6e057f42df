"""Fixtures shared by the simulator tests: the seed-0 qieman79 simulator and checked calls.

``call`` is the one place that says what a successful simulated answer is: not an error, one text
content item printed as the real server prints (pretty JSON, 2-space indent, non-ASCII kept), and
``structuredContent`` equal to that value (wrapped as ``{"result": ...}`` for array tools) and valid
against the tool's output schema. ``error_text`` is its counterpart for refused calls.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from finmcp.server.sim import Simulator
from finmcp.tool_specs.inventory import load_inventory

Call = Callable[..., Any]


def check_success(simulator: Simulator, tool: str, args: dict[str, Any]) -> Any:
    """Simulate one call, check everything a successful answer must satisfy, return its JSON value."""
    spec = simulator.inventory.get(tool)
    result = simulator.simulate(tool, args)
    assert set(result) == {"content", "structuredContent", "isError"}, result
    assert result["isError"] is False, result["content"][0]["text"]
    assert len(result["content"]) == 1 and result["content"][0]["type"] == "text", result["content"]
    text = result["content"][0]["text"]
    value = json.loads(text)
    assert text == json.dumps(value, ensure_ascii=False, indent=2), f"{tool}: text is not 2-space JSON"
    expected = {"result": value} if spec.meta.get("output_wrapped") else value
    structured = result["structuredContent"]
    if spec.output_schema is None or not isinstance(expected, dict):
        assert structured is None, f"{tool}: structuredContent without an object output schema"
        return value
    assert structured == expected, f"{tool}: structuredContent differs from the text"
    errors = list(Draft202012Validator(spec.output_schema).iter_errors(structured))
    assert not errors, f"{tool} {args}: {errors[0].message} at {list(errors[0].absolute_path)}"
    return value


def check_refusal(simulator: Simulator, tool: str, args: dict[str, Any]) -> str:
    """Simulate one call the tool must refuse; return the error text."""
    result = simulator.simulate(tool, args)
    assert result["isError"] is True, f"{tool} {args} should be refused"
    assert result["structuredContent"] is None
    assert len(result["content"]) == 1 and result["content"][0]["type"] == "text"
    return result["content"][0]["text"]


@pytest.fixture(scope="module")
def sim() -> Simulator:
    """A seed-0 qieman79 simulator, one per test module (as each module had before)."""
    return Simulator(load_inventory("qieman79"), seed=0)


@pytest.fixture(scope="module")
def call(sim: Simulator) -> Call:
    """``call(tool, args, simulator=None)``: a checked successful call (see :func:`check_success`)."""

    def checked(tool: str, args: dict[str, Any], simulator: Simulator | None = None) -> Any:
        return check_success(simulator or sim, tool, args)

    return checked


@pytest.fixture(scope="module")
def error_text(sim: Simulator) -> Call:
    """``error_text(tool, args, simulator=None)``: the text of a refused call (see :func:`check_refusal`)."""

    def refused(tool: str, args: dict[str, Any], simulator: Simulator | None = None) -> str:
        return check_refusal(simulator or sim, tool, args)

    return refused


SAMPLE_FILES = ("demo_infer.json", "train_data_demo.json")


def recorded_outputs(shared: Path, tool: str) -> list[Any]:
    """JSON outputs of ``tool`` in the official FinMCP sample files (``messages`` and ``messages_list``),
    in file order; prose paraphrases are skipped."""
    outputs: list[Any] = []
    for name in SAMPLE_FILES:
        for sample in json.loads((shared / "finmcp" / name).read_text(encoding="utf-8")):
            for messages in (sample.get("messages") or [], sample.get("messages_list") or []):
                calls: dict[Any, str] = {}
                for m in messages:
                    for c in m.get("tool_calls") or []:
                        calls[c.get("id")] = c["function"]["name"]
                    if (
                        m.get("role") == "tool"
                        and (calls.get(m.get("tool_call_id")) or m.get("name")) == tool
                    ):
                        with contextlib.suppress(json.JSONDecodeError, TypeError):  # prose, not an output
                            outputs.append(json.loads(m["content"]))
    return outputs


@pytest.fixture(scope="session")
def recorded(shared_dir: Path) -> Callable[[str], list[Any]]:
    """``recorded(tool)``: the tool's real JSON outputs in the FinMCP samples (at least one)."""

    def outputs(tool: str) -> list[Any]:
        found = recorded_outputs(shared_dir, tool)
        assert found, f"no recorded JSON output of {tool}"
        return found

    return outputs
