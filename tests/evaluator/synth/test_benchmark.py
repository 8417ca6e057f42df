"""The shipped finmcp-sim benchmark: counts, schemas, recordings (strict replay), dependency order."""

from __future__ import annotations

import json
from collections import Counter

import jsonschema
import pytest

from finmcp.evaluator.benchmarks import install_recordings, load_benchmark, load_records, manifest
from finmcp.evaluator.inputs.model import difficulty_from_count
from finmcp.evaluator.synth.extract import extract
from finmcp.tool_specs.inventory import load_inventory
from finmcp.tool_specs.taxonomy import load_taxonomy

INVENTORY = load_inventory("finmcp65")


@pytest.fixture(scope="module")
def records():
    return load_records("finmcp-sim")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    with install_recordings(tmp_path_factory.mktemp("rec") / "sim.sqlite") as opened:
        yield opened


def _calls(record):
    for ti, turn in enumerate(record["turns"]):
        for gi, group in enumerate(turn["calls"]):
            for call in group:
                yield ti, gi, call


def test_counts_types_scenarios_and_difficulty(records):
    refs = load_benchmark("finmcp-sim")
    assert [r.id for r in refs] == sorted(r.id for r in refs)
    assert Counter(r.type for r in refs) == {"single_tool": 145, "multi_tool": 249, "multi_turn": 219}
    parallel = [
        r for r in refs if r.type == "multi_tool" and any(len(g) > 1 for t in r.turns for g in t.calls)
    ]
    assert len(parallel) >= 70
    taxonomy = load_taxonomy()
    pairs = {(r.scenario, r.sub_scenario) for r in refs}
    expected = {(s.id, sub) for s in taxonomy.scenarios.values() for sub in s.sub_scenarios}
    assert pairs == expected  # 10 scenarios, 33 sub-scenarios, all covered
    for ref in refs:
        assert ref.difficulty == difficulty_from_count(ref.call_count), ref.id
        if ref.type == "single_tool":
            assert ref.call_count == 1 and len(ref.turns) == 1
        if ref.type == "multi_tool":
            assert ref.call_count >= 2 and len(ref.turns) == 1
    for record in records:
        if record["type"] == "multi_turn":
            assert 2 <= len(record["turns"]) <= 8
            assert record["turns"][-1]["user"] == "###STOP###" and record["turns"][-1]["calls"] == []
        else:
            assert "\n当前用户id是" in record["turns"][0]["user"]
        assert all(t["user_en"] for t in record["turns"])


def test_every_call_validates_against_its_schema(records):
    validators = {t.name: jsonschema.Draft202012Validator(t.input_schema) for t in INVENTORY}
    bad = []
    for record in records:
        for _, _, call in _calls(record):
            errors = list(validators[call["tool"]].iter_errors(call["arguments"]))
            if errors:
                bad.append((record["id"], call["tool"], errors[0].message))
    assert not bad


def test_every_call_replays_from_the_shipped_recordings(records, store):
    assert store.count() == sum(1 for _ in store.iter_responses())
    missing = []
    for record in records:
        for _, _, call in _calls(record):
            spec = INVENTORY.get(call["tool"])
            got = store.get_response("finmcp65", call["tool"], call["arguments"], spec.input_schema)
            if got is None or got["isError"]:
                missing.append((record["id"], call["tool"]))
    assert not missing


def test_chain_dependencies_are_respected_in_each_reference(records, store):
    checked = 0
    for record in records:
        by_step: dict[int, list[tuple[int, dict]]] = {}
        order = 0
        for turn in record["turns"]:
            for group in turn["calls"]:
                for call in group:
                    by_step.setdefault(call["step"], []).append((order, call))
                order += 1
        for src, dst, entity in record["chain"]["edges"]:
            assert max(o for o, _ in by_step[src]) < min(o for o, _ in by_step[dst]), record["id"]
            produced = set()
            for _, call in by_step[src]:
                spec = INVENTORY.get(call["tool"])
                result = store.get_response("finmcp65", call["tool"], call["arguments"], spec.input_schema)
                produced |= {str(v) for v in extract(result).values(entity)}
            for _, call in by_step[dst]:
                text = json.dumps(call["arguments"], ensure_ascii=False)
                if entity == "asset_allocation":  # class names become weight keys
                    assert produced, record["id"]
                else:
                    assert any(v in text for v in produced), (record["id"], src, dst, entity)
            checked += 1
    assert checked > 300


def test_manifest_matches_the_shipped_files():
    import hashlib

    from finmcp.evaluator.benchmarks import data_path

    info = manifest("finmcp-sim")
    for kind, name in (
        ("references", "finmcp_sim.jsonl.gz"),
        ("recordings", "finmcp_sim.recordings.jsonl.gz"),
    ):
        data = data_path("finmcp-sim", kind).read_bytes()
        assert hashlib.sha256(data).hexdigest() == info["files"][name]["sha256"]
    total = sum(data_path("finmcp-sim", k).stat().st_size for k in ("references", "recordings"))
    assert total < 5 * 1024 * 1024
