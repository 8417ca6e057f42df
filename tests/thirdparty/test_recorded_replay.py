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
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from finmcp.proxy.cli import main as proxy_main
from finmcp.proxy.testing import ProxyProcess, stdio_args
from finmcp.recordings import RecordingStore
from finmcp.server.testing import ServerProcess
from tests.clients import provision
from tests.support.postgres import require_or_skip

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

Script = list[tuple[str, dict[str, Any]]]
RUN = "live"
REPLAY_META = "io.finmcp/replay"  # server.sequence.REPLAY_META: which sequence and step an answer came from
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


def _server(name: str, command: str) -> Path:
    path = provision.folder(name) / "bin" / command
    if not provision.ready(name) or not path.exists():
        require_or_skip(f"{name} is not provisioned ({path}); run python3 tests/clients/provision.py {name}")
    return path


def _node_server(name: str, command: str) -> Path:
    path = provision.node_bin(name, command)
    if not provision.ready(name) or not path.exists():
        require_or_skip(f"{name} is not provisioned ({path}); run python3 tests/clients/provision.py {name}")
    return path


def _counter(seen: list[float]) -> Any:
    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        seen.append(value)

    return on_progress


async def session(
    target: str | StdioServerParameters, script: Script, mode: str = "legacy"
) -> dict[str, Any]:
    """Everything one SDK client session sees: serverInfo, the tool list, each call's outcome."""
    async with Client(target, mode=mode) as client:
        init = client.session.initialize_result
        assert init is not None
        listing = await client.list_tools()
        outcomes: list[dict[str, Any]] = []
        metas: list[Any] = []
        for tool, arguments in script:
            progress: list[float] = []
            on_progress = _counter(progress)
            try:
                result = await client.call_tool(tool, arguments, progress_callback=on_progress)
            except MCPError as exc:
                error = {"code": exc.error.code, "message": exc.error.message, "data": exc.error.data}
                outcomes.append({"error": error, "progress": len(progress)})
                metas.append(None)
                continue
            dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
            metas.append(dumped.pop("_meta", None))
            outcomes.append({"result": dumped, "progress": len(progress)})
    return {
        "serverInfo": init.server_info.model_dump(mode="json", by_alias=True, exclude_none=True),
        "capabilities": init.capabilities.model_dump(mode="json", by_alias=True, exclude_none=True),
        "instructions": init.instructions,
        "tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listing.tools],
        "outcomes": outcomes,
        "metas": metas,
    }


def _seen(observed: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in observed.items() if k != "metas"}


def _replay_stdio(rec: Path) -> StdioServerParameters:
    args = ["-m", "finmcp.server", "--transport", "stdio", "--recordings", str(rec)]
    return StdioServerParameters(
        command=sys.executable, args=[*args, "--replay", "sequence", "--miss", "strict"]
    )


def _record_stdio(
    command: list[str], tmp: Path, script: Script, env: dict[str, str] | None = None
) -> dict[str, Any]:
    recordings = ["--recordings", str(tmp / "rec.sqlite"), "--run", RUN]
    proxy = stdio_args(["--upstream-cmd", *command], tmp / "t.sqlite", *recordings)
    params = StdioServerParameters(command=sys.executable, args=proxy, env=env)
    return anyio.run(session, params, script)


def _replayed_over_both_transports(rec: Path, script: Script, live: dict[str, Any]) -> None:
    over_stdio = anyio.run(session, _replay_stdio(rec), script)
    assert _seen(over_stdio) == _seen(live)
    with ServerProcess(["--recordings", str(rec), "--replay", "sequence", "--miss", "strict"]) as server:
        first = anyio.run(session, server.url, script)
        second = anyio.run(session, server.url, script)  # a second program: its own sequence, from step 0
    assert _seen(first) == _seen(live) and _seen(second) == _seen(live)
    labels = {m[REPLAY_META]["sequence"] for m in first["metas"] + second["metas"] if m and REPLAY_META in m}
    assert len(labels) == 2  # each session's answers name its own sequence
    steps = [m[REPLAY_META]["step"] for m in first["metas"] if m and REPLAY_META in m]
    assert 1 in steps  # a repeated key got its second recorded answer


def test_mcp_server_time_replays_as_itself_errors_and_all(tmp_path, capsys):
    command = str(_server("server-time", "mcp-server-time"))
    live = _record_stdio([command], tmp_path, TIME_SCRIPT)
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
    _replayed_over_both_transports(rec, TIME_SCRIPT, live)

    for named in ([], ["--recordings-inventory", "mcp-time"]):  # the audit serves the file the same way
        audit = ["audit", "--db", str(tmp_path / "t.sqlite"), "--run", RUN, "--against", str(rec), *named]
        assert proxy_main(audit) == 0, capsys.readouterr().out
        shown = capsys.readouterr().out
        assert f"audited {len(TIME_SCRIPT)} calls of run {RUN}: {len(TIME_SCRIPT)} identical" in shown

    unrecorded = [("get_current_time", {"timezone": "Asia/Tokyo"})]
    [miss] = anyio.run(session, _replay_stdio(rec), unrecorded)["outcomes"]
    assert miss["error"]["code"] == MISS_CODE and "get_current_time" in miss["error"]["message"]
    assert miss["error"]["data"]["tool"] == "get_current_time" and miss["error"]["data"]["args_key"]


def test_server_memory_keeps_the_order_of_a_stateful_session(tmp_path):
    command = str(_node_server("server-memory", "mcp-server-memory"))
    env = {**os.environ, "MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}
    live = _record_stdio([command], tmp_path, MEMORY_SCRIPT, env)
    graphs = [live["outcomes"][i]["result"] for i in (0, 2, 5)]
    assert graphs[0] != graphs[1] == graphs[2]  # the state changed between identical calls
    _replayed_over_both_transports(tmp_path / "rec.sqlite", MEMORY_SCRIPT, live)


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
            live = anyio.run(session, proxy.url, EVERYTHING_SCRIPT)
    assert live["outcomes"][2]["progress"] == 4  # the upstream really reported progress
    with ServerProcess(["--recordings", str(rec), "--replay", "sequence", "--miss", "strict"]) as server:
        replayed = anyio.run(session, server.url, EVERYTHING_SCRIPT)
    assert _seen(replayed) == _seen(live)
