"""Recorded fund diagnoses for load tests, and the check that every logged row is what its client got.

Each recorded answer names its fund code, so a row whose output belongs to another call is caught.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from finmcp.recordings import RecordingStore
from finmcp.server.testing import minimal_instance
from finmcp.tool_specs.inventory import load_inventory

TOOL = "GetFundDiagnosis"
INVENTORY = "qieman79"


def diagnosis_result(code: str) -> dict[str, Any]:
    """A valid ``GetFundDiagnosis`` result (the schema's minimal output) that names ``code``."""
    spec = load_inventory("finmcp65").get(TOOL)
    structured = minimal_instance(spec.output_schema) | {"fundCode": code}
    text = json.dumps(structured, ensure_ascii=False, indent=2)
    return {"content": [{"type": "text", "text": text}], "structuredContent": structured, "isError": False}


def record_diagnoses(path: Path, codes: Iterable[str], provenance: str) -> Path:
    """A recordings file answering ``GetFundDiagnosis`` for each code (for ``--miss strict`` replay)."""
    with RecordingStore.open(path) as store:
        for code in codes:
            store.put_response(INVENTORY, TOOL, {"fundNameOrCode": code}, diagnosis_result(code), provenance)
    return path


def assert_rows_are_what_clients_got(
    calls: Sequence[dict[str, Any]], seen: dict[str, list[tuple[str, str]]], prefix: str = ""
) -> None:
    """Every sample's rows, in ``seq`` order, hold exactly the (code, text) pairs its client received.

    ``seen`` maps ``prefix + sample_id`` to the client's own log, in the order it got the answers.
    """
    by_sample: dict[str, list[dict[str, Any]]] = {}
    for call in calls:
        by_sample.setdefault(prefix + call["sample_id"], []).append(call)
    assert sorted(by_sample) == sorted(k for k in seen if k.startswith(prefix))
    for sample, rows in by_sample.items():
        rows.sort(key=lambda c: c["seq"])
        logged = [(r["arguments"]["fundNameOrCode"], r["result"]["content"][0]["text"]) for r in rows]
        assert logged == seen[sample], sample  # each row is the answer its client received, in order
        assert all(json.loads(text)["fundCode"] == code for code, text in logged), sample
