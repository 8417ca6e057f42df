"""The drift audit's parts without a server: definition diff and its severities, normaliser paths,
list edit scripts, exit codes, the HTML page, the recordings-file source and usage errors."""

from __future__ import annotations

import json

import pytest

from finmcp.proxy.cli import main as proxy_main
from finmcp.proxy.drift.definitions import diff_definitions
from finmcp.proxy.drift.html import drift_page
from finmcp.proxy.drift.normalise import Normaliser, parse_path
from finmcp.proxy.drift.report import build_report
from finmcp.proxy.drift.severity import Finding, exit_code
from finmcp.proxy.drift.sources import from_recordings, tools_from_messages
from finmcp.proxy.drift.values import diff
from finmcp.recordings import RecordingStore

TOOL = {
    "name": "quote",
    "description": "a quote",
    "inputSchema": {
        "type": "object",
        "properties": {"code": {"type": "string"}, "period": {"type": "string", "enum": ["d", "w", "m"]}},
        "required": ["code"],
    },
    "annotations": {"readOnlyHint": True},
}


def _changed(**edits) -> dict:
    tool = json.loads(json.dumps(TOOL))
    for path, value in edits.items():
        node = tool
        *parents, last = path.split("__")
        for p in parents:
            node = node[p]
        node[last] = value
    return tool


@pytest.mark.parametrize(
    ("edits", "kind", "severity"),
    [
        ({"inputSchema__properties__period__enum": ["d", "w"]}, "enum-narrowed", "breaks-replay"),
        ({"inputSchema__properties__period__enum": ["d", "w", "m", "y"]}, "enum-widened", "cosmetic"),
        ({"inputSchema__properties__code__type": "integer"}, "type-changed", "breaks-replay"),
        ({"inputSchema__required": ["code", "period"]}, "required-added", "breaks-replay"),
        ({"title": "Quote"}, "title-changed", "cosmetic"),
        (
            {"annotations": {"readOnlyHint": False, "destructiveHint": True}},
            "annotations-act",
            "changes-references",
        ),
        ({"annotations": {"readOnlyHint": True, "openWorldHint": True}}, "annotations-changed", "cosmetic"),
        ({"outputSchema": {"type": "object"}}, "output-schema-changed", "changes-references"),
    ],
)
def test_each_definition_change_is_classed(edits, kind, severity):
    findings = diff_definitions([TOOL], [_changed(**edits)])
    assert [(f.kind, f.severity, f.tool) for f in findings] == [(kind, severity, "quote")]


def test_removed_property_and_unchanged_tools():
    gone = json.loads(json.dumps(TOOL))
    del gone["inputSchema"]["properties"]["period"]
    assert [(f.kind, f.path) for f in diff_definitions([TOOL], [gone])] == [
        ("property-removed", "inputSchema.properties.period")
    ]
    assert diff_definitions([TOOL], [dict(reversed(list(TOOL.items())))]) == []  # same fingerprint
    assert [f.kind for f in diff_definitions([TOOL], [])] == ["tool-removed"]
    assert [f.kind for f in diff_definitions([], [TOOL])] == ["tool-added"]


def test_paths_wildcards_and_masks():
    assert parse_path("content[*].text.datetime") == ("content", "*", "text", "datetime")
    assert parse_path("a.b[3]") == ("a", "b", 3)
    with pytest.raises(ValueError):
        parse_path("")
    norm = Normaliser.build(["content[*].text.t", "structuredContent.*.id"], ["s-[0-9]+"], volatile=True)
    value = {
        "content": [{"text": {"t": 1, "keep": "at 2026-12-04T10:00:00Z by s-42"}}],
        "structuredContent": {"a": {"id": 1, "x": 2}},
    }
    assert norm.apply(value) == {
        "content": [{"text": {"keep": "at <masked> by <masked>"}}],
        "structuredContent": {"a": {"x": 2}},
    }


def test_list_edit_scripts():
    assert [c["change"] for c in diff([1, 2, 3], [1, 3])] == ["removed"]
    assert [(c["path"], c["change"]) for c in diff([{"a": 1}, {"a": 2}], [{"a": 1}, {"a": 5}])] == [
        ("[1].a", "value")
    ]
    assert [c["change"] for c in diff({"a": 1}, {"a": "1"})] == ["type"]
    assert diff(list(range(100)), list(range(100))) == []


def test_exit_codes_follow_fail_on():
    cosmetic = [Finding("cosmetic", "title-changed", "t")]
    breaking = [Finding("breaks-replay", "tool-removed", "t")]
    assert exit_code([]) == 0 and exit_code(cosmetic) == 0 and exit_code(breaking) == 1
    assert exit_code(cosmetic, "cosmetic") == 1 and exit_code(breaking, "never") == 0


def test_the_html_page_is_self_contained_and_escaped():
    outcome = {"call_id": 1, "sample_id": "<s>", "tool": "<b>x</b>", "verdict": "different"}
    outcome["_findings"] = [Finding("changes-references", "value", "<b>x</b>", "a", "", "<i>", 2)]
    report = build_report(
        source="run r",
        target="http://127.0.0.1:1/mcp",
        run_id="r",
        outcomes=[outcome],
        definition_findings=[],
        recorded_tools=1,
        live_tools=1,
        normalisers=[],
        fail_on="changes-references",
        notes=[],
    )
    page = drift_page(report)
    assert "<script" not in page and "http://" not in page.replace("http://127.0.0.1:1/mcp", "")
    assert "&lt;b&gt;x&lt;/b&gt;" in page and "<b>x</b>" not in page


def test_tools_from_logged_messages_pair_requests_and_answers():
    listing = {"jsonrpc": "2.0", "id": 1, "result": {"tools": [TOOL]}}
    messages = [
        {"session_key": "s", "jsonrpc_id": 1, "direction": "c2s", "kind": "request", "method": "tools/list"},
        {
            "session_key": "s",
            "jsonrpc_id": 1,
            "direction": "s2c",
            "kind": "response",
            "body": json.dumps(listing),
        },
        {
            "session_key": "t",
            "jsonrpc_id": 1,
            "direction": "s2c",
            "kind": "response",
            "body": json.dumps(listing),
        },
    ]
    assert tools_from_messages(messages) == [TOOL]
    assert tools_from_messages(messages[1:]) is None


def test_a_recordings_file_is_a_source(tmp_path):
    path = tmp_path / "rec.sqlite"
    with RecordingStore.open(str(path)) as store:
        store.put_response(
            "inv", "quote", {"code": "1"}, {"content": [{"type": "text", "text": "1"}]}, "simulated"
        )
    recorded = from_recordings(path)
    assert [(c["tool"], c["arguments"], c["status"]) for c in recorded.calls] == [
        ("quote", {"code": "1"}, "ok")
    ]
    if recorded.tools is None:  # until the file records a declaration
        assert "definitions not compared" in recorded.notes[0]


@pytest.mark.parametrize(
    "extra",
    [
        ["--db", "x.sqlite", "--run", "r", "--ignore", "a[", "--against", "http://127.0.0.1:9/mcp"],
        ["--db", "x.sqlite", "--run", "r", "--mask", "(", "--against", "http://127.0.0.1:9/mcp"],
        ["--run", "r", "--against", "http://127.0.0.1:9/mcp"],
        ["--recording", "missing.sqlite", "--against", "http://127.0.0.1:9/mcp"],
    ],
)
def test_usage_errors_exit_2(extra, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.sqlite").write_bytes(b"")  # found: the flags are what is wrong
    assert proxy_main(["audit", *extra]) == 2
    assert "finmcp-proxy audit:" in capsys.readouterr().err


def test_a_recorded_declaration_gives_the_definitions():
    """``RecordingStore.declaration(name)`` / ``declared_servers()`` (migration 5) as the audit reads them."""
    from finmcp.proxy.drift.sources import _declared_tools

    class Declared:
        def declared_servers(self) -> list[str]:
            return ["time"]

        def declaration(self, name: str) -> dict | None:
            return {"tools": [TOOL], "serverInfo": {"name": "t"}} if name == "time" else None

    assert _declared_tools(Declared(), None, []) == ([TOOL], [])
    tools, notes = _declared_tools(Declared(), "other", [])
    assert tools is None and "no declaration was recorded" in notes[0]
