"""Fixtures of the server tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.server.recorded_time import time_recordings


@pytest.fixture(scope="module")
def recorded_time(tmp_path_factory) -> Path:
    """A recordings file holding one ``GetCurrentTime`` answer (see ``tests/server/recorded_time.py``)."""
    return time_recordings(tmp_path_factory.mktemp("rec") / "recordings.sqlite")
