"""Output into a pipe whose reader has gone ends quietly (``finmcp-server tools | head``)."""

from __future__ import annotations

import subprocess

from finmcp.recordings.plumbing.pipes import BROKEN_PIPE_EXIT
from tests.support.scripts import script


def test_a_closed_pipe_ends_without_a_traceback() -> None:
    process = subprocess.Popen(
        [script("finmcp-server"), "tools", "--inventory", "fintool760"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader is gone before the program writes
    stderr = process.stderr.read().decode()
    code = process.wait(timeout=60)
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
    assert code == BROKEN_PIPE_EXIT, (code, stderr)
