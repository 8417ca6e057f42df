"""``--version`` of the installed commands: ``PROG VERSION`` on stdout (as argparse's own action prints
it), the version pyproject.toml declares, exit 0. tests/packaging/test_wheel.py asks the wheel's."""

from __future__ import annotations

import pytest

from tests.packaging.project import version
from tests.support.scripts import SCRIPTS, run_script


@pytest.mark.parametrize("name", SCRIPTS)
def test_version_is_pyproject_s_on_stdout(name):
    done = run_script(name, "--version", timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"{name} {version()}\n", "")
