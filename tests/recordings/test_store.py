"""RecordingStore: recorded responses (put/get, conflicts, validation, iteration, threads)."""

from __future__ import annotations

import threading

import pytest

from finmcp.recordings import RECORDING_META_KEY, RecordingStore
from finmcp.recordings.errors import InvalidValueError, RecordingsError

SCHEMA = {
    "type": "object",
    "properties": {"fundCodes": {"type": "array"}, "pageSize": {"type": "integer", "default": 10}},
}


def result(text: str, structured=None, is_error=False):
    out = {"content": [{"type": "text", "text": text}], "isError": is_error}
    if structured is not None:
        out["structuredContent"] = structured
    return out


@pytest.fixture
def store(tmp_path):
    with RecordingStore.open(tmp_path / "rec.sqlite") as opened:
        yield opened


def test_put_then_get_round_trip(store):
    res = result('{"funds": []}', {"funds": []})
    outcome = store.put_response(
        "qieman79", "SearchFunds", {"keyword": "红利"}, res, "simulated", latency_ms=12.5
    )
    assert outcome == "inserted"
    got = store.get_response("qieman79", "SearchFunds", {"keyword": "红利"})
    assert {k: got[k] for k in ("content", "structuredContent", "isError")} == {
        "content": res["content"],
        "structuredContent": {"funds": []},
        "isError": False,
    }
    meta = got["_meta"][RECORDING_META_KEY]
    assert meta["provenance"] == "simulated"
    assert meta["latency_ms"] == 12.5
    assert meta["created"].endswith("Z")
    assert meta["args_key"] == store.canonical("SearchFunds", {"keyword": "红利"}).key


def test_lookup_is_scoped_by_inventory_tool_and_arguments(store):
    store.put_response("a", "T", {"x": 1}, result("a"), "simulated")
    assert store.get_response("b", "T", {"x": 1}) is None
    assert store.get_response("a", "U", {"x": 1}) is None
    assert store.get_response("a", "T", {"x": 2}) is None
    assert store.get_response("a", "T", {"x": 1.0})["content"][0]["text"] == "a"


def test_schema_defaults_make_omitted_and_explicit_defaults_the_same_recording(store):
    store.put_response("inv", "F", {"fundCodes": ["1"]}, result("x"), "simulated", input_schema=SCHEMA)
    got = store.get_response("inv", "F", {"pageSize": 10.0, "fundCodes": ["1"]}, input_schema=SCHEMA)
    assert got is not None
    stored = next(store.iter_responses())
    assert stored["arguments"] == {"fundCodes": ["1"], "pageSize": 10}


def test_returned_results_are_fresh_copies(store):
    store.put_response("inv", "T", {}, result("x", {"a": [1]}), "simulated")
    first = store.get_response("inv", "T", {})
    first["structuredContent"]["a"].append(2)
    first["content"].clear()
    second = store.get_response("inv", "T", {})
    assert second["structuredContent"] == {"a": [1]}
    assert second["content"] == [{"type": "text", "text": "x"}]


def test_put_outcomes(store):
    args = {"q": 1}
    assert store.put_response("inv", "T", args, result("one"), "simulated") == "inserted"
    assert store.put_response("inv", "T", args, result("one"), "recorded:http://up") == "identical"
    assert store.get_response("inv", "T", args)["_meta"][RECORDING_META_KEY]["provenance"] == "simulated"
    assert store.put_response("inv", "T", args, result("two"), "simulated", replace=False) == "kept"
    assert store.get_response("inv", "T", args)["content"][0]["text"] == "one"
    assert store.put_response("inv", "T", args, result("two"), "recorded:http://up") == "replaced"
    got = store.get_response("inv", "T", args)
    assert got["content"][0]["text"] == "two"
    assert got["_meta"][RECORDING_META_KEY]["provenance"] == "recorded:http://up"
    assert store.count() == 1


def test_is_error_results_round_trip(store):
    store.put_response("inv", "T", {}, result("bad fund code", is_error=True), "recorded:x")
    assert store.get_response("inv", "T", {})["isError"] is True


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"provenance": "made-up"}, "provenance 'made-up'"),
        ({"provenance": "recorded:"}, "provenance 'recorded:'"),
        ({"inventory": ""}, "inventory: expected a non-empty string"),
        ({"result": {"content": "text"}}, r"inv/T result\.content: expected a list"),
        ({"result": {"content": [{"text": "x"}]}}, r"content\[0\]: expected an object with a string 'type'"),
        ({"result": {"content": [], "structuredContent": [1]}}, "structuredContent: expected an object"),
        ({"result": {"content": [], "isError": "no"}}, "isError: expected true or false"),
        ({"result": {"content": [], "extra": 1}}, r"unknown keys \['extra'\]"),
        ({"result": {"isError": False}}, "'content' is missing"),
        ({"arguments": {"w": float("nan")}}, r"tool 'T': arguments\.w"),
        ({"arguments": [1]}, "tool 'T': arguments: expected a JSON object"),
        ({"latency_ms": -1}, "latency_ms must be finite and >= 0"),
    ],
)
def test_bad_puts_name_the_problem(store, kwargs, fragment):
    call = {
        "inventory": "inv",
        "tool": "T",
        "arguments": {},
        "result": result("x"),
        "provenance": "simulated",
        **kwargs,
    }
    with pytest.raises(InvalidValueError, match=fragment):
        store.put_response(**call)
    assert store.count() == 0


def test_result_meta_is_accepted_and_dropped(store):
    res = {**result("x"), "_meta": {"upstream": "secret"}}
    store.put_response("inv", "T", {}, res, "simulated")
    assert store.get_response("inv", "T", {})["_meta"].keys() == {RECORDING_META_KEY}


def test_iter_responses_is_ordered_and_paged(store):
    for i in range(23):
        store.put_response("inv" if i % 2 else "alt", f"T{i % 3}", {"i": i}, result(str(i)), "simulated")
    rows = list(store.iter_responses(page_size=5))
    assert len(rows) == 23 == store.count()
    keys = [(r["inventory"], r["tool"], r["args_key"]) for r in rows]
    assert keys == sorted(keys)
    assert store.count(inventory="inv") == 11
    assert store.count(inventory="inv", tool="T0") == len(
        list(store.iter_responses("inv", "T0", page_size=2))
    )
    by_i = {r["arguments"]["i"]: r["result"]["content"][0]["text"] for r in rows}
    assert by_i == {i: str(i) for i in range(23)}


def test_transaction_rolls_back_every_put(store):
    with pytest.raises(RuntimeError), store.transaction():
        store.put_response("inv", "T", {"a": 1}, result("x"), "simulated")
        with store.transaction():
            store.put_response("inv", "T", {"a": 2}, result("y"), "simulated")
        raise RuntimeError("abort")
    assert store.count() == 0


def test_nested_transaction_failure_keeps_outer_writes(store):
    with store.transaction():
        store.put_response("inv", "T", {"a": 1}, result("x"), "simulated")
        with pytest.raises(RuntimeError), store.transaction():
            store.put_response("inv", "T", {"a": 2}, result("y"), "simulated")
            raise RuntimeError("inner")
    assert [r["arguments"] for r in store.iter_responses()] == [{"a": 1}]


def test_many_threads_share_one_store(store):
    errors = []

    def work(worker: int) -> None:
        try:
            for i in range(100):
                args = {"worker": worker, "i": i}
                store.put_response("inv", "T", args, result(f"{worker}-{i}"), "simulated")
                assert store.get_response("inv", "T", args)["content"][0]["text"] == f"{worker}-{i}"
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert store.count() == 800


def test_two_stores_on_one_file_see_each_others_writes(tmp_path):
    path = tmp_path / "shared.sqlite"
    with RecordingStore.open(path) as writer, RecordingStore.open(path) as reader:
        writer.put_response("inv", "T", {"a": 1}, result("x"), "simulated")
        assert reader.get_response("inv", "T", {"a": 1})["content"][0]["text"] == "x"


def test_closed_store_refuses_use(tmp_path):
    store = RecordingStore.open(tmp_path / "c.sqlite")
    store.close()
    store.close()
    with pytest.raises(RecordingsError, match="is closed"):
        store.count()


def test_in_memory_store_works():
    with RecordingStore.open(":memory:") as store:
        store.put_response("inv", "T", {}, result("x"), "simulated")
        assert store.count() == 1
