"""The tool service through the SDK's own client, in process, in both protocol eras."""

from __future__ import annotations

import json
import time

import anyio
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPError

from finmcp.recordings import RecordingStore
from finmcp.server.faults import parse_faults
from finmcp.server.latency import parse_latency
from finmcp.server.mcp_server import build_mcp_server
from finmcp.server.service import (
    ARGS_KEY,
    FAULT_KEY,
    PREPARED_KEPT,
    PROVENANCE_KEY,
    SOURCE_KEY,
    ToolService,
    paginate,
)
from finmcp.server.testing import SchemaSimulator
from finmcp.tool_specs.inventory import load_inventory
from tests.server.recorded_time import TIME, TIME_TEXT, record_time, text_result
from tests.support.polling import wait_for
from tests.support.sdk import first_text

MODES = ["auto", "legacy"]


@pytest.fixture(scope="module")
def finmcp65():
    return load_inventory("finmcp65")


@pytest.fixture
def store():
    with RecordingStore.open(":memory:") as opened:
        record_time(opened)
        opened.put_response(
            "qieman79",
            "GetFundDiagnosis",
            {"fundNameOrCode": "prose"},
            text_result("\n\n无数据"),
            "imported:unit.json",
            latency_ms=321.0,
        )
        yield opened


def service(inventory, store=None, **options):
    options.setdefault("latency", parse_latency("none"))
    if options.get("miss", "simulate") == "simulate":
        options.setdefault("simulate", SchemaSimulator(inventory).simulate)
    return ToolService(inventory, store=store, **options)


def run(coro_fn, *args):
    return anyio.run(coro_fn, *args)


@pytest.mark.parametrize("mode", MODES)
def test_replay_simulate_and_errors_through_the_sdk_client(finmcp65, store, mode):
    svc = service(finmcp65, store)

    async def main():
        async with Client(build_mcp_server(svc), mode=mode) as client:
            listed = await client.list_tools()
            assert [t.name for t in listed.tools] == [t.name for t in finmcp65.tools]
            first = listed.tools[0]
            assert first.output_schema is not None and first.annotations.read_only_hint is True
            assert "timeliness" in first.meta["io.finmcp/tags"]

            replay = await client.call_tool("GetCurrentTime", {})
            assert first_text(replay) == TIME_TEXT
            assert replay.structured_content == TIME
            assert replay.meta[SOURCE_KEY] == "replay"
            assert replay.meta[PROVENANCE_KEY] == "imported:unit.json"

            simulated = await client.call_tool("GetFundDiagnosis", {"fundNameOrCode": "000001"})
            assert not simulated.is_error and simulated.meta[SOURCE_KEY] == "simulated"
            assert json.loads(first_text(simulated))["arguments"] == {"fundNameOrCode": "000001"}

            bad = await client.call_tool("SearchFunds", {"sortOrder": "up", "bogus": 1})
            assert bad.is_error and bad.meta[SOURCE_KEY] == "invalid"
            text = first_text(bad)
            assert text.startswith("Invalid arguments for SearchFunds: ")
            assert "sortOrder: 'up' is not one of ['', '升序', '降序']" in text

            missing = await client.call_tool("GetFundDiagnosis", {})
            assert missing.is_error and "fundNameOrCode: required argument is missing" in first_text(missing)

            with pytest.raises(MCPError) as caught:
                await client.call_tool("NoSuchTool", {"a": 1})
            assert "NoSuchTool" in caught.value.message

    run(main)
    assert svc.stats.counts["replayed"] == 1 and svc.stats.counts["simulated"] == 1
    assert svc.stats.counts["invalid"] == 2 and svc.stats.counts["unknown_tool"] == 1


def test_type_errors_name_the_field(finmcp65):
    svc = service(finmcp65)
    assert finmcp65.get("SearchFunds").input_schema["properties"]["page"]["type"] == "number"
    result = anyio.run(svc.call, "SearchFunds", {"page": "seven", "sortOrder": 5})
    assert result["isError"]
    text = result["content"][0]["text"]
    assert "page: 'seven' is not of type 'number'" in text and "sortOrder: 5 is not of type 'string'" in text


@pytest.mark.parametrize("mode", MODES)
def test_strict_miss_says_so_and_names_the_arguments(finmcp65, store, mode):
    svc = service(finmcp65, store, miss="strict")

    async def main():
        async with Client(build_mcp_server(svc), mode=mode) as client:
            result = await client.call_tool("GetFundDiagnosis", {"fundNameOrCode": "000001"})
            assert result.is_error and result.meta[SOURCE_KEY] == "miss"
            text = first_text(result)
            assert text.startswith("No recording for these arguments: GetFundDiagnosis")
            assert '{"fundNameOrCode":"000001"}' in text and "--miss strict" in text
            assert result.meta[ARGS_KEY]

    run(main)


def test_simulate_policy_requires_a_simulator(finmcp65):
    with pytest.raises(ValueError, match="needs a simulator"):
        ToolService(finmcp65, miss="simulate")
    with pytest.raises(ValueError, match="miss policy"):
        ToolService(finmcp65, miss="maybe", simulate=lambda t, a: {})  # type: ignore[arg-type]  # the check under test


def test_structured_content_that_does_not_validate_is_not_sent(finmcp65, store):
    svc = service(finmcp65, store)
    result = anyio.run(svc.call, "GetFundDiagnosis", {"fundNameOrCode": "prose"})
    assert result["content"] == [{"type": "text", "text": "\n\n无数据"}]
    assert "structuredContent" not in result and result["_meta"][SOURCE_KEY] == "replay"

    async def main():
        async with Client(build_mcp_server(svc), mode="legacy") as client:
            with pytest.raises(RuntimeError, match="did not return structured content"):
                await client.call_tool("GetFundDiagnosis", {"fundNameOrCode": "prose"})

    run(main)  # the SDK client rejects text-only results of tools that declare an outputSchema


def test_without_output_schemas_prose_replays_reach_sdk_clients(finmcp65, store):
    svc = service(finmcp65, store, output_schemas=False)

    async def main():
        async with Client(build_mcp_server(svc), mode="auto") as client:
            listed = await client.list_tools()
            assert all(t.output_schema is None for t in listed.tools)
            result = await client.call_tool("GetFundDiagnosis", {"fundNameOrCode": "prose"})
            assert first_text(result) == "\n\n无数据"
            time_result = await client.call_tool("GetCurrentTime", {})
            assert time_result.structured_content is None and first_text(time_result) == TIME_TEXT

    run(main)


def test_broken_simulator_output_becomes_an_error_result(finmcp65):
    def broken(tool, arguments):
        raise RuntimeError("world not loaded")

    svc = service(finmcp65, simulate=broken)
    result = anyio.run(svc.call, "GetFundDiagnosis", {"fundNameOrCode": "1"})
    assert (
        result["isError"]
        and "Simulator failed for GetFundDiagnosis: world not loaded" in result["content"][0]["text"]
    )


@pytest.mark.parametrize("mode", MODES)
def test_pagination_walks_every_tool_once(mode):
    inventory = load_inventory("fintool760")
    svc = service(inventory, page_size=100)

    async def main():
        async with Client(build_mcp_server(svc), mode=mode) as client:
            names, cursor = [], None
            for _ in range(20):
                page = await client.list_tools(cursor=cursor)
                assert len(page.tools) <= 100
                names += [t.name for t in page.tools]
                cursor = page.next_cursor
                if cursor is None:
                    break
            assert names == [t.name for t in inventory.tools]
            with pytest.raises(MCPError, match="Invalid cursor"):
                await client.list_tools(cursor="bogus")

    run(main)


def test_pages_by_bytes_stay_within_the_budget():
    tools = [dict(wire) for wire in load_inventory("fintool760").mcp_tools]
    budget = 200_000
    pages = paginate(tools, page_bytes=budget)
    assert [t for page in pages for t in page] == tools and len(pages) > 1
    assert all(len(json.dumps(page)) <= budget for page in pages)
    big = {"name": "big", "description": "x" * (budget + 1)}
    assert paginate([tools[0], big, tools[1]], page_bytes=budget) == [[tools[0]], [big], [tools[1]]]
    assert paginate([], page_bytes=budget) == [[]] and paginate(tools) == [tools]
    assert [len(p) for p in paginate(tools, page_size=300)] == [300, 300, 160]
    with pytest.raises(ValueError, match="not both"):
        service(load_inventory("finmcp65"), page_size=10, page_bytes=budget)


def test_recording_lookup_order_and_cache(finmcp65, store):
    svc = service(finmcp65, store, recording_inventories=["finmcp65"], miss="strict")
    assert anyio.run(svc.call, "GetCurrentTime", {})["_meta"][SOURCE_KEY] == "miss"
    svc = service(finmcp65, store, miss="strict")
    assert svc.recording_inventories == ("finmcp65", "qieman79")
    first = anyio.run(svc.call, "GetCurrentTime", {})
    second = anyio.run(svc.call, "GetCurrentTime", {})
    assert first == second and first is not second


class DelaySpy:
    """A latency model that notes each delay it hands out."""

    def __init__(self, model) -> None:
        self.model = model
        self.delays: list[float] = []

    def delay_ms(self, *args) -> float:
        delay = self.model.delay_ms(*args)
        self.delays.append(delay)
        return delay

    def __getattr__(self, name):
        return getattr(self.model, name)


def test_recorded_latency_is_used(finmcp65, store):
    spy = DelaySpy(parse_latency("recorded", fallback_ms=5))
    svc = service(finmcp65, store, latency=spy)
    t0 = time.perf_counter()
    anyio.run(svc.call, "GetFundDiagnosis", {"fundNameOrCode": "prose"})
    assert time.perf_counter() - t0 >= 0.3  # the recorded 321 ms were really waited
    anyio.run(svc.call, "GetCurrentTime", {})  # recorded without a latency: the fallback
    assert spy.delays == [321.0, 5.0]


def test_faults_are_seeded_and_shaped(finmcp65, store):
    rules = parse_faults(["GetFund*:error=0.3,malformed=0.2,empty=0.2;Get*:rpc_error=0.5"], seed=7)

    def outcomes(seed_rules):
        svc = service(finmcp65, store, faults=seed_rules)
        seen = []
        for i in range(40):
            try:
                result = anyio.run(svc.call, "GetFundDiagnosis", {"fundNameOrCode": str(i % 5)})
                seen.append(result["_meta"].get(FAULT_KEY, result["_meta"][SOURCE_KEY]))
            except MCPError:
                seen.append("rpc")
        return seen

    first, again = outcomes(rules), outcomes(rules)
    assert first == again
    assert {"error", "malformed", "empty", "simulated"} <= set(first) and "rpc" not in first
    assert outcomes(parse_faults(["GetFund*:error=0.3,malformed=0.2,empty=0.2"], seed=8)) != first

    svc = service(finmcp65, store, faults=rules)
    rpc = 0
    for _ in range(20):
        try:
            anyio.run(svc.call, "GetCurrentTime", {})
        except MCPError as exc:
            rpc += 1
            assert "GetCurrentTime" in exc.message and "injected" in exc.message
    assert 0 < rpc < 20


def test_malformed_and_empty_faults(finmcp65, store):
    svc = service(finmcp65, store, faults=parse_faults(["GetCurrentTime:malformed=1"]))
    result = anyio.run(svc.call, "GetCurrentTime", {})
    assert result["content"][0]["text"] == TIME_TEXT[: len(TIME_TEXT) // 2]
    assert "structuredContent" not in result and result["_meta"][FAULT_KEY] == "malformed"
    svc = service(finmcp65, store, faults=parse_faults(["*:empty=1"]))
    assert anyio.run(svc.call, "GetCurrentTime", {})["content"] == []


@pytest.mark.parametrize("mode", MODES)
def test_timeout_fault_reports_progress_and_honours_cancellation(finmcp65, mode):
    svc = service(finmcp65, faults=parse_faults(["GetCurrentTime:timeout=1,timeout_ms=1200"]))
    updates = []

    async def on_progress(progress, total, message):
        updates.append((progress, total, message))

    async def main():
        async with Client(build_mcp_server(svc), mode=mode) as client:
            result = await client.call_tool("GetCurrentTime", {}, progress_callback=on_progress)
            assert result.is_error and "did not answer within 1200 ms" in first_text(result)
            assert result.meta[FAULT_KEY] == "timeout"
            with anyio.move_on_after(0.3):
                await client.call_tool("GetCurrentTime", {})
            await anyio.to_thread.run_sync(
                lambda: wait_for(lambda: svc.stats.counts["cancelled"], what="the service's cancelled count")
            )

    run(main)
    assert (
        len(updates) >= 3 and updates[-1][0] == pytest.approx(1200) and updates[-1][1] == pytest.approx(1200)
    )
    assert "GetCurrentTime" in updates[0][2]
    assert svc.stats.counts["cancelled"] == 1


def test_a_long_run_of_distinct_calls_holds_bounded_memos(finmcp65, store):
    """Misses are not held, validated arguments are remembered up to PREPARED_KEPT, replays stay cached."""
    svc = service(finmcp65, store)

    async def calls():
        for i in range(PREPARED_KEPT + 300):
            await svc.call("GetFundDiagnosis", {"fundNameOrCode": f"F{i}"})
        return await svc.call("GetFundDiagnosis", {"fundNameOrCode": "prose"})

    replayed = run(calls)
    assert replayed["_meta"][SOURCE_KEY] == "replay"
    assert len(svc._prepared_memo) == PREPARED_KEPT
    assert list(svc._cache) == [("GetFundDiagnosis", replayed["_meta"][ARGS_KEY])]  # the replayed answer only
