"""Fixtures of the evaluator tests."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.evaluator.eval_support import write_trace_db
from tests.evaluator.fake_llm import FakeOpenAI, Script


@pytest.fixture
def demo_samples(shared_dir: Path) -> list[dict[str, Any]]:
    """The six official demo samples (a fresh deep copy per test)."""
    return json.loads((shared_dir / "finmcp" / "demo_infer.json").read_text(encoding="utf-8"))


@pytest.fixture
def trace_db(tmp_path: Path):
    """Factory: trace_db(rows) -> path of a new trace DB."""
    counter = {"n": 0}

    def make(rows: list[dict[str, Any]]) -> Path:
        counter["n"] += 1
        return write_trace_db(tmp_path / f"runs{counter['n']}.sqlite", rows)

    return make


@pytest.fixture
def fake_openai() -> Iterator[Callable[[Script], FakeOpenAI]]:
    """Factory: fake_openai(script) -> a fake OpenAI-compatible server on loopback, closed afterwards."""
    servers: list[FakeOpenAI] = []

    def start(script: Script) -> FakeOpenAI:
        server = FakeOpenAI(script)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()
