"""No loss under load: 16 concurrent SDK clients × 200 calls through the proxy ⇒ 3,200 matching rows."""

from __future__ import annotations

import json

import anyio
import pytest
from mcp.client import Client

from proxy.testing import ProxyProcess
from recordings import RecordingStore
from server.testing import ServerProcess, minimal_instance
from tool_specs.inventory import load_inventory

TOOL = "GetFundDiagnosis"
CODES = [f"{i:06d}" for i in range(1, 33)]
CLIENTS, CALLS = 16, 200


def result_for(code):
    spec = load_inventory("finmcp65").get(TOOL)
    structured = minimal_instance(spec.output_schema) | {"fundCode": code}
    text = json.dumps(structured, ensure_ascii=False, indent=2)
    return {"content": [{"type": "text", "text": text}], "structuredContent": structured, "isError": False}


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    path = tmp_path_factory.mktemp("rec") / "rec.sqlite"
    with RecordingStore.open(path) as store:
        for code in CODES:
            store.put_response("qieman79", TOOL, {"fundNameOrCode": code}, result_for(code), "imported:load")
    return path


def test_sixteen_clients_two_hundred_calls_each(recordings, tmp_path):
    db = tmp_path / "runs.sqlite"
    seen: dict[str, list[tuple[str, str]]] = {}
    server_args = ["--miss", "strict", "--recordings", str(recordings), "--latency", "none"]
    with (
        ServerProcess(server_args) as server,
        ProxyProcess(["--upstream", server.url, "--db", str(db)]) as proxy,
    ):

        async def client_run(index):
            sample = f"c{index:02d}"
            got = seen.setdefault(sample, [])
            async with Client(proxy.tagged("load", sample, 0), mode="auto") as client:
                for j in range(CALLS):
                    code = CODES[(index * 7 + j) % len(CODES)]
                    result = await client.call_tool(TOOL, {"fundNameOrCode": code})
                    got.append((code, result.content[0].text))

        async def main():
            with anyio.fail_after(80):
                async with anyio.create_task_group() as tg:
                    for index in range(CLIENTS):
                        tg.start_soon(client_run, index)

        anyio.run(main)
    with RecordingStore.open(db) as store:
        calls = store.calls("load")
    assert len(calls) == CLIENTS * CALLS == 3200
    assert all(c["status"] == "ok" for c in calls)
    by_sample: dict[str, list[dict]] = {}
    for call in calls:
        by_sample.setdefault(call["sample_id"], []).append(call)
    assert sorted(by_sample) == sorted(seen)
    for sample, rows in by_sample.items():
        rows.sort(key=lambda c: c["seq"])
        logged = [(r["arguments"]["fundNameOrCode"], r["result"]["content"][0]["text"]) for r in rows]
        assert logged == seen[sample]  # every row matches the response its client received
        assert all(f'"fundCode": "{code}"' in text for code, text in logged)
    assert len({c["seq"] for c in calls}) == 3200
