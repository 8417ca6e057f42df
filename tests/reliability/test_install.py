"""The console scripts users run are installed and start: what the end-to-end tests launch."""

from __future__ import annotations

import os

import pytest

from tests.support.scripts import BIN, SCRIPTS, run_script


@pytest.mark.parametrize("name", SCRIPTS)
def test_console_script_is_installed_and_answers_help(name):
    path = BIN / name
    assert path.is_file() and os.access(path, os.X_OK), f"{name} is not installed in {BIN}"
    done = run_script(name, "--help", timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: {name} "), done.stdout[:200]
    assert done.stderr == ""
