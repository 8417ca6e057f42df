"""What a real model does to the harness, replayed by a fake OpenAI-compatible endpoint on loopback:
a loop of identical calls until the cap, malformed arguments (not JSON; JSON of the wrong types), a
tool that was never offered, and a reply that looks like a tool call but is none. Each must land in
the trace (malformed argument text as sent), the run state (stop reason, events) and the report
(summary counts, per-sample evidence, HTML and Markdown)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from finmcp.evaluator.agents.checks import CallChecker, read_arguments
from finmcp.evaluator.agents.openai_agent import OpenAIAgent
from finmcp.evaluator.agents.text_calls import text_tool_call
from finmcp.evaluator.harness.runner import RunConfig, run_agent
from finmcp.evaluator.harness.scoring import score_run
from finmcp.evaluator.harness.setup import load_bench
from finmcp.evaluator.harness.spawn import SpawnConfig, Stack
from finmcp.evaluator.harness.state import RunState
from finmcp.evaluator.llm import ChatClient
from finmcp.evaluator.reports.html import render_html
from finmcp.evaluator.reports.markdown import render_markdown
from tests.evaluator.fake_llm import Reply, completion


def test_text_that_looks_like_a_tool_call() -> None:
    tools = ["get_fund_nav", "search"]
    cases = {
        '<tool_call>\n{"name": "get_fund_nav", "arguments": {"code": "1"}}\n</tool_call>': "<tool_call>",
        'Sure: {"name": "get_fund_nav", "arguments": {"code": "1"}}': '{"name": …, "arguments": …}',
        'I will call {"arguments": {"q": "x"}, "name": "search"} now': '{"name": …, "arguments": …}',
        "functions.get_fund_nav:\n{}": "functions.NAME",
        "[TOOL_CALLS] [{...}]": "[TOOL_CALLS]",
        "<function=search>{}</function>": "<function=…>",
        'Let me run get_fund_nav(code="000001") first.': "NAME(…)",
    }
    for text, pattern in cases.items():
        found = text_tool_call(text, tools)
        assert found is not None and found["pattern"] == pattern, text
        assert found["snippet"] and found["snippet"] in text
    for text in ("", "The NAV of fund 000001 is 1.23.", 'A JSON answer: {"nav": 1.2}', "search the web"):
        assert text_tool_call(text, tools) is None, text
    assert text_tool_call("not_offered(1)", tools) is None  # call syntax counts for offered tools only


def test_argument_reading_and_checks() -> None:
    assert read_arguments('{"a": 1}') == ({"a": 1}, None)
    assert read_arguments("") == ({}, None) and read_arguments(None) == ({}, None)
    assert read_arguments({"a": 1}) == ({"a": 1}, None)
    args, why = read_arguments('{"a": 1')
    assert args == {} and why is not None and why.startswith("not JSON")
    assert read_arguments("[1, 2]")[1] == "JSON list, not an object"
    assert read_arguments('"{\\"a\\": 1}"')[1] == "JSON str, not an object"
    schema = {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}
    checker = CallChecker({"nav": schema})
    assert checker.check(0, "nav", '{"code": "1"}') == ({"code": "1"}, None)
    assert checker.check(1, "nav", '{"code": 1}') == ({"code": 1}, None)
    assert checker.check(2, "nav", "{code: 1}") == ({}, "{code: 1}")
    checker.check(3, "other", "{}")
    for step in range(4, 8):
        checker.check(step, "nav", '{"code": "2"}')
    assert checker.repeat_note() == "repeated identical call ×4: nav"
    kinds = [(e["kind"], e.get("step")) for e in checker.finish()]
    assert kinds == [
        ("wrong_argument_types", 1),
        ("malformed_arguments", 2),
        ("unknown_tool", 3),
        ("repeated_call", None),
    ]
    assert checker.events[0]["why"] == "code: 1 is not of type 'string'"
    assert checker.events[-1] == {"kind": "repeated_call", "tool": "nav", "times": 4}


def _string_property(tools: list[dict[str, Any]]) -> tuple[str, str]:
    """A tool whose only required parameter (if any) is a string: ``{param: "..."}`` fits its schema."""
    for tool in tools:
        schema = tool["function"]["parameters"]
        for name, prop in (schema.get("properties") or {}).items():
            if (
                prop.get("type") == "string"
                and set(schema.get("required") or []) <= {name}
                and "enum" not in prop
            ):
                return tool["function"]["name"], name
    raise AssertionError("no tool with a string parameter")


def _call(i: int, name: str, arguments: str) -> dict[str, Any]:
    return {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": arguments}}


@pytest.mark.slow
def test_model_behaviours_reach_trace_state_and_report(tmp_path: Path, fake_openai) -> None:
    bench = load_bench("finmcp-sim", tmp_path / "bench", limit=4)
    refs = [r for r in bench.refs if len(r.turns) == 1][:3] or bench.refs[:3]
    roles = dict(zip((r.turns[0].user for r in refs), ("loop", "malformed", "text"), strict=False))
    assert len(roles) == 3

    def script(body: dict[str, Any], n: int) -> Reply:
        messages = body["messages"]
        role = roles[messages[0]["content"]]
        steps = sum(1 for m in messages if m["role"] == "assistant" and m.get("tool_calls"))
        if not body.get("tools"):  # the request for a reply after a cap
            return 200, completion("I looked it up several times."), 0.0
        tool, param = _string_property(body["tools"])
        if role == "loop":
            return 200, completion(tool_calls=[_call(0, tool, json.dumps({param: "000001"}))]), 0.0
        if role == "malformed" and steps == 0:
            calls = [
                _call(0, tool, json.dumps({param: "000001"})[:-1]),  # cut short: not JSON
                _call(1, tool, json.dumps({param: 42})),  # wrong type
                _call(2, "no_such_tool", "{}"),
            ]
            return 200, completion(tool_calls=calls), 0.0
        if role == "text":
            reply = f"<tool_call>\n{json.dumps({'name': tool, 'arguments': {param: '1'}})}\n</tool_call>"
            return 200, completion(reply), 0.0
        return 200, completion("done"), 0.0

    fake = fake_openai(script)
    db, state = tmp_path / "runs.sqlite", tmp_path / "state.jsonl"
    with Stack(SpawnConfig(db=db, recordings=bench.recordings)) as stack:
        agent = OpenAIAgent(ChatClient(fake.url, "replayed", api_key_env=None), max_calls=20)
        config = RunConfig("real", stack.proxy_base, state, db, concurrency=3, progress=False)
        summary = asyncio.run(run_agent(refs, agent, config))
        asyncio.run(agent.aclose())
    assert summary.done == 3 and not summary.errors

    by_role = {roles[r.turns[0].user]: r.id for r in refs}
    records = {r["sample"]: r for r in RunState(state).records("real")}
    # run state: the stop reason with its loop note, and the events
    loop = records[by_role["loop"]]
    assert loop["calls"] == 20 and loop["stopped"] == ["max_calls"]
    stop = next(e for e in loop["agent_events"] if e["kind"] == "stop")
    assert stop["reason"] == "max_calls" and stop["calls"] == 20
    assert stop["detail"].startswith("repeated identical call ×20: ")
    kinds = [e["kind"] for e in records[by_role["malformed"]]["agent_events"]]
    assert kinds == ["malformed_arguments", "wrong_argument_types", "unknown_tool"]
    text = records[by_role["text"]]
    assert text["calls"] == 0 and text["stopped"] == ["done"]
    assert [e["kind"] for e in text["agent_events"]] == ["text_tool_call"]
    assert text["agent_events"][0]["pattern"] == "<tool_call>"

    # trace: the malformed argument text as the model wrote it, answered with an error
    with sqlite3.connect(db) as con:
        rows = con.execute(
            "SELECT tool, arguments, status FROM calls WHERE run_id = 'real' AND sample_id = ? ORDER BY t_req_ns, id",
            (by_role["malformed"],),
        ).fetchall()
    assert len(rows) == 3
    assert json.loads(rows[0][1]).endswith('"000001"') and rows[0][2] != "ok"
    assert rows[1][2] != "ok"  # wrong type: the server's validation error

    # report: counts, per-sample evidence, HTML and Markdown
    report = score_run(refs, db, "real", RunState(state).records("real"), bench.inventory, bootstrap=0)
    behaviour = report.agent_behaviour
    assert behaviour["samples_with_agent_log"] == 3
    assert behaviour["stopped_at_cap"] == {"max_calls": 1}
    assert behaviour["loops"] == 1 and behaviour["malformed_calls"] == 1
    assert behaviour["samples_with_wrong_argument_types"] == 1
    assert behaviour["samples_with_unknown_tool"] == 1
    assert behaviour["samples_with_text_tool_call"] == 1
    rows_by_id = {row["id"]: row for row in report.samples}
    loop_ev = rows_by_id[by_role["loop"]]["evidence"]["agent"]
    assert loop_ev["repeat"]["times"] == 20 and loop_ev["stopped"] == ["max_calls"]
    bad = rows_by_id[by_role["malformed"]]["evidence"]
    assert bad["agent"]["malformed_calls"] == 1
    assert [c.get("malformed", False) for c in bad["pred"][0][0]] == [True, False, False]
    html = render_html(report)
    assert "<h2>Agent behaviour</h2>" in html
    assert "loop ×20" in html and "stopped: max_calls" in html
    assert "reply looks like a tool call (&lt;tool_call&gt;)" in html
    assert "malformed arguments of" in html and "which was not offered" in html
    assert html.count("data-agent-event") == 1 + 1 + 3 + 1  # loop: stop + repeat; 3 malformed; text
    markdown = render_markdown(report)
    assert "## Agent behaviour" in markdown and "| samples stopped at max_calls | 1 |" in markdown
