"""The drift audit's mutation corpus on real third-party servers (issue 28, "Must show").

``mcp-server-time`` (PyPI) is recorded unchanged through ``finmcp-proxy --transport stdio`` behind
tests/support/mutating_relay.py, then audited against the relay applying each named mutation: every
mutation is found and classed with the right severity; the unchanged server gives 0 findings with
its volatile ``datetime`` left out by the normalisers the test names. ``server-memory`` (npm) gives
value drift through ``MEMORY_FILE_PATH``: a knowledge graph recorded, then audited against a store
with one entity more (one ``inserted`` item, not a changed line per position); its acting tool is
not re-issued by default.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from finmcp.proxy.cli import main as proxy_main
from finmcp.proxy.testing import stdio_args
from tests.support.source import REPO
from tests.support.traces import wait_calls
from tests.thirdparty.servers import MEMORY, TIME

pytestmark = pytest.mark.slow

TIME_MASKS = [
    "--ignore", "structuredContent.datetime", "--ignore", "content[*].text.datetime",
    "--ignore", "structuredContent.*.datetime", "--ignore", "content[*].text.*.datetime",
]  # fmt: skip
"""The time server's volatile field, named: the current time (and a converted time's date)."""
CALLS = [
    ("get_current_time", {"timezone": "UTC"}),
    ("get_current_time", {"timezone": "Europe/London"}),
    ("convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
]
EXPECTED = {  # mutation -> (kind, severity) the audit must report for it
    "remove-tool": ("tool-removed", "breaks-replay"),
    "param-type": ("type-changed", "breaks-replay"),
    "required-param": ("required-added", "breaks-replay"),
    "description": ("description-changed", "cosmetic"),
    "destructive": ("annotations-act", "changes-references"),
    "output-schema": ("output-schema-changed", "changes-references"),
    "value-drift": ("value", "changes-references"),
    "volatile": ("structure", "changes-references"),
}


def _time_server() -> list[str]:
    return [str(TIME.binary()), "--local-timezone", "UTC"]


def _relay(mutation: str, server: list[str]) -> list[str]:
    code = "import runpy; runpy.run_module('tests.support.mutating_relay', run_name='__main__')"
    return [sys.executable, "-c", code, "--mutation", mutation, "--", *server]


async def _record(params: StdioServerParameters, calls: list[tuple[str, dict[str, Any]]]) -> None:
    async with Client(params, mode="legacy") as client:
        await client.list_tools()
        for tool, arguments in calls:
            await client.call_tool(tool, arguments)


def _record_through_proxy(
    db: Path, run: str, upstream: list[str], calls: list[Any], env: dict[str, str]
) -> None:
    args = stdio_args([], db, "--run", run, "--upstream-cmd", "--", *upstream)
    params = StdioServerParameters(
        command=sys.executable, args=args, cwd=str(REPO), env={**os.environ, **env}
    )
    anyio.run(_record, params, calls)
    assert [c["status"] for c in wait_calls(db, run, len(calls))] == ["ok"] * len(calls)


def _audit(db: Path, run: str, upstream: list[str], *extra: str, capsys: Any) -> tuple[int, dict[str, Any]]:
    code = proxy_main(
        ["audit", "--db", str(db), "--run", run, "--json", *extra, "--against-cmd", "--", *upstream]
    )
    return code, json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def time_recording(tmp_path_factory) -> tuple[Path, list[str]]:
    server = _time_server()
    db = tmp_path_factory.mktemp("drift") / "runs.sqlite"
    _record_through_proxy(db, "time", _relay("none", server), CALLS, {})
    return db, server


def test_the_unchanged_time_server_gives_no_findings(time_recording, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    db, server = time_recording
    code, report = _audit(
        db, "time", _relay("none", server), *TIME_MASKS, "--fail-on", "cosmetic", capsys=capsys
    )
    assert report["findings"] == [] and report["counts"] == {"identical": 3}, report
    assert code == 0
    code, report = _audit(db, "time", _relay("none", server), capsys=capsys)  # no normaliser: the time drifts
    assert code == 1 and {f["path"] for f in report["findings"]} >= {"structuredContent.datetime"}


@pytest.mark.parametrize("mutation", sorted(EXPECTED))
def test_each_mutation_is_found_and_classed(mutation, time_recording, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    db, server = time_recording
    kind, severity = EXPECTED[mutation]
    code, report = _audit(db, "time", _relay(mutation, server), *TIME_MASKS, capsys=capsys)
    found = [(f["kind"], f["severity"], f["tool"]) for f in report["findings"]]
    assert (kind, severity, "get_current_time") in found, found
    if severity == "cosmetic":
        assert code == 0 and report["worst"] == "cosmetic", found  # below the default --fail-on
    else:
        assert code == 1 and report["worst"] == severity, found
    if mutation in ("remove-tool", "destructive"):  # not re-issued: gone, or it may act now
        skipped = [c for c in report["calls"] if c["tool"] == "get_current_time"]
        assert {c["verdict"] for c in skipped} == {"skipped"}, skipped
    if mutation == "value-drift":  # the structured path first; the text block's JSON is parsed
        drifted = [c for c in report["calls"] if c["verdict"] == "different"]
        call = drifted[0]
        assert len(drifted) == 2 and report["first_drift"] == [
            {"session": call["session"], "call_id": call["call_id"], "tool": "get_current_time"}
        ]
        assert [d["path"] for d in call["diff"]] == [
            "structuredContent.day_of_week",
            "content[0].text.day_of_week",
        ]


def test_a_volatile_field_is_masked_by_a_named_normaliser(time_recording, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    db, server = time_recording
    ignore = ["--ignore", "structuredContent.request_id", "--ignore", "content[*].text.request_id"]
    code, report = _audit(db, "time", _relay("volatile", server), *TIME_MASKS, *ignore, capsys=capsys)
    assert code == 0 and report["findings"] == [], report
    code, report = _audit(
        db,
        "time",
        _relay("volatile", server),
        *TIME_MASKS,
        "--volatile",
        "--mask",
        "[0-9a-f-]{36}",
        capsys=capsys,
    )
    assert code == 1  # a mask hides the value, not the new key: still a structural change


def _memory_file(path: Path, names: list[str]) -> None:
    lines = [
        json.dumps({"type": "entity", "name": n, "entityType": "city", "observations": [f"{n} is a city"]})
        for n in names
    ]
    path.write_text("\n".join(lines) + "\n")


def test_server_memory_value_drift_through_memory_file_path(tmp_path, monkeypatch, capsys):
    """server-memory annotates its read tools read-only: the audit re-issues those and skips the
    recorded ``create_entities`` (it may act) unless ``--include-acting``."""
    server = [str(MEMORY.binary())]
    used, same, changed = tmp_path / "used.jsonl", tmp_path / "same.jsonl", tmp_path / "changed.jsonl"
    for path in (used, same):
        _memory_file(path, ["Paris", "Rome", "Oslo"])
    _memory_file(changed, ["Lima", "Paris", "Rome", "Oslo"])
    db = tmp_path / "runs.sqlite"
    new = {"entities": [{"name": "Kyiv", "entityType": "city", "observations": []}]}
    calls = [("read_graph", {}), ("open_nodes", {"names": ["Rome"]}), ("create_entities", new)]
    _record_through_proxy(db, "mem", server, calls, {"MEMORY_FILE_PATH": str(used)})
    monkeypatch.setenv("MEMORY_FILE_PATH", str(same))  # the store as it was recorded: identical
    code, report = _audit(db, "mem", server, capsys=capsys)
    assert code == 0 and report["counts"] == {"identical": 2, "skipped": 1}, report
    assert report["skipped_tools"] == {
        "create_entities": "may act (not annotated readOnlyHint): not re-issued without --include-acting"
    }
    assert "Kyiv" not in same.read_text()  # nothing acted on the audited store
    monkeypatch.setenv("MEMORY_FILE_PATH", str(changed))  # the caller's store reaches the server
    code, report = _audit(db, "mem", server, capsys=capsys)
    assert code == 1, report
    graph = next(c for c in report["calls"] if c["tool"] == "read_graph")
    assert [(d["path"], d["change"]) for d in graph["diff"]] == [
        ("structuredContent.entities[0]", "inserted"),
        ("content[0].text.entities[0]", "inserted"),
    ]
    assert {(f["kind"], f["severity"]) for f in graph["findings"]} == {("structure", "changes-references")}
    assert next(c for c in report["calls"] if c["tool"] == "open_nodes")["verdict"] == "identical"
