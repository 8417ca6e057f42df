"""``finmcp-server --fault-schedule``: a real server subprocess on loopback and the SDK's MCP client see
the scheduled faults (placed by the request's ``_meta``), marked, transient ones passing on retry; a bad
schedule stops the server at start with the field named."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPError

from finmcp.server.testing import ServerProcess
from tests.support.scripts import run_script
from tests.support.sdk import first_text, request_meta

SCHEDULE = {
    "version": 1,
    "seed": 3,
    "rules": [
        {"kind": "rate_limit", "at": [0], "samples": ["a"], "retry_after": 0.2},
        {"kind": "rpc_error", "at": [1], "samples": ["a"], "transient": False},
        {"kind": "empty", "at": [2], "samples": ["a"]},
    ],
}


def _meta(sample: str, position: int) -> dict:
    return {
        "io.finmcp/sample": sample,
        "io.finmcp/turn": 0,
        "io.finmcp/position": {"turn": position, "sample": position},
    }


@pytest.mark.slow
def test_scheduled_faults_over_http_with_the_sdk_client(tmp_path: Path) -> None:
    path = tmp_path / "schedule.json"
    path.write_text(json.dumps(SCHEDULE), "utf-8")
    args = {"fundNameOrCode": "000001"}

    async def main(url: str) -> None:
        async with Client(url) as client:
            limited = await client.call_tool("GetFundDiagnosis", args, meta=request_meta(_meta("a", 0)))
            assert limited.is_error and "Retry-After: 0.2 seconds (transient; retry)" in first_text(limited)
            marker = limited.meta["io.finmcp/fault"]
            assert marker["kind"] == "rate_limit" and marker["position"]["turn"] == 0 and marker["transient"]
            assert (
                limited.meta["io.finmcp/source"] == "fault" and limited.meta["io.finmcp/retry_after"] == 0.2
            )
            early = await client.call_tool("GetFundDiagnosis", args, meta=request_meta(_meta("a", 1)))
            assert early.is_error and early.meta["io.finmcp/fault"]["repeat"]  # before Retry-After
            await anyio.sleep(0.25)
            retried = await client.call_tool("GetFundDiagnosis", args, meta=request_meta(_meta("a", 2)))
            assert retried.meta["io.finmcp/source"] == "simulated"  # answered normally
            for _ in range(2):  # permanent: every retry fails alike
                with pytest.raises(MCPError) as info:
                    await client.call_tool("SearchFunds", {"keyword": "x"}, meta=request_meta(_meta("a", 1)))
                assert "(permanent; do not retry)" in str(info.value)
            empty = await client.call_tool("GetCurrentTime", {}, meta=request_meta(_meta("a", 2)))
            assert not empty.is_error and empty.meta["io.finmcp/fault"]["kind"] == "empty"
            clean = await client.call_tool("GetFundDiagnosis", args, meta=request_meta(_meta("b", 0)))
            assert clean.meta["io.finmcp/source"] == "simulated" and "io.finmcp/fault" not in clean.meta

    with ServerProcess(["--fault-schedule", str(path), "--latency", "none"]) as server:
        anyio.run(main, server.url)


def test_bad_schedule_stops_the_server_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "schedule.json"
    path.write_text(
        json.dumps({"seed": 1, "rules": [{"kind": "empty"}, {"kind": "empty", "tools": "GetStockQuote"}]})
    )
    done = run_script("finmcp-server", "--fault-schedule", str(path), "--port", "0", timeout=60)
    assert done.returncode == 2
    assert "rules[1].tools: 'GetStockQuote' names no tool of the inventory" in done.stderr
    path.write_text(json.dumps({"seed": 1, "rules": [{"kind": "empty", "probability": 2}]}))
    done = run_script("finmcp-server", "--fault-schedule", str(path), "--port", "0", timeout=60)
    assert done.returncode == 2 and "rules[0].probability: probability 2 is out of range" in done.stderr
