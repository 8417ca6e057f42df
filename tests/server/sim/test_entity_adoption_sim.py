"""Entity adoption on finmcp-sim's embedded benchmark (no ../shared needed): the behaviour pinned on a
fresh machine, and once end to end through a real finmcp-server and a real MCP client."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from itertools import islice
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client

from finmcp.recordings.jsonl import import_jsonl
from finmcp.recordings.store import RecordingStore
from finmcp.server.service import SOURCE_KEY
from finmcp.server.sim.entity_harvest import Harvest, harvest_recordings, harvest_samples
from finmcp.server.sim.near_miss import NearMissSimulator, RecordedAnswers
from finmcp.server.sim.perturb import disagreements, members_in_order, perturbations, same_shape
from finmcp.server.sim.simulator import Simulator
from finmcp.server.world import World
from finmcp.tool_specs.inventory import load_inventory
from tests.support.sdk import first_text

BENCHMARKS = Path(__file__).resolve().parents[3] / "evaluator" / "benchmarks"
SAMPLES = BENCHMARKS / "finmcp_sim.jsonl.gz"
RECORDINGS = BENCHMARKS / "finmcp_sim.recordings.jsonl.gz"
N_SAMPLES = 40  # the first samples of the benchmark: ~150 near misses, a few seconds


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("sim") / "finmcp_sim.sqlite"
    store = RecordingStore.open(path)
    with gzip.open(RECORDINGS, "rt", encoding="utf-8") as handle:
        import_jsonl(store, handle)
    kept: list[tuple[str, Any, Any]] = []
    harvest = harvest_samples([SAMPLES], harvest_recordings(store, keep=kept))
    inventory = load_inventory("finmcp65")
    simulator = NearMissSimulator(
        Simulator(inventory, 0, World(0, **harvest.world_arguments())), RecordedAnswers(kept), harvest
    )
    yield path, store, harvest, simulator
    store.close()


def _near_misses(store: RecordingStore, harvest: Harvest) -> list[tuple[str, str, dict[str, Any], Any]]:
    """(kind, tool, arguments, recorded answer) of the perturbed gold calls of the first samples."""
    inventory = load_inventory("finmcp65")
    out, seen = [], set()
    with gzip.open(SAMPLES, "rt", encoding="utf-8") as handle:
        samples = [json.loads(line) for _, line in zip(range(N_SAMPLES), handle, strict=False)]
    for sample in samples:
        for turn in sample["turns"]:
            for call in (c for group in turn["calls"] for c in group):
                spec = inventory.get(call["tool"])
                assert spec is not None
                recorded = store.get_response(inventory.name, spec.name, call["arguments"], spec.input_schema)
                if recorded is None or recorded["isError"]:
                    continue
                value = json.loads(recorded["content"][0]["text"])
                for kind, changed in perturbations(spec.name, call["arguments"], harvest, spec.input_schema):
                    key = json.dumps([spec.name, changed], sort_keys=True, ensure_ascii=False)
                    if key not in seen:
                        seen.add(key)
                        out.append((kind, spec.name, changed, value))
    return out


def test_the_adopted_world_still_answers_the_recorded_calls_as_recorded(embedded):
    """Adoption leaves the benchmark's own entities as the world drew them (its recordings were baked
    from the world, questions' amounts are not taken for fund codes): simulating the recorded calls
    gives the recorded texts, byte for byte."""
    _, store, harvest, simulator = embedded
    plain = simulator.simulator
    world = plain.world
    assert len(world.fund_universe()) == len(World(0).fund_universe())  # nothing new: all the world's own
    for record in islice(store.iter_responses("finmcp65"), 0, None, 8):  # every 8th of the 1,779, all tools
        result = plain.simulate(record["tool"], record["arguments"])
        assert result["content"][0]["text"] == record["result"]["content"][0]["text"], record["tool"]
    assert len(harvest.funds) > 1000 and len(harvest.strategies) > 100


def test_perturbed_gold_calls_of_the_embedded_benchmark(embedded):
    _, store, harvest, simulator = embedded
    kinds: Counter[str] = Counter()
    failures, disagreeing = [], []
    for kind, tool, arguments, recorded in _near_misses(store, harvest):
        kinds[kind] += 1
        result = simulator.simulate(tool, arguments)
        value = None if result["isError"] else json.loads(result["content"][0]["text"])
        if value is None or not same_shape(recorded, value):
            failures.append((kind, tool, arguments, first_text_of(result)))
        elif kind == "page size" and not members_in_order(recorded, value):
            disagreeing.append((kind, tool, arguments, ["members out of the recorded order"]))
        elif found := disagreements(recorded, value):
            disagreeing.append((kind, tool, arguments, found[:3]))
    total = sum(kinds.values())
    assert total >= 100 and {"page size", "dates", "one more code", "another entity", "name for code"} <= set(
        kinds
    )
    assert (total - len(failures)) / total >= 0.95, failures
    assert not disagreeing


def first_text_of(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])[:200]


def test_a_near_miss_end_to_end(embedded, server_process):
    """A real server over loopback, a real MCP client: one more code in a recorded batch and a fund's
    name for its code get the answers the in-process near-miss simulator gives (same seed)."""
    path, store, harvest, simulator = embedded
    calls = {}
    for kind, tool, arguments, recorded in _near_misses(store, harvest):
        if kind in ("one more code", "name for code") and kind not in calls:
            calls[kind] = (tool, arguments, recorded)
    assert set(calls) == {"one more code", "name for code"}
    server = server_process(["--inventory", "finmcp65", "--recordings", str(path), "--latency", "none"])

    async def main() -> None:
        async with Client(server.endpoint("/finmcp65/mcp")) as client:
            for tool, arguments, recorded in calls.values():
                result = await client.call_tool(tool, arguments)
                assert not result.is_error and result.meta[SOURCE_KEY] == "simulated"
                value = json.loads(first_text(result))
                assert value == json.loads(simulator.simulate(tool, arguments)["content"][0]["text"])
                assert same_shape(recorded, value) and not disagreements(recorded, value)

    anyio.run(main)


def test_entities_files_adopt_and_bad_ones_are_refused(tmp_path):
    from finmcp.server.serve import ServeError, _world

    world, near_misses = _world(0, None, (SAMPLES,))
    assert near_misses is None  # without recordings there is nothing to agree with
    harvest = harvest_samples([SAMPLES], outputs=False)
    assert all(world.fund_stub(code) is not None for code in harvest.funds)
    assert all(world.strategy(code) is not None for code in harvest.strategies)
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a list"}', encoding="utf-8")
    for path, needle in (
        (bad, "expected a JSON list of samples"),
        (tmp_path / "absent.json", "No such file"),
    ):
        with pytest.raises(ServeError, match=f"--entities: {path}: cannot read benchmark samples") as caught:
            _world(0, None, (path,))
        assert needle in str(caught.value)
