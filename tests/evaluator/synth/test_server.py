"""Synthesis and replay against real processes: finmcp-server (and finmcp-proxy in front of it)."""

from __future__ import annotations

import json

import pytest

from finmcp.evaluator.benchmarks import install_recordings, load_benchmark, load_records
from finmcp.evaluator.inputs.trace_db import load_predictions_db
from finmcp.evaluator.synth.build import Builder, Quotas
from finmcp.evaluator.synth.execute_refs import execute_references
from finmcp.evaluator.synth.executor import McpExecutor
from finmcp.proxy.testing import ProxyProcess
from finmcp.recordings.canonical import canonical_arguments
from finmcp.server.testing import ServerProcess
from finmcp.tool_specs.inventory import load_inventory

SLICE_IDS = [f"sim-multi-{n:04d}" for n in range(1, 249, 25)] + [
    f"sim-turn-{n:04d}" for n in range(1, 219, 40)
]


@pytest.fixture(scope="module")
def recordings_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("rec") / "sim.sqlite"
    install_recordings(path).close()
    return path


def _strict_server(recordings: object) -> list[str]:
    """finmcp-server arguments: finmcp65 replaying ``recordings`` only (a miss is an error), no latency."""
    return [
        "--inventory",
        "finmcp65",
        "--recordings",
        str(recordings),
        "--miss",
        "strict",
        "--latency",
        "none",
    ]


def _text(result):
    return "".join(b.get("text", "") for b in result["content"])


@pytest.mark.slow  # replays the whole benchmark through a server process
def test_every_reference_replays_through_the_server_in_strict_mode(recordings_db):
    refs = load_benchmark("finmcp-sim")
    args = _strict_server(recordings_db)
    with ServerProcess(args) as server:
        results = execute_references(refs, McpExecutor(server.url))
        health = server.health()
    failures = [
        (ref.id, call.tool, _text(res)[:120])
        for ref in refs
        for turn, turn_res in zip(ref.turns, results[ref.id], strict=True)
        for group, group_res in zip(turn.calls, turn_res, strict=True)
        for call, res in zip(group, group_res, strict=True)
        if res["isError"]
    ]
    assert not failures
    counters = health["calls"]["finmcp65"]
    assert counters.get("miss", 0) == 0 and counters.get("replayed", 0) == sum(r.call_count for r in refs)


@pytest.mark.slow
def test_synthesis_through_a_real_server_matches_in_process_synthesis():
    with ServerProcess(["--inventory", "finmcp65", "--latency", "none", "--seed", "0"]) as server:
        remote = Builder(0, executor=McpExecutor(server.url))
        jobs = [j for j in remote.plan(Quotas()) if j[2] in set(SLICE_IDS)]
        over_mcp = remote.run(jobs, progress=False)
    shipped = {r["id"]: r for r in load_records("finmcp-sim")}
    assert len(over_mcp) == len(SLICE_IDS)
    for item in over_mcp:
        assert item.record == shipped[item.record["id"]]


@pytest.mark.slow
def test_oracle_through_proxy_logs_a_trace_equal_to_the_references(recordings_db, tmp_path):
    """The oracle executed through finmcp-proxy logs groups equal to the references'."""

    inventory = load_inventory("finmcp65")
    refs = [r for r in load_benchmark("finmcp-sim") if r.id in set(SLICE_IDS)]
    db = tmp_path / "runs.sqlite"
    args = _strict_server(recordings_db)
    with (
        ServerProcess(args) as server,
        ProxyProcess(["--upstream", server.url, "--db", str(db)]) as proxy,
    ):
        template = proxy.base + "/r/{run}/s/{sample}/t/{turn}/mcp"
        execute_references(refs, McpExecutor(proxy.url, "oracle", template))
    preds = load_predictions_db(db, "oracle").first_trial()

    def groups(turns):
        out = []
        for turn in turns:
            for group in turn:
                calls = []
                for c in group:
                    canon = canonical_arguments(c.arguments, inventory.get(c.tool).input_schema)
                    calls.append(json.dumps([c.tool, canon], sort_keys=True, ensure_ascii=False))
                out.append(sorted(calls))
        return out

    for ref in refs:
        assert groups(preds[ref.id].turns) == groups([t.calls for t in ref.turns]), ref.id
