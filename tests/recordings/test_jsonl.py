"""JSONL export/import of recorded responses."""

from __future__ import annotations

import io
import json
import random

import pytest

from finmcp.recordings import RecordingStore
from finmcp.recordings.errors import InvalidValueError
from finmcp.recordings.jsonl import LINE_KEYS, export_jsonl, export_jsonl_text, import_jsonl


def fill(store: RecordingStore, n: int, seed: int) -> None:
    rng = random.Random(seed)
    for i in range(n):
        payload = {"nav": round(rng.uniform(0.5, 3), 4), "名称": f"基金{i}", "tags": [rng.randint(0, 9)]}
        store.put_response(
            rng.choice(["qieman79", "fintool760"]),
            rng.choice(["SearchFunds", "BatchGetFundsDetail", "GetFundDiagnosis"]),
            {"fundCodes": [f"{rng.randint(0, 999999):06d}"], "page": rng.choice([1, 2.0])},
            {
                "content": [{"type": "text", "text": json.dumps(payload, ensure_ascii=False, indent=2)}],
                "structuredContent": payload,
                "isError": rng.random() < 0.1,
            },
            rng.choice(["simulated", "recorded:http://127.0.0.1:9/mcp", "imported:demo_infer.json"]),
            latency_ms=rng.choice([None, round(rng.uniform(1, 500), 3)]),
        )


def test_round_trip_is_byte_identical(tmp_path):
    with RecordingStore.open(tmp_path / "a.sqlite") as a, RecordingStore.open(tmp_path / "b.sqlite") as b:
        fill(a, 60, seed=1)
        lines = export_jsonl(a, tmp_path / "a.jsonl")
        assert lines == a.count()
        outcomes = import_jsonl(b, tmp_path / "a.jsonl")
        assert outcomes == {"inserted": a.count()}
        export_jsonl(b, tmp_path / "b.jsonl")
        assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
        assert list(a.iter_responses()) == list(b.iter_responses())


def test_export_is_sorted_utf8_and_independent_of_insertion_order(tmp_path):
    with RecordingStore.open(":memory:") as a, RecordingStore.open(":memory:") as b:
        fill(a, 30, seed=2)
        records = list(a.iter_responses())
        for record in reversed(records):
            b.put_response(
                record["inventory"],
                record["tool"],
                record["arguments"],
                record["result"],
                record["provenance"],
                latency_ms=record["latency_ms"],
                created=record["created"],
            )
        text = export_jsonl_text(a)
        assert text == export_jsonl_text(b)
    lines = [json.loads(line) for line in text.splitlines()]
    assert [tuple(line) for line in lines] == [LINE_KEYS] * len(lines)
    keys = [(line["inventory"], line["tool"], line["args_key"]) for line in lines]
    assert keys == sorted(keys)
    assert "基金" in text and "\\u" not in text


def test_import_reports_outcomes_and_can_retarget_inventory():
    with RecordingStore.open(":memory:") as a, RecordingStore.open(":memory:") as b:
        fill(a, 10, seed=3)
        text = export_jsonl_text(a)
        assert import_jsonl(b, io.StringIO(text), inventory="copy") == {"inserted": 10}
        assert import_jsonl(b, io.StringIO(text), inventory="copy") == {"identical": 10}
        assert b.count(inventory="copy") == 10


def test_bad_lines_are_reported_with_line_numbers_and_nothing_is_imported(tmp_path):
    with RecordingStore.open(":memory:") as a, RecordingStore.open(":memory:") as b:
        fill(a, 3, seed=4)
        lines = export_jsonl_text(a).splitlines()
        cases = {
            "not json": "not valid JSON",
            "[1, 2]": "expected a JSON object per line",
            '{"inventory": "x"}': "missing keys",
        }
        for bad, fragment in cases.items():
            path = tmp_path / "bad.jsonl"
            path.write_text("\n".join([lines[0], "", lines[1], bad, lines[2]]) + "\n", encoding="utf-8")
            with pytest.raises(InvalidValueError, match=rf"bad\.jsonl:4: {fragment}"):
                import_jsonl(b, path)
            assert b.count() == 0


def test_tampered_key_is_detected():
    with RecordingStore.open(":memory:") as a, RecordingStore.open(":memory:") as b:
        fill(a, 1, seed=5)
        line = json.loads(export_jsonl_text(a))
        line["args_key"] = "0" * 32
        source = io.StringIO(json.dumps(line, ensure_ascii=False) + "\n")
        with pytest.raises(InvalidValueError, match=":1: args_key 0+ does not match"):
            import_jsonl(b, source)
        source.seek(0)
        assert import_jsonl(b, source, verify_keys=False) == {"inserted": 1}


def test_invalid_result_in_a_line_names_the_line():
    with RecordingStore.open(":memory:") as a, RecordingStore.open(":memory:") as b:
        fill(a, 1, seed=6)
        line = json.loads(export_jsonl_text(a))
        line["result"] = {"content": "plain"}
        with pytest.raises(InvalidValueError, match=r"<stream>:1: .*content: expected a list"):
            import_jsonl(b, io.StringIO(json.dumps(line)))
