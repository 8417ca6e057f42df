"""Fixtures of the evaluator tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from eval_support import write_trace_db


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
