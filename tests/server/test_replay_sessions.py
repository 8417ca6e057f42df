"""Sequence replay counts each client session's own place (issue 28, defect 3).

A finmcp-server over Streamable HTTP replays a recording whose key has three different answers.
Two SDK client sessions one after the other, each as a separate program would be (its own client,
its own connection), in the stateless 2026-07-28 era and in the handshake era: each starts at step
0, and each answer names the sequence and step it came from (``_meta["io.finmcp/replay"]``). A
client may name its session (``io.finmcp/replay-session``: two clients share it on purpose) and
start it over (``io.finmcp/replay-reset``). The audit's comparison ignores the added ``_meta``.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp.client import Client

from finmcp.proxy.audit import comparable_result
from finmcp.recordings import RecordingStore
from finmcp.recordings.plumbing.protocol import LATEST_STATELESS_VERSION
from finmcp.server.testing import ServerProcess
from finmcp.tool_specs.inventory import load_inventory

REPLAY = "io.finmcp/replay"
TOOL = "GetCurrentTime"
ANSWERS = ["first", "second", "third"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    rec = tmp_path_factory.mktemp("sessions") / "rec.sqlite"
    schema = load_inventory("finmcp65").get(TOOL).input_schema
    with RecordingStore.open(rec) as store:
        for text in ANSWERS:
            result = {"content": [{"type": "text", "text": text}]}
            store.append_response_step("finmcp65", TOOL, {}, result, "recorded:test", input_schema=schema)
    args = ["--recordings", str(rec), "--replay", "sequence", "--miss", "strict", "--latency", "none"]
    with ServerProcess([*args, "--no-output-schemas"]) as process:
        yield process


async def _program(
    url: str, mode: str, calls: int, meta: dict[str, Any] | None = None
) -> list[tuple[str, Any]]:
    """One client program: ``calls`` identical calls; (answer text, replay meta) each."""
    out = []
    async with Client(url, mode=mode) as client:
        for _ in range(calls):
            result = await client.call_tool(TOOL, {}, meta=meta)  # type: ignore[arg-type]
            text = result.content[0].text  # type: ignore[union-attr]
            out.append((text, (result.meta or {}).get(REPLAY)))
    return out


@pytest.mark.parametrize("mode", [LATEST_STATELESS_VERSION, "legacy"])
def test_each_client_session_starts_its_own_sequence_at_step_0(server, mode):
    first = anyio.run(_program, server.url, mode, 2)
    second = anyio.run(_program, server.url, mode, 2)
    assert [text for text, _ in first] == ["first", "second"]
    assert [text for text, _ in second] == ["first", "second"]  # not "third": its own sequence
    assert [meta["step"] for _, meta in first + second] == [0, 1, 0, 1]
    labels = {meta["sequence"] for _, meta in first} | {meta["sequence"] for _, meta in second}
    assert len(labels) == 2
    prefix = "connection:127.0.0.1:" if mode != "legacy" else "session:"
    assert all(label.startswith(prefix) for label in labels)


def test_a_named_session_is_shared_and_a_reset_starts_it_over(server):
    named = {"io.finmcp/replay-session": "run-7"}
    first = anyio.run(_program, server.url, LATEST_STATELESS_VERSION, 1, named)
    second = anyio.run(_program, server.url, LATEST_STATELESS_VERSION, 1, named)
    assert [first[0][0], second[0][0]] == ["first", "second"]  # one named session across two programs
    assert second[0][1] == {"sequence": "named:run-7", "step": 1}
    reset = anyio.run(
        _program, server.url, LATEST_STATELESS_VERSION, 1, {**named, "io.finmcp/replay-reset": True}
    )
    assert reset[0] == ("first", {"sequence": "named:run-7", "step": 0})


def test_the_replay_meta_is_no_difference_to_the_audit():
    logged = {"content": [{"type": "text", "text": "first"}], "isError": False}
    replayed = {**logged, "_meta": {REPLAY: {"sequence": "stdio", "step": 0}, "io.finmcp/step": 0}}
    assert comparable_result(logged) == comparable_result(replayed)


def test_which_recorded_server_to_serve_is_asked_for_clearly(tmp_path):
    from finmcp.server.options import ServeError, ServeOptions
    from finmcp.server.serve import recorded_service

    rec = tmp_path / "two.sqlite"
    with RecordingStore.open(rec) as store:
        for name in ("mcp-time", "memory-server"):
            store.put_declaration(name, {"serverInfo": {"name": name, "version": "1"}, "tools": []})
        store.put_declaration("finmcp65", {"tools": []})  # finmcp's own: not a foreign server
    options = ServeOptions(recordings=rec, inventory_given=False)
    with pytest.raises(
        ServeError, match=r"declares 2 servers \(mcp-time, memory-server\); pick one with --server"
    ):
        recorded_service(options)
    picked = recorded_service(ServeOptions(recordings=rec, inventory_given=False, server="memory-server"))
    assert picked is not None and picked.server_info == {"name": "memory-server", "version": "1"}
    picked.store.close()
    with pytest.raises(
        ServeError, match=r"--server nope: .* \(declared: finmcp65, mcp-time, memory-server\)"
    ):
        recorded_service(ServeOptions(recordings=rec, inventory_given=False, server="nope"))
    assert recorded_service(ServeOptions(recordings=rec)) is None  # --inventory given: inventories, as before
