"""``finmcp-proxy --fault-schedule``: a real finmcp-server (no schedule) behind a real proxy that injects the
schedule's faults, seen by the SDK's MCP client over HTTP and stdio; the trace read back by the evaluator's
fault reader; a bad schedule stops the proxy before its ready line."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPError

from finmcp.evaluator.inputs.fault_trace import load_fault_trace
from finmcp.recordings.trace_store import open_trace_store
from tests.support.processes import health
from tests.support.scripts import proxy_stdio, run_script, server_stdio_command
from tests.support.sdk import first_text

SCHEDULE = {
    "version": 1,
    "seed": 11,
    "rules": [
        {"kind": "rate_limit", "samples": ["rl"], "at": [0], "retry_after": 0.3},
        {"kind": "rpc_error", "samples": ["perm"], "at": [0], "transient": False},
        {"kind": "is_error", "samples": ["err"], "at": [0]},
        {"kind": "timeout", "samples": ["slow"], "at": [0], "timeout_ms": 400},
        {"kind": "truncated", "samples": ["alt"], "at": [0]},
        {"kind": "wrong_values", "samples": ["alt"], "at": [1]},
        {"kind": "empty", "samples": ["alt"], "at": [2]},
        {"kind": "is_error", "tools": "NoSuchTool*"},
        {"kind": "rpc_error", "samples": ["old"], "at": [0]},
    ],
}
UNKNOWN_TOOL = r"rules\[7\]\.tools 'NoSuchTool\*' named no tool"


def _schedule(tmp_path: Path, document: dict[str, Any] = SCHEDULE) -> str:
    path = tmp_path / "schedule.json"
    path.write_text(json.dumps(document), "utf-8")
    return str(path)


def _answered(server: Any) -> int:
    """Calls the upstream has answered (its service's /healthz counters, which count the fast path's
    calls too): what fails if the proxy forwarded a call."""
    return sum(sum(counts.values()) for counts in health(server)["calls"].values())


def _marker(result: Any) -> dict[str, Any]:
    return (result.meta or {}).get("io.finmcp/fault") or {}


@pytest.mark.slow
def test_replacing_faults_are_answered_by_the_proxy_and_never_forwarded(children, tmp_path: Path) -> None:
    server = children.server(["--latency", "none"])
    db = tmp_path / "runs.sqlite"
    proxy = children.proxy(
        ["--upstream", server.url, "--db", str(db), "--fault-schedule", _schedule(tmp_path)],
        allow=[UNKNOWN_TOOL],
    )

    def url(sample: str) -> str:
        return f"{proxy.base}/r/run1/s/{sample}/t/0/mcp"

    async def main() -> None:
        async with Client(url("rl")) as client:
            await client.list_tools()
            before = _answered(server)
            limited = await client.call_tool("GetCurrentTime", {})
            assert limited.is_error and "Retry-After: 0.3 seconds (transient; retry)" in first_text(limited)
            assert _marker(limited)["kind"] == "rate_limit" and limited.meta["io.finmcp/retry_after"] == 0.3
            early = await client.call_tool("GetCurrentTime", {})  # before Retry-After: limited again
            assert early.is_error and _marker(early)["repeat"] is True
            assert _answered(server) == before  # the upstream saw neither call
            await anyio.sleep(0.35)
            passed = await client.call_tool("GetCurrentTime", {})
            assert not passed.is_error and "io.finmcp/fault" not in (passed.meta or {})
            assert _answered(server) == before + 1
        async with Client(url("perm")) as client:
            for attempt in range(2):  # permanent: every retry fails alike, never forwarded
                with pytest.raises(MCPError) as info:
                    await client.call_tool("GetCurrentTime", {})
                assert "(permanent; do not retry)" in str(info.value)
                assert info.value.error.data["io.finmcp/fault"]["repeat"] is (attempt == 1)
            assert _answered(server) == before + 1
        async with Client(url("err")) as client:
            failed = await client.call_tool("GetCurrentTime", {})
            assert failed.is_error and "Upstream service error" in first_text(failed)
            retried = await client.call_tool("GetCurrentTime", {})  # transient: passes on retry
            assert not retried.is_error and _answered(server) == before + 2
        async with Client(url("slow")) as client:
            started = time.monotonic()
            slow = await client.call_tool("GetCurrentTime", {})
            assert time.monotonic() - started >= 0.4  # waited timeout_ms, then answered
            assert slow.is_error and "did not answer within 400 ms" in first_text(slow)
            assert _answered(server) == before + 2
        async with Client(url("old"), mode="legacy") as client:  # the handshake era: a session id
            with pytest.raises(MCPError, match=r"\(transient; retry\)"):
                await client.call_tool("GetCurrentTime", {})
            assert not (await client.call_tool("GetCurrentTime", {})).is_error
            assert _answered(server) == before + 3

    anyio.run(main)
    assert health(proxy)["fault_schedule"]["injected"] == {
        "rate_limit": 2,
        "rpc_error": 3,
        "is_error": 1,
        "timeout": 1,
    }
    stderr = children.stop(proxy)
    assert "rules[7].tools 'NoSuchTool*' named no tool of the upstream's tools/list (65 tools)" in stderr
    trace = load_fault_trace(db, "run1")  # the evaluator reads the proxy's markers like the server's
    seen = [
        (c.sample, c.ok, (c.marker or {}).get("kind"), (c.marker or {}).get("repeat")) for c in trace.calls
    ]
    assert seen == [
        ("rl", False, "rate_limit", False),
        ("rl", False, "rate_limit", True),
        ("rl", True, None, None),
        ("perm", False, "rpc_error", False),
        ("perm", False, "rpc_error", True),
        ("err", False, "is_error", False),
        ("err", True, None, None),
        ("slow", False, "timeout", False),
        ("old", False, "rpc_error", False),
        ("old", True, None, None),
    ]
    with open_trace_store(db, readonly=True) as store:
        notes = [m for m in store.messages(run_id="run1") if m["kind"] == "note"]
    assert [n["method"] for n in notes] == ["finmcp/fault_schedule_tools"]
    assert "NoSuchTool*" in notes[0]["body"]


def _direct(server_url: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async def main() -> list[Any]:
        async with Client(server_url) as client:
            return [(await client.call_tool(tool, args)).structured_content for tool, args in calls]

    return anyio.run(main)


ALTERED = [("SearchFunds", {"keyword": "红利", "size": n}) for n in (3, 4, 5)]


@pytest.mark.slow
@pytest.mark.parametrize("framing", ["sse", "json"])
def test_altering_faults_change_the_upstream_answer(children, tmp_path: Path, framing: str) -> None:
    server = children.server(["--latency", "none", *(["--json-response"] if framing == "json" else [])])
    db = tmp_path / "runs.sqlite"
    proxy = children.proxy(
        ["--upstream", server.url, "--db", str(db), "--fault-schedule", _schedule(tmp_path)],
        allow=[UNKNOWN_TOOL],
    )
    originals = _direct(server.url, ALTERED)
    assert originals[0]["funds"] and originals[1]["funds"]  # data to alter

    async def main() -> None:
        async with Client(f"{proxy.base}/r/run2/s/alt/t/0/mcp") as client:
            await client.list_tools()
            before = _answered(server)
            with pytest.raises(RuntimeError, match="did not return structured content"):
                await client.call_tool(*ALTERED[0])  # truncated: text cut, structured content gone
            wrong = await client.call_tool(*ALTERED[1])
            assert not wrong.is_error and _marker(wrong)["kind"] == "wrong_values"
            assert wrong.structured_content != originals[1]
            assert wrong.structured_content.keys() == originals[1].keys()
            empty = await client.call_tool(*ALTERED[2])
            assert _marker(empty)["kind"] == "empty" and empty.structured_content["funds"] == []
            assert _answered(server) == before + 3  # altering kinds are forwarded

    anyio.run(main)
    children.stop(proxy)
    trace = load_fault_trace(db, "run2")
    assert [(c.marker or {}).get("kind") for c in trace.calls] == ["truncated", "wrong_values", "empty"]
    with open_trace_store(db, readonly=True) as store:
        rows = store.calls("run2")
        notes = [
            json.loads(m["body"])
            for m in store.messages(run_id="run2")
            if m["method"] == "finmcp/fault_original"
        ]
    assert [n["finmcp_fault_original"]["kind"] for n in notes] == ["truncated", "wrong_values", "empty"]
    for note, original in zip(notes, originals, strict=True):  # the upstream's answer, as received
        assert note["response"]["result"]["structuredContent"] == original
    full = notes[0]["response"]["result"]["content"][0]["text"]
    assert rows[0]["result"]["content"][0]["text"] == full[: len(full) // 2]  # what the client got
    assert rows[0]["result"].get("structuredContent") is None
    assert rows[1]["result"]["structuredContent"] != originals[1]


@pytest.mark.slow
def test_stdio_side_injects_faults(tmp_path: Path) -> None:
    schedule = {
        "seed": 2,
        "rules": [
            {"kind": "rpc_error", "at": [0]},
            {"kind": "wrong_values", "at": [2]},
            {"kind": "timeout", "at": [3], "timeout_ms": 300},
        ],
    }
    db = tmp_path / "runs.sqlite"
    upstream = ["--upstream-cmd", server_stdio_command("--latency", "none")]
    params = proxy_stdio(
        upstream,
        db,
        "--run",
        "std",
        "--sample",
        "s",
        "--turn",
        "0",
        "--fault-schedule",
        _schedule(tmp_path, schedule),
    )

    async def main() -> None:
        async with Client(params) as client:
            with pytest.raises(MCPError, match=r"\(transient; retry\)"):
                await client.call_tool("GetCurrentTime", {})
            retried = await client.call_tool("GetCurrentTime", {})
            assert not retried.is_error
            wrong = await client.call_tool(*ALTERED[0])
            assert _marker(wrong)["kind"] == "wrong_values" and wrong.structured_content["funds"]
            started = time.monotonic()
            slow = await client.call_tool("GetCurrentTime", {})
            assert slow.is_error and time.monotonic() - started >= 0.3

    anyio.run(main)
    trace = load_fault_trace(db, "std")
    assert [(c.marker or {}).get("kind") for c in trace.calls] == [
        "rpc_error",
        None,
        "wrong_values",
        "timeout",
    ]
    with open_trace_store(db, readonly=True) as store:
        notes = [m for m in store.messages(run_id="std") if m["method"] == "finmcp/fault_original"]
    assert len(notes) == 1 and '"funds"' in notes[0]["body"]


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_bad_schedule_stops_the_proxy_before_its_ready_line(tmp_path: Path, transport: str) -> None:
    bad = _schedule(tmp_path, {"seed": 1, "rules": [{"kind": "empty"}, {"kind": "explode"}]})
    db = tmp_path / "runs.sqlite"
    upstream = (
        ["--upstream", "http://127.0.0.1:9/mcp", "--port", "0"]
        if transport == "http"
        else ["--transport", "stdio", "--upstream-cmd", "false"]
    )
    done = run_script("finmcp-proxy", *upstream, "--db", str(db), "--fault-schedule", bad, timeout=60)
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "rules[1].kind: unknown fault kind 'explode'" in lines[0]
    assert "ready" not in done.stdout + done.stderr and not db.exists()


def test_fault_schedule_with_record_mode_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    done = run_script(
        "finmcp-proxy",
        *("--upstream", "http://127.0.0.1:9/mcp", "--port", "0", "--db", str(db)),
        *("--recordings", str(tmp_path / "rec.sqlite"), "--fault-schedule", _schedule(tmp_path)),
        timeout=60,
    )
    assert done.returncode == 2 and "would record injected faults" in done.stderr and not db.exists()
