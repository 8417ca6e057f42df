"""Shared pytest fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _find_shared() -> Path | None:
    env = os.environ.get("FINMCP_SHARED")
    candidates = [Path(env)] if env else []
    candidates += [REPO.parent / "shared", REPO.parent.parent / "shared"]
    for path in candidates:
        if (path / "finmcp").is_dir() and (path / "fintoolbench").is_dir():
            return path
    return None


SHARED = _find_shared()


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The ../shared reference folder; skips the test when it is absent."""
    if SHARED is None:
        pytest.skip("../shared (FinMCP/FinToolBench reference files) is absent; set FINMCP_SHARED to run")
    return SHARED
