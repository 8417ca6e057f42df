"""The viewer shows the model's turns (the model door's exchanges) on a sample's timeline, between its calls.

Real processes: the proxy with ``--llm-upstream`` in front of the fake model upstream writes the model
turns; a tool call of the same sample is added on the proxy's clock between them; ``finmcp-eval view``
serves the page, read through its API and in headless Chromium.
"""

from __future__ import annotations

import json
import sqlite3

from finmcp.recordings.plumbing.launch import FinmcpProcess
from tests.proxy.test_model_door import _post, _rows
from tests.support.browser import chromium_context
from tests.support.fake_llm import TEXT, FakeLLM
from tests.support.net import get_json


def test_model_turns_on_the_timeline(proxy_process, tmp_path):
    db = tmp_path / "t.sqlite"
    with FakeLLM() as llm:
        proxy = proxy_process(
            ["--upstream", "http://127.0.0.1:9/mcp", "--db", str(db), "--llm-upstream", llm.url]
        )
        for model in ("fake-tool", "fake"):
            assert _post(proxy.base, "/r/V/s/S1/t/0/v1/chat/completions", {"model": model})[0] == 200
        asked, answered = _rows(db, "V", 2)
    between = asked["t_req_ns"] + int(asked["duration_ms"] * 1e6) + 1000
    with sqlite3.connect(db) as con:  # the call the first turn asked for, between the two model turns
        con.execute(
            "INSERT INTO calls (run_id, sample_id, turn, seq, tool, arguments, result, status, t_req_ns, t_resp_ns,"
            " latency_ms, call_group, group_source, trial) VALUES ('V', 'S1', 0, 0, 'get_quote', ?, ?, 'ok', ?, ?,"
            " 0.5, 0, 'sequence', 0)",
            (
                json.dumps({"symbol": "AAPL"}),
                json.dumps({"content": [], "isError": False}),
                between,
                between + 500_000,
            ),
        )
    args = ["view", "--db", str(db), "--host", "127.0.0.1", "--port", "0"]
    with FinmcpProcess("finmcp-eval", args, timeout=60, module="finmcp.evaluator.cli") as viewer:
        sample = get_json(viewer.endpoint("/api/runs/V/samples/S1"))
        turns = sample["model_turns"]
        assert [(t["tools"], t["final_text"], t["status"]) for t in turns] == [
            (["get_quote"], None, "ok"),
            ([], TEXT, "ok"),
        ]
        assert turns[0]["input_tokens"] == 11 and turns[0]["t_req_ns"] < between < turns[1]["t_req_ns"]
        with chromium_context() as context:
            page = context.new_page()
            page.goto(viewer.endpoint("/runs/V/samples/S1"))
            page.wait_for_selector(".gantt .row.model-turn")
            labels = page.locator(".gantt .row .label").all_inner_texts()
    assert labels == ["model fake-tool → get_quote", "#0 get_quote", "model fake → answer"]
