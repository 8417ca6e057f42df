"""The real simulator behind a real server process, and the bake / import / export commands."""

from __future__ import annotations

import json
import subprocess

import anyio
import mcp_types as types
import pytest
from mcp.client import Client

from finmcp.recordings import RecordingStore
from finmcp.server.service import SOURCE_KEY
from finmcp.tool_specs.inventory import load_inventory
from tests.support.finmcp_samples import official_calls
from tests.support.scripts import run_script
from tests.support.sdk import first_text


def cli(*args: str) -> subprocess.CompletedProcess:
    """``finmcp-server recordings ARGS``."""
    return run_script("finmcp-server", "recordings", *args)


@pytest.mark.slow
@pytest.mark.shared
def test_official_calls_replay_or_simulate_and_repeat_identically(shared_dir, server_process, tmp_path):
    db = tmp_path / "rec.sqlite"
    # Only the demo file's outputs are recorded: the train file's calls are misses, answered by the
    # simulator from a world that also knows the codes the recordings mention (e.g. ZH013136).
    imported = cli(
        "import", "--finmcp", str(shared_dir / "finmcp" / "demo_infer.json"), "--recordings", str(db)
    )
    assert imported.returncode == 0, imported.stderr
    assert "demo_infer.json: imported 23, identical 1" in imported.stdout
    known = load_inventory("qieman79").names
    calls, _ = official_calls(shared_dir, known)
    sources: dict[str, int] = {}
    answered: set[tuple[str, str]] = set()

    async def main() -> None:
        async with Client(proc.url, mode="auto") as client:
            for tool, arguments in calls:
                request = types.CallToolRequest(
                    params=types.CallToolRequestParams(name=tool, arguments=arguments)
                )
                first = await client.session.send_request(request, types.CallToolResult)
                second = await client.session.send_request(request, types.CallToolResult)
                source = first.meta[SOURCE_KEY]
                sources[source] = sources.get(source, 0) + 1
                assert first_text(first) == first_text(second), tool
                if source == "simulated" and not first.is_error:
                    checked = await client.call_tool(tool, arguments)  # the SDK validates structuredContent
                    assert checked.structured_content == first.structured_content
                    answered.add((tool, json.dumps(arguments, sort_keys=True)))

    args = ["--inventory", "qieman79", "--recordings", str(db), "--latency", "none", "--seed", "0"]
    proc = server_process(args)
    anyio.run(main)
    assert sources.get("replay", 0) >= 20 and sources.get("simulated", 0) >= 30
    assert set(sources) <= {"replay", "simulated"}
    # a strategy code the recordings mention resolves in the simulated world
    assert ("GetStrategyRiskInfo", json.dumps({"strategyCode": "ZH013136"})) in answered


@pytest.mark.slow
def test_bake_then_strict_replay_and_export(server_process, tmp_path):
    calls = tmp_path / "calls.jsonl"
    lines = [
        {"tool": "SearchFunds", "arguments": {"keyword": "红利", "size": 3}},
        {"tool": "GetCurrentTime", "arguments": {}},
        {"tool": "NotATool", "arguments": {}},
    ]
    calls.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n", "utf-8")
    db = tmp_path / "baked.sqlite"
    baked = cli("bake", "--inventory", "finmcp65", "--calls", str(calls), "--recordings", str(db))
    assert baked.returncode == 0, baked.stderr
    assert "inserted 2" in baked.stdout and "NotATool" in baked.stdout
    with RecordingStore.open(db) as store:
        assert store.count() == 2
        schema = load_inventory("finmcp65").get("SearchFunds").input_schema
        stored = store.get_response(
            "finmcp65", "SearchFunds", {"size": 3, "keyword": "红利"}, input_schema=schema
        )
    assert stored is not None

    async def main() -> None:
        async with Client(proc.url, mode="legacy") as client:
            result = await client.call_tool("SearchFunds", {"keyword": "红利", "size": 3})
            assert first_text(result) == stored["content"][0]["text"]
            assert result.meta[SOURCE_KEY] == "replay"
            miss = await client.call_tool("SearchFunds", {"keyword": "红利", "size": 4})
            assert miss.is_error and "No recording" in first_text(miss)

    args = ["--inventory", "finmcp65", "--recordings", str(db), "--miss", "strict", "--latency", "none"]
    proc = server_process(args)
    anyio.run(main)

    out = tmp_path / "export.jsonl"
    exported = cli("export", "--recordings", str(db), "--output", str(out))
    assert exported.returncode == 0, exported.stderr
    assert len(out.read_text("utf-8").splitlines()) == 2
    again = tmp_path / "again.sqlite"
    assert cli("import", "--jsonl", str(out), "--recordings", str(again)).returncode == 0
    with RecordingStore.open(again) as store:
        assert store.count() == 2


@pytest.mark.slow
def test_recording_commands_report_bad_input_clearly(tmp_path):
    missing = cli("bake", "--calls", str(tmp_path / "nope.jsonl"), "--recordings", str(tmp_path / "x.sqlite"))
    assert missing.returncode == 2 and "calls file not found" in missing.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"tool": "SearchFunds", "arguments": {}}\n{oops\n', "utf-8")
    broken = cli("bake", "--calls", str(bad), "--recordings", str(tmp_path / "x.sqlite"))
    assert broken.returncode == 2 and "bad.jsonl:2" in broken.stderr
    gone = cli("export", "--recordings", str(tmp_path / "none.sqlite"), "--output", str(tmp_path / "o.jsonl"))
    assert gone.returncode == 2 and "no such file" in gone.stderr
    assert "Traceback" not in missing.stderr + broken.stderr + gone.stderr
