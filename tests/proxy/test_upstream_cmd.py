"""``--upstream-cmd -- CMD ARGS...`` (the form other wrappers use), end to end.

The quoted spelling (``--upstream-cmd "CMD ARGS"``) is what tests/proxy/test_stdio.py and
test_record_replay_sequence.py launch; here the unquoted one.

A real stdio upstream (tests/support/counter_server.py, launched through ``python -c CODE``: an
argument with spaces and quotes, which the ``--`` form must pass on as one word) behind
``finmcp-proxy --transport stdio``, launched the way an MCP host does; ``audit --against-cmd --``
re-issues the calls against a fresh one.
"""

from __future__ import annotations

import shlex
import sys
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from finmcp.proxy.cli import command_after_dashes
from finmcp.proxy.cli import main as proxy_main
from finmcp.proxy.testing import stdio_args
from tests.support.sdk import first_text
from tests.support.source import REPO
from tests.support.traces import wait_calls

UPSTREAM = [
    sys.executable,
    "-c",
    "import runpy; runpy.run_module('tests.support.counter_server', run_name='__main__')",
]


async def _answers(params: StdioServerParameters, count: int) -> list[Any]:
    async with Client(params, mode="legacy") as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["GetCurrentTime"]
        return [first_text(await client.call_tool("GetCurrentTime", {})) for _ in range(count)]


@pytest.mark.slow
def test_the_rest_of_the_line_is_the_upstream_command(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(REPO)  # the upstream imports tests.support (the audit's launch inherits the folder)
    db = tmp_path / "runs.sqlite"
    args = stdio_args([], db, "--run", "dashes", "--upstream-cmd", "--", *UPSTREAM)
    params = StdioServerParameters(command=sys.executable, args=args, cwd=str(REPO))
    assert anyio.run(_answers, params, 2) == ["answer 1", "answer 2"]
    assert [c["status"] for c in wait_calls(db, "dashes", 2)] == ["ok", "ok"]
    code = proxy_main(
        ["audit", "--db", str(db), "--run", "dashes", "--include-acting", "--against-cmd", "--", *UPSTREAM]
    )  # the counter is not annotated read-only
    report = capsys.readouterr().out
    assert code == 0, report
    assert "audited 2 calls of run dashes: 2 identical" in report


def test_dashes_need_a_command_and_keep_every_word(capsys):
    assert proxy_main(["--transport", "stdio", "--db", "x.sqlite", "--upstream-cmd", "--"]) == 2
    assert "--upstream-cmd --: expected the command after '--'" in capsys.readouterr().err
    line = command_after_dashes(["--db", "d", "--upstream-cmd", "--", "srv", "--name", "a b", "--", "'q'"])
    assert line[:3] == ["--db", "d", "--upstream-cmd"]
    assert shlex.split(line[3]) == ["srv", "--name", "a b", "--", "'q'"]
    assert command_after_dashes(["--upstream-cmd", "srv --x"]) == ["--upstream-cmd", "srv --x"]
