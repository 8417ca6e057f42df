"""A recording of a third-party MCP server replays the documented way, as that server (issue 28, defects 1-3).

Each test records a real third-party server through ``finmcp-proxy --recordings`` driven by the SDK
client (the *live* session), then replays it with ``finmcp-server --recordings rec.sqlite --replay
sequence --miss strict`` (no inventory) over stdio and Streamable HTTP, and requires every outcome the
client saw to equal the live one: ``serverInfo``, the tool list, each result (``isError`` ones too),
each JSON-RPC error (code, message, data) and the number of progress notifications. Servers:
``mcp-server-time`` (PyPI), ``@modelcontextprotocol/server-memory`` (npm; stateful: the order of
``create_entities`` and ``read_graph`` answers is kept) and ``server-everything`` over Streamable HTTP
(progress notifications). Two HTTP client sessions each start their sequence at step 0.
"""

from __future__ import annotations

import os

import anyio
import pytest

from finmcp.proxy.cli import main as proxy_main
from finmcp.proxy.testing import ProxyProcess
from finmcp.recordings import RecordingStore
from finmcp.server.testing import ServerProcess
from tests.thirdparty.servers import (
    MEMORY,
    RUN,
    TIME,
    Script,
    observe,
    record_stdio,
    replay_stdio,
    replayed_over_both_transports,
    seen,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

MISS_CODE = -32050  # server.recorded.MISS_CODE: a call the recording has no answer for

TIME_SCRIPT: Script = [
    ("get_current_time", {"timezone": "Europe/London"}),
    ("convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
    ("get_current_time", {"timezone": "Nowhere/Atlantis"}),  # isError: the server's own answer
    ("get_current_time", {}),  # isError: the server's input validation
    ("no_such_tool", {}),  # a JSON-RPC -32602 error
    ("get_current_time", {"timezone": "Europe/London"}),  # the same key again: its second answer
]
ENTITY = {"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}
MEMORY_SCRIPT: Script = [
    ("read_graph", {}),
    ("create_entities", {"entities": [ENTITY]}),
    ("read_graph", {}),  # now holds Ada: the same key, a different answer
    ("create_entities", {"entities": [ENTITY]}),  # a duplicate: created nothing
    ("add_observations", {"observations": [{"entityName": "Nobody", "contents": ["x"]}]}),  # isError
    ("read_graph", {}),
]


def test_mcp_server_time_replays_as_itself_errors_and_all(tmp_path, capsys):
    command = str(TIME.binary())
    live = record_stdio([command], tmp_path, TIME_SCRIPT)
    assert live["serverInfo"]["name"] == "mcp-time"
    kinds = [next(iter(o)) for o in live["outcomes"]]
    assert kinds == ["result", "result", "result", "result", "error", "result"]
    assert live["outcomes"][2]["result"]["isError"] and live["outcomes"][3]["result"]["isError"]
    assert live["outcomes"][4]["error"]["code"] == -32602

    rec = tmp_path / "rec.sqlite"
    with RecordingStore.open(rec) as store:
        assert store.declared_servers() == ["mcp-time"]  # stored under the upstream's serverInfo.name
        declared = store.declaration("mcp-time")
    assert declared is not None and [t["name"] for t in declared["tools"]] == [
        t["name"] for t in live["tools"]
    ]
    replayed_over_both_transports(rec, TIME_SCRIPT, live)

    for named in ([], ["--recordings-inventory", "mcp-time"]):  # the audit serves the file the same way
        audit = ["audit", "--db", str(tmp_path / "t.sqlite"), "--run", RUN, "--against", str(rec), *named]
        assert proxy_main(audit) == 0, capsys.readouterr().out
        shown = capsys.readouterr().out
        assert f"audited {len(TIME_SCRIPT)} calls of run {RUN}: {len(TIME_SCRIPT)} identical" in shown

    unrecorded = [("get_current_time", {"timezone": "Asia/Tokyo"})]
    [miss] = anyio.run(observe, replay_stdio(rec), unrecorded)["outcomes"]
    assert miss["error"]["code"] == MISS_CODE and "get_current_time" in miss["error"]["message"]
    assert miss["error"]["data"]["tool"] == "get_current_time" and miss["error"]["data"]["args_key"]


def test_server_memory_keeps_the_order_of_a_stateful_session(tmp_path):
    command = str(MEMORY.binary())
    env = {**os.environ, "MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}
    live = record_stdio([command], tmp_path, MEMORY_SCRIPT, env)
    graphs = [live["outcomes"][i]["result"] for i in (0, 2, 5)]
    assert graphs[0] != graphs[1] == graphs[2]  # the state changed between identical calls
    replayed_over_both_transports(tmp_path / "rec.sqlite", MEMORY_SCRIPT, live)


EVERYTHING_SCRIPT: Script = [
    ("echo", {"message": "hello"}),
    ("get-sum", {"a": 2, "b": 3}),
    ("trigger-long-running-operation", {"duration": 0.3, "steps": 4}),
    ("get-sum", {"a": "two", "b": 3}),
]


def test_server_everything_over_http_replays_progress_notifications(tmp_path):
    from tests.conformance.suite import Everything, provisioned

    rec = tmp_path / "rec.sqlite"
    with Everything(provisioned()) as everything:
        args = ["--upstream", everything.url, "--db", str(tmp_path / "t.sqlite"), "--recordings", str(rec)]
        with ProxyProcess(args) as proxy:
            live = anyio.run(observe, proxy.url, EVERYTHING_SCRIPT)
    assert live["outcomes"][2]["progress"] == 4  # the upstream really reported progress
    with ServerProcess(["--recordings", str(rec), "--replay", "sequence", "--miss", "strict"]) as server:
        replayed = anyio.run(observe, server.url, EVERYTHING_SCRIPT)
    assert seen(replayed) == seen(live)
