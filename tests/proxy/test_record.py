"""Record → serve the recordings strictly (replay) → audit the run against them; inspection and exports."""

from __future__ import annotations

import json

import anyio
import httpx2
import pytest
from mcp.client import Client

from finmcp.evaluator.inputs.predictions import load_predictions_file
from finmcp.proxy.cli import main as proxy_main
from finmcp.recordings import RecordingStore, SqliteTraceStore
from finmcp.server.sim.example_args import example_arguments
from finmcp.server.world import World
from finmcp.tool_specs.inventory import load_inventory
from tests.support.polling import wait_for
from tests.support.processes import Children, health
from tests.support.raw_upstream import RawUpstream
from tests.support.rpc import modern_headers, tool_call
from tests.support.traces import wait_calls

TOOLS = ["GetCurrentTime", "SearchFunds", "GetFundDiagnosis", "GetFundsBasicInfo", "GetStrategyDetail"]
GAP_MS = 250  # --group-gap-ms: calls of a group stay together on a loaded machine
THINK_S = 3 * GAP_MS / 1000  # the pause between groups, well beyond the gap


def plan():
    """(tool, arguments) groups: one sequential call, then a parallel group, then another call."""
    inventory = load_inventory("finmcp65")
    world = World(seed=0)
    names = [t for t in TOOLS if inventory.get(t) is not None]
    names += [t.name for t in inventory.tools if t.name not in names][: 5 - len(names)]
    calls = [(name, example_arguments(inventory.get(name), world)) for name in names]
    return [calls[:1], calls[1:4], calls[4:]]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("record")
    db, rec = tmp / "runs.sqlite", tmp / "rec.sqlite"
    groups = plan()
    with Children() as children:  # stopped (and checked) before the tests read the files
        # the upstream's latency keeps a parallel group's calls overlapping, however slowly the client
        # sends them on a loaded machine (an answer out before the next call arrives starts a new group)
        server = children.server(["--latency", "fixed:50", "--seed", "0"])
        proxy_args = ["--upstream", server.url, "--db", str(db), "--recordings", str(rec)]
        proxy = children.proxy([*proxy_args, "--group-gap-ms", str(GAP_MS)])

        async def main():
            async with Client(proxy.tagged("rec", "s1", 0), mode="auto") as client:
                await client.list_tools()  # the proxy learns input schemas (defaults) from the listing
                for group in groups:
                    await anyio.sleep(THINK_S)  # think time between groups
                    async with anyio.create_task_group() as tg:
                        for tool, arguments in group:
                            tg.start_soon(client.call_tool, tool, arguments)
            async with Client(proxy.tagged("rec", "s2", 1), mode="legacy") as client:
                await client.call_tool("GetCurrentTime", {})

        anyio.run(main)
    return db, rec, groups


@pytest.mark.slow
def test_record_then_serve_strictly_then_audit_identical(recorded, server_process, capsys):
    db, rec, groups = recorded
    with SqliteTraceStore.open(db) as store:
        calls = store.calls("rec")
    ok = [c for c in calls if c["status"] == "ok"]
    assert len(calls) == sum(len(g) for g in groups) + 1 and ok
    with RecordingStore.open(rec) as store:
        recorded_rows = list(store.iter_responses())
    assert len(recorded_rows) == len({(c["tool"], json.dumps(c["arguments"], sort_keys=True)) for c in ok})
    assert all(r["provenance"].startswith("recorded:http://127.0.0.1:") for r in recorded_rows)
    replayer = server_process(["--recordings", str(rec), "--miss", "strict", "--latency", "none"])
    code = proxy_main(["audit", "--db", str(db), "--run", "rec", "--against", replayer.url])
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"{len(calls)} identical" in out
    assert health(replayer)["calls"]["finmcp65"].get("miss", 0) == 0


def test_audit_reports_differences_with_a_diff(recorded, server_process, capsys):
    db, _rec, _groups = recorded
    other = server_process(["--latency", "none", "--seed", "7"])
    code = proxy_main(
        ["audit", "--db", str(db), "--run", "rec", "--sample", "s1", "--against", other.url, "--json"]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    assert report["counts"].get("different", 0) >= 1
    different = next(c for c in report["calls"] if c["verdict"] == "different")
    assert different["diff"] and different["diff"][0]["path"].startswith(("content", "structuredContent"))


def test_sessions_show_and_exports(recorded, tmp_path, capsys):
    db, _rec, groups = recorded
    assert proxy_main(["sessions", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "run rec:" in out and "stateless" in out and "handshake" in out
    assert proxy_main(["show", "--db", str(db), "--run", "rec", "--sample", "s1"]) == 0
    out = capsys.readouterr().out
    assert "group 1 (3 calls" in out and "turn 0" in out
    expected = [[name for name, _ in group] for group in groups]
    for fmt, name in (("jsonl", "preds.jsonl"), ("finmcp", "preds.json"), ("fintoolbench", "ftb.jsonl")):
        path = tmp_path / name
        assert (
            proxy_main(["export", "--db", str(db), "--run", "rec", "--format", fmt, "--output", str(path)])
            == 0
        )
        pointer = "finmcp-eval export --format finmcp --bench" in capsys.readouterr().err
        assert pointer == (fmt == "finmcp")  # predictions only: the official file is the evaluator's
        preds = load_predictions_file(path, run_id="rec" if fmt == "jsonl" else None)
        first = preds.first_trial()
        s1 = first["s1"]
        groups_seen = [sorted(c.tool for c in g) for turn in s1.turns for g in turn]
        assert groups_seen == [sorted(g) for g in expected], fmt
    assert proxy_main(["export", "--db", str(db), "--run", "nope", "--format", "jsonl"]) == 1


@pytest.mark.slow
def test_recorded_credentials_are_redacted_and_match_any_credential(server_process, tmp_path):
    secret, other = "sk-live-3f9a77c1d2", "sk-live-0000aaaa11"
    db, rec = tmp_path / "runs.sqlite", tmp_path / "rec.sqlite"
    arguments = {"amount": "100", "base": "USD", "to": "CNY", "api_key": secret}
    server_args = ["--inventory", "fintool760", "--latency", "none", "--seed", "0"]
    with Children() as children:  # stopped (and checked) before the files are searched
        server = children.server(server_args)
        proxy = children.proxy(["--upstream", server.url, "--db", str(db), "--recordings", str(rec),
                                "--recordings-inventory", "fintool760"])  # fmt: skip

        async def record():
            async with Client(proxy.tagged("cred", "s1", 0), mode="auto") as client:
                return await client.call_tool("currency_convert", arguments)

        recorded = anyio.run(record)
    assert not recorded.is_error
    for path in (rec, db):  # neither the recording nor the trace holds the credential
        raw = b"".join(p.read_bytes() for p in tmp_path.glob(path.name + "*"))
        assert secret.encode() not in raw
    with RecordingStore.open(rec) as store:
        (row,) = list(store.iter_responses("fintool760"))
    assert row["arguments"]["api_key"] == "[REDACTED]" and row["arguments"]["amount"] == "100"
    strict = ["--inventory", "fintool760", "--latency", "none", "--miss", "strict", "--recordings", str(rec)]
    replaying = server_process(strict)

    async def replay(credential):
        async with Client(replaying.url, mode="auto") as client:
            return await client.call_tool("currency_convert", {**arguments, "api_key": credential})

    again = anyio.run(replay, other)  # another key: the same recording answers
    assert not again.is_error
    assert again.content[0].text == recorded.content[0].text


def test_an_answer_that_cannot_be_keyed_is_skipped_not_a_write_failure(proxy_process, tmp_path):
    """Arguments holding a lone surrogate (JSON "\\ud800") have no canonical key: no recording, the call row stays."""
    db, rec = tmp_path / "runs.sqlite", tmp_path / "rec.sqlite"
    with RawUpstream(answers=10) as upstream:  # answers anything, so the odd call gets a result to record
        proxy = proxy_process(["--upstream", upstream.url, "--db", str(db), "--recordings", str(rec)])
        url = proxy.tagged("rec-lone", "s", 0)
        with httpx2.Client(timeout=10) as http:
            for rid, arguments in ((1, {"fundNameOrCode": "\ud800"}), (2, {"fundNameOrCode": "000001"})):
                message = tool_call("GetFundDiagnosis", arguments, rid)
                response = http.post(url, content=json.dumps(message), headers=modern_headers())
                assert response.json()["result"]["content"][0]["text"] == f"answer to {rid}"
        assert health(proxy)["write_failures"] == 0  # (also checked when the proxy stops)
        stderr = wait_for(proxy.stderr_text, lambda text: "not recorded" in text, what="the warning")
    assert "lone surrogate" in stderr
    calls = wait_calls(db, "rec-lone", 2, settled=True)
    assert [c["arguments"]["fundNameOrCode"] for c in calls] == ["\ud800", "000001"]

    def recorded() -> list:
        with RecordingStore.open(rec) as store:
            return [r["arguments"] for r in store.iter_responses()]

    assert wait_for(recorded, what="the recording") == [{"fundNameOrCode": "000001"}]  # written behind


@pytest.mark.parametrize("command", ["sessions", "show", "export"])
def test_inspecting_a_missing_store_says_so_like_every_reader(command, tmp_path, capsys):
    missing = tmp_path / "none.sqlite"
    argv = [command, "--db", str(missing)] + ([] if command == "sessions" else ["--run", "r"])
    assert proxy_main(argv) == 2
    assert f"finmcp-proxy {command}: trace store not found: {missing}" in capsys.readouterr().err
    assert not missing.exists()
