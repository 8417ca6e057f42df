"""Four MCP servers nobody here wrote, as users run them: traced, recorded, replayed the documented way
with every outcome as live, and audited identical (issue 28, "Must show").

``mcp-server-time`` and ``mcp-server-git`` (PyPI), ``@modelcontextprotocol/server-memory`` and
``server-filesystem`` (npm), each over stdio behind ``finmcp-proxy --transport stdio --recordings``
(what an MCP host launches), each from a state of its own in the test's folder:

1. a stateful session (acting calls, the same call twice with different answers, an ``isError``
   result or a JSON-RPC error) is traced: one call row per call, in order, with the status the client
   saw;
2. the recording replays with ``finmcp-server --recordings rec.sqlite --replay sequence --miss strict``
   over stdio and HTTP showing the client exactly what it saw live (serverInfo, tools, results,
   errors), the repeated call's answers in their order;
3. a read-only session at the state the first one left, audited with ``finmcp-proxy audit
   --against-cmd`` against the live server (the caller's environment, so the same state): no finding.
"""

from __future__ import annotations

import json

import pytest

from finmcp.proxy.cli import main as proxy_main
from finmcp.recordings.trace_store import open_trace_store
from tests.thirdparty.servers import (
    RUN,
    STDIO_SERVERS,
    ThirdParty,
    record_stdio,
    replayed_over_both_transports,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

READ_ONLY_RUN = "read-only"


def _status(outcome: dict) -> str:
    if "error" in outcome:
        return "rpc_error"
    return "tool_error" if outcome["result"].get("isError") else "ok"


@pytest.mark.parametrize("server", STDIO_SERVERS, ids=[s.name for s in STDIO_SERVERS])
def test_traced_recorded_replayed_and_audited(server: ThirdParty, tmp_path, capsys, monkeypatch):
    state = tmp_path / "state"
    server.start_state(state)
    command, env = server.command(state), server.env(state)
    session = server.calls(state, server.session)
    live = record_stdio(command, tmp_path, session, env)
    kinds = {next(iter(k for k in o if k != "progress")) for o in live["outcomes"]}
    assert "result" in kinds and len(live["tools"]) >= 2, live["outcomes"]
    assert any(_status(o) != "ok" for o in live["outcomes"])  # a failure is part of what is replayed

    with open_trace_store(tmp_path / "t.sqlite", readonly=True) as store:
        rows = store.calls(RUN)
    assert [(r["tool"], r["arguments"]) for r in rows] == [(t, a) for t, a in session]
    assert [r["status"] for r in rows] == [_status(o) for o in live["outcomes"]]
    assert [r["seq"] for r in rows] == sorted(r["seq"] for r in rows)

    replayed_over_both_transports(tmp_path / "rec.sqlite", session, live)

    read_only = server.calls(state, server.read_only)
    record_stdio(command, tmp_path, read_only, env, run=READ_ONLY_RUN)
    for name, value in env.items():  # the audit launches the server with the caller's environment
        monkeypatch.setenv(name, value)
    audit = ["audit", "--db", str(tmp_path / "t.sqlite"), "--run", READ_ONLY_RUN, "--json", "-"]
    code = proxy_main([*audit, *server.audit_flags, "--against-cmd", "--", *command])
    report = json.loads(capsys.readouterr().out)
    assert code == 0, (report["findings"], report["counts"], report["notes"])
    assert report["findings"] == [], report["findings"]
    assert report["counts"] == {"identical": len(read_only)} and not report["skipped_tools"], report["counts"]
    assert report["definitions"]["compared"] and report["definitions"]["findings"] == []
