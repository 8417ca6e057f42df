"""Record a real HTTPS server and replay it, end to end (issue 16 item 4).

finmcp-server over TLS with a bearer token plays the real server; finmcp-proxy in record mode sits in
front of it over HTTPS (Streamable HTTP on the HTTP side; legacy SSE on the stdio side); an SDK
client makes the calls. A plain finmcp-server with ``--miss strict`` then serves the recording and
answers every call identically, and ``finmcp-proxy audit`` finds the session identical, against
that server and against the recordings file itself.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from finmcp.proxy.audit import comparable_result
from finmcp.proxy.cli import main as proxy_main
from finmcp.proxy.testing import stdio_args
from finmcp.recordings import RecordingStore
from finmcp.server.sim.example_args import example_arguments
from finmcp.server.world import World
from finmcp.tool_specs.inventory import load_inventory
from tests.support.processes import Children
from tests.support.tls import mint

TOKEN = "real-server-bearer-0a1b2c3d4e"
TOOLS = ("SearchFunds", "GetFundDiagnosis", "GetFundsBasicInfo", "GetStrategyDetail")


def _plan() -> list[tuple[str, dict[str, Any]]]:
    inventory, world = load_inventory("finmcp65"), World(seed=0)
    return [(name, example_arguments(inventory.get(name), world)) for name in TOOLS if inventory.get(name)]


async def _call_all(client: Client, plan: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    out = []
    for tool, arguments in plan:
        result = await client.call_tool(tool, arguments)
        out.append(comparable_result(result.model_dump(mode="json", by_alias=True, exclude_none=True)))
    return out


def _audit_report(db, run: str, against: list[str], capsys) -> str:
    code = proxy_main(["audit", "--db", str(db), "--run", run, *against])
    report = capsys.readouterr().out
    assert code == 0, report
    return report


@pytest.mark.slow
def test_record_an_https_streamable_http_server_and_replay_it(tmp_path, capsys):
    certs = mint(tmp_path / "certs")
    db, rec = tmp_path / "runs.sqlite", tmp_path / "rec.sqlite"
    plan = _plan()
    with Children() as children:
        real = children.server(
            ["--token", TOKEN, "--latency", "none", *certs.cert_args()], ca_file=str(certs.ca)
        )
        proxy = children.proxy(
            ["--upstream", real.url, "--upstream-ca", str(certs.ca), "--db", str(db), "--recordings", str(rec),
             *certs.cert_args()],
            ca_file=str(certs.ca),
        )  # fmt: skip
        assert proxy.url.startswith("https://") and real.url.startswith("https://")

        async def record() -> list[dict[str, Any]]:
            async with certs.http_client(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
                transport = streamable_http_client(proxy.tagged("live", "s1", 0), http_client=http)
                async with Client(transport, mode="auto") as client:
                    return await _call_all(client, plan)

        live = anyio.run(record)
        children.stop(proxy)
        children.stop(real)
        with RecordingStore.open(rec) as store:
            assert store.count() == len(plan) and store.count_steps() == len(plan)

        replay = children.server(["--recordings", str(rec), "--miss", "strict", "--latency", "none"])

        async def again() -> list[dict[str, Any]]:
            async with Client(replay.url, mode="auto") as client:
                return await _call_all(client, plan)

        assert anyio.run(again) == live  # every answer identical, served from the recording
        report = _audit_report(db, "live", ["--against", replay.url], capsys)
        assert f"{len(plan)} identical" in report
    report = _audit_report(db, "live", ["--against", str(rec)], capsys)
    assert f"audited {len(plan)} calls of run live: {len(plan)} identical" in report


@pytest.mark.slow
def test_record_an_https_legacy_sse_server_through_the_stdio_side_and_replay_it(tmp_path, capsys):
    certs = mint(tmp_path / "certs")
    db, rec = tmp_path / "runs.sqlite", tmp_path / "rec.sqlite"
    plan = _plan()
    with Children() as children:
        real = children.server(
            ["--transport", "sse", "--token", TOKEN, "--latency", "none", *certs.cert_args()],
            ca_file=str(certs.ca),
        )
        upstream = ["--upstream-sse", real.endpoint("/sse")]
        args = stdio_args(
            upstream, db, "--upstream-ca", str(certs.ca), "--recordings", str(rec), "--run", "sse"
        )
        args += [
            "--upstream-header",
            "Authorization: Bearer $REAL_TOKEN",
            "--recordings-inventory",
            "finmcp65",
        ]
        params = StdioServerParameters(command=sys.executable, args=args, env={"REAL_TOKEN": TOKEN})

        async def record() -> list[dict[str, Any]]:
            async with Client(params, mode="legacy") as client:
                return await _call_all(client, plan)

        live = anyio.run(record)
        children.stop(real)
    with RecordingStore.open(rec) as store:
        assert store.count("finmcp65") == len(plan)
    strict = [
        sys.executable,
        "-m",
        "server",
        "--transport",
        "stdio",
        "--recordings",
        str(rec),
        "--miss",
        "strict",
    ]

    async def again() -> list[dict[str, Any]]:
        replay = StdioServerParameters(command=strict[0], args=[*strict[1:], "--latency", "none"])
        async with Client(replay, mode="legacy") as client:
            return await _call_all(client, plan)

    assert anyio.run(again) == live
    report = _audit_report(db, "sse", ["--against", str(rec)], capsys)
    assert f"audited {len(plan)} calls of run sse: {len(plan)} identical" in report
