"""Sequence-aware record and replay: 30 identical calls to a server that answers each differently.

The upstream is a real process (tests/support/counter_server.py, the SDK's low-level Server over
stdio) behind ``finmcp-proxy --transport stdio --recordings``. A finmcp-server with ``--replay
sequence`` then gives the 30 answers in order (isError results as such, JSON-RPC errors as errors)
and its exhaustion policy after them; ``finmcp-proxy audit --against-cmd`` finds the session identical.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from finmcp.proxy.cli import main as proxy_main
from finmcp.proxy.testing import stdio_args
from finmcp.recordings import RecordingStore
from tests.support.counter_server import FAULT_CODE, expected
from tests.support.sdk import first_text

CALLS = 30
ROOT = Path(__file__).resolve().parents[2]


async def _outcomes(params: StdioServerParameters, count: int) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    async with Client(params, mode="legacy") as client:
        for _ in range(count):
            try:
                result = await client.call_tool("GetCurrentTime", {})
            except MCPError as exc:
                out.append(("rpc_error", (exc.error.code, exc.error.message)))
                continue
            out.append(("isError" if result.is_error else "text", first_text(result)))
    return out


def _replay_server(rec: Path, *extra: str) -> list[str]:
    return ["-m", "finmcp.server", "--transport", "stdio", "--recordings", str(rec), "--miss", "strict",
            "--latency", "none", "--no-output-schemas", *extra]  # fmt: skip


@pytest.mark.slow
def test_thirty_different_answers_replay_in_order_errors_as_errors(tmp_path, capsys):
    db, rec = tmp_path / "runs.sqlite", tmp_path / "rec.sqlite"
    upstream = f"{sys.executable} -m tests.support.counter_server"
    proxy = stdio_args(["--upstream-cmd", upstream], db, "--recordings", str(rec), "--run", "seq")
    recorded = anyio.run(
        _outcomes, StdioServerParameters(command=sys.executable, args=proxy, cwd=str(ROOT)), CALLS
    )
    assert recorded == [expected(n) for n in range(1, CALLS + 1)]  # the upstream really answered 30 ways
    assert ("rpc_error", (FAULT_CODE, "upstream fault at call 10")) in recorded

    with RecordingStore.open(rec) as store:
        assert store.count_steps() == CALLS  # every answer, errors included
        assert store.count() == 1  # the one-answer-per-key table: the last success only

    sequence = _replay_server(rec, "--replay", "sequence", "--replay-exhausted", "error")
    replayed = anyio.run(_outcomes, StdioServerParameters(command=sys.executable, args=sequence), CALLS + 1)
    assert replayed[:CALLS] == recorded
    kind, (code, message) = replayed[CALLS]
    assert kind == "rpc_error" and "Recorded sequence exhausted" in message and "30 times" in message

    repeat = _replay_server(rec, "--replay", "sequence")  # repeat-last (the default policy)
    tail = anyio.run(_outcomes, StdioServerParameters(command=sys.executable, args=repeat), CALLS + 2)
    assert tail[CALLS:] == [recorded[-1], recorded[-1]]

    by_key = anyio.run(_outcomes, StdioServerParameters(command=sys.executable, args=_replay_server(rec)), 2)
    assert by_key == [("text", "answer 29"), ("text", "answer 29")]  # the default: one answer per key

    command = " ".join([sys.executable, *_replay_server(rec, "--replay", "sequence")])
    code = proxy_main(
        ["audit", "--db", str(db), "--run", "seq", "--include-acting", "--against-cmd", command]
    )
    report = capsys.readouterr().out
    assert code == 0, report
    assert f"audited {CALLS} calls of run seq: {CALLS} identical" in report
