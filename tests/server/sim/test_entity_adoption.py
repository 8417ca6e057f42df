"""Entity adoption on the official FinMCP-Bench files (issue 29 item 4; skipped without ../shared).

Recordings imported from the official sample files; every gold call with a JSON answer is perturbed
(page size, dates, window, name for code, one more code, another adopted entity) and simulated by the
world that adopted the benchmark's entities, behind the near-miss layer: the answers must have the
recorded answer's key structure (>= 95 %) and agree with it wherever both state a fact.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from finmcp.recordings.import_finmcp import import_finmcp
from finmcp.recordings.store import RecordingStore
from finmcp.server.sim.entity_harvest import Harvest, harvest_recordings, harvest_samples
from finmcp.server.sim.known_codes import codes_from_recordings
from finmcp.server.sim.near_miss import NearMissSimulator, RecordedAnswers
from finmcp.server.sim.perturb import disagreements, members_in_order, perturbations, same_shape
from finmcp.server.sim.simulator import Simulator
from finmcp.server.world import World
from finmcp.tool_specs.inventory import Inventory, load_inventory
from tests.support.finmcp_samples import FILES, sample_calls


def _store(tmp: Path, shared: Path, inventory: Inventory, files: tuple[str, ...]) -> RecordingStore:
    store = RecordingStore.open(tmp / "official.sqlite")
    schemas = {t.name: t.input_schema for t in inventory}
    for name in files:
        import_finmcp(store, shared / "finmcp" / name, inventory.name, set(inventory.names), schemas)
    return store


def _adopting(store: RecordingStore, inventory: Inventory, extra: Harvest | None = None) -> NearMissSimulator:
    kept: list[tuple[str, Any, Any]] = []
    harvest = harvest_recordings(store, extra, keep=kept)
    world = World(0, **harvest.world_arguments())
    return NearMissSimulator(Simulator(inventory, 0, world), RecordedAnswers(kept), harvest)


def _value(result: dict[str, Any]) -> Any:
    return None if result["isError"] else json.loads(result["content"][0]["text"])


@pytest.fixture(scope="module")
def official(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    inventory = load_inventory("qieman79")
    store = _store(tmp_path_factory.mktemp("official"), shared_dir, inventory, FILES)
    yield inventory, store, _adopting(store, inventory)
    store.close()


def _gold_calls(shared: Path, inventory: Inventory) -> list[tuple[str, dict[str, Any], Any]]:
    calls = []
    for name in FILES:
        for tool, arguments, text in sample_calls(shared / "finmcp" / name, set(inventory.names)):
            try:
                recorded = json.loads(text or "")
            except json.JSONDecodeError:
                continue  # a prose paraphrase has no key structure
            if isinstance(recorded, (dict, list)):
                calls.append((tool, arguments, recorded))
    return calls


def test_perturbed_gold_calls_get_the_recorded_shape_and_values(official, shared_dir):
    inventory, _, simulator = official
    harvest = harvest_recordings(official[1])
    seen: set[str] = set()
    kinds: Counter[str] = Counter()
    failures, disagreeing = [], []
    for tool, arguments, recorded in _gold_calls(shared_dir, inventory):
        spec = inventory.get(tool)
        assert spec is not None
        for kind, changed in perturbations(tool, arguments, harvest, spec.input_schema):
            key = json.dumps([tool, changed], sort_keys=True, ensure_ascii=False)
            if key in seen:
                continue
            seen.add(key)
            kinds[kind] += 1
            value = _value(simulator.simulate(tool, changed))
            if value is None or not same_shape(recorded, value):
                failures.append((kind, tool, changed, str(value)[:200]))
            elif kind == "page size" and not members_in_order(recorded, value):
                disagreeing.append((kind, tool, changed, ["members out of the recorded order"]))
            elif found := disagreements(recorded, value):
                disagreeing.append((kind, tool, changed, found[:3]))
    total = sum(kinds.values())
    print(
        f"perturbed official gold calls: {total - len(failures)}/{total} with the recorded shape; {dict(kinds)}"
    )
    assert total >= 40 and {"page size", "window", "name for code", "one more code", "another entity"} <= set(
        kinds
    )
    assert (total - len(failures)) / total >= 0.95, failures
    assert not disagreeing


def test_the_demo_measurement_before_and_after(shared_dir, tmp_path):
    """Recordings from train_data_demo.json, the calls of demo_infer.json (their answers held out)."""
    inventory = load_inventory("qieman79")
    store = _store(tmp_path, shared_dir, inventory, ("train_data_demo.json",))
    funds, strategies = codes_from_recordings(store)
    before = Simulator(
        inventory, 0, World(0, extra_fund_codes=sorted(funds), extra_strategy_codes=sorted(strategies))
    )
    references = harvest_samples([shared_dir / "finmcp" / "demo_infer.json"], outputs=False)
    after = _adopting(store, inventory, references)
    schemas = {t.name: t.input_schema for t in inventory}
    counts: Counter[str] = Counter()
    for tool, arguments, text in sample_calls(
        shared_dir / "finmcp" / "demo_infer.json", set(inventory.names)
    ):
        if store.get_response(inventory.name, tool, arguments, schemas[tool]) is not None:
            continue  # replayed
        try:
            recorded = json.loads(text or "")
        except json.JSONDecodeError:
            continue
        counts["simulated"] += 1
        counts["before"] += same_shape(recorded, _value(before.simulate(tool, arguments)))
        value = _value(after.simulate(tool, arguments))
        counts["after"] += same_shape(recorded, value)
        # values may differ: these answers were held out, so the world never saw a held-out name or NAV
    print(f"demo_infer calls simulated next to train_data_demo recordings: {dict(counts)}")
    assert counts["simulated"] == 23 and counts["before"] == 13 and counts["after"] == 20
    store.close()


def test_recorded_navs_and_names_hold_across_tools(official):
    """A fund's recorded NAV is its NAV on that day in the simulated history, whichever tool asks."""
    inventory, store, simulator = official
    harvest = harvest_recordings(store)
    world = simulator.simulator.world
    anchored = [(code, hints) for code, hints in sorted(harvest.funds.items()) if "nav" in hints]
    assert len(anchored) >= 20
    for code, hints in anchored:
        day = date.fromisoformat(hints["nav_date"])
        rows = world.nav_history(code, day, day)
        assert rows and rows[0]["nav"] == round(float(hints["nav"]), 4), code
        if "name" in hints:
            assert world.fund(code).name == hints["name"]
    for code, hints in harvest.strategies.items():
        if "name" in hints:
            assert world.strategy(code).name == hints["name"]
    nav = _value(
        simulator.simulate("BatchGetFundNavHistory", {"fundCodes": ["420102"], "dimensionType": "quarter"})
    )
    rows = {row["navDate"]: row["nav"] for row in nav[0]["data"]["data"]}
    assert rows["2025年08月15日"] == 1.2444  # 天弘永利债券B's NAV in a recorded strategy composition


def test_the_harvest_is_deterministic(official, shared_dir):
    _, store, _ = official
    first, second = harvest_recordings(store), harvest_recordings(store)
    assert first == second
    samples = [shared_dir / "finmcp" / name for name in FILES]
    assert harvest_samples(samples) == harvest_samples(samples)
    one, two = World(0, **first.world_arguments()), World(0, **second.world_arguments())
    assert one.fund_universe() == two.fund_universe() and one.strategy_codes() == two.strategy_codes()
