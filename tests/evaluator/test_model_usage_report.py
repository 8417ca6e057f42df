"""``finmcp-eval score --prices``: a run's model-door exchanges become tokens, cost and model time in the report.

The exchanges are real: the proxy (``--llm-upstream``) in front of the fake model upstream writes them
into the same trace file the run's tool calls are in.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from finmcp.evaluator.cli import main
from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.harness.scoring import LEADERBOARD
from finmcp.evaluator.inputs.references import load_references
from finmcp.evaluator.reports.compare_html import render_leaderboard_html
from finmcp.evaluator.reports.model import Report
from finmcp.evaluator.reports.model_usage import Price, load_prices
from finmcp.evaluator.reports.pareto import cost_points, pareto_front
from tests.evaluator.test_cli import rows_from_refs
from tests.proxy.test_model_door import _post, _rows
from tests.support.fake_llm import FakeLLM


def _add_calls(db, rows) -> None:
    """The run's tool calls, into the trace file the proxy created (latency 5 ms each)."""
    with sqlite3.connect(db) as con:
        for seq, row in enumerate(rows):
            con.execute(
                "INSERT INTO calls (run_id, sample_id, turn, seq, tool, arguments, result, status, call_group,"
                " group_source, trial, latency_ms) VALUES (?, ?, ?, ?, ?, ?, ?, 'ok', ?, 'explicit', 0, 5.0)",
                (
                    row["run"],
                    row["sample"],
                    row["turn"],
                    seq,
                    row["tool"],
                    json.dumps(row["arguments"], ensure_ascii=False),
                    json.dumps({"content": [{"type": "text", "text": "{}"}], "isError": False}),
                    row["group"],
                ),
            )


def test_score_reports_tokens_cost_and_time_split(tmp_path, shared_dir, proxy_process):
    refs_path = shared_dir / "finmcp" / "demo_infer.json"
    refs = load_references(refs_path)
    db = tmp_path / "trace.sqlite"
    first, second = refs.samples[0].id, refs.samples[1].id
    with FakeLLM() as llm:
        proxy = proxy_process(
            ["--upstream", "http://127.0.0.1:9/mcp", "--db", str(db), "--llm-upstream", llm.url]
        )
        for sample, model in (
            (first, "fake-tool"),
            (first, "fake"),
            (second, "fake"),
            (second, "fake-nousage"),
        ):
            status, _ = _post(proxy.base, f"/r/perfect/s/{sample}/t/0/v1/chat/completions", {"model": model})
            assert status == 200
        _rows(db, "perfect", 4)
    _add_calls(db, rows_from_refs(refs, "perfect"))
    prices = tmp_path / "prices.json"
    prices.write_text(
        json.dumps(
            {"fake": {"input": 1.0, "output": 2.0, "cached": 0.5}, "fake-tool": {"input": 1, "output": 2}}
        )
    )
    out = tmp_path / "out"
    args = ["score", "--bench", str(refs_path), "--db", str(db), "--run", "perfect", "--bootstrap", "0"]
    assert main([*args, "--prices", str(prices), "--report-dir", str(out), "--format", "json,md"]) == 0
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    block = report["model_usage"]
    s1, s2 = block["samples"][first], block["samples"][second]
    assert (s1["exchanges"], s1["input_tokens"], s1["output_tokens"], s1["cached_tokens"]) == (2, 22, 14, 6)
    assert (s2["exchanges"], s2["input_tokens"], s2["unreported"]) == (2, 11, 1)
    # fake: 11 in, 7 out, 3 cached (cached priced on its own, not inside input: Anthropic-style default)
    one = (11 * 1.0 + 7 * 2.0 + 3 * 0.5) / 1e6
    two = (11 * 1.0 + 7 * 2.0 + 3 * 1.0) / 1e6  # fake-tool: cached at the input price
    assert s1["cost_usd"] == pytest.approx(one + two) and s2["cost_usd"] == pytest.approx(one)
    assert block["totals"]["cost_usd"] == pytest.approx(2 * one + two)
    assert block["TF1"] == 1.0 and block["TF1_per_dollar"] == pytest.approx(1.0 / (2 * one + two))
    assert block["TF1_per_1k_tokens"] == pytest.approx(1.0 / ((33 + 21) / 1000))
    assert s1["model_ms"] > 0 and s1["tool_ms"] == 5.0 * sum(
        len(g) for t in refs.samples[0].turns for g in t.calls
    )
    assert 0 < s1["model_share"] < 1
    assert any("had no usage" in w for w in report["warnings"])
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "## Model usage (model door)" in md and "TF1 per dollar" in md


def test_price_file_errors_are_clear(tmp_path):
    path = tmp_path / "p.json"
    path.write_text('{"m": {"input": -1, "output": 2}}')
    with pytest.raises(EvalInputError, match=r"'m'.input: expected a price >= 0"):
        load_prices(path)
    path.write_text("[1]")
    with pytest.raises(EvalInputError, match="expected"):
        load_prices(path)
    path.write_text('{"m": {"input": 1, "output": 2, "cached_in_input": true}}')
    assert load_prices(path) == {"m": Price(1.0, 2.0, 1.0, True)}
    assert Price(1.0, 2.0, 0.5, True).cost(10, 0, 4) == pytest.approx((6 * 1.0 + 4 * 0.5) / 1e6)


def test_leaderboard_plots_quality_against_cost_with_the_pareto_front(tmp_path, shared_dir, proxy_process):
    """Three agents from one real report: the cheap perfect one dominates a dearer worse one; a cheaper
    worse one stays on the front. Runs without model usage are left out of the plot."""
    refs_path = shared_dir / "finmcp" / "demo_infer.json"
    refs = load_references(refs_path)
    db = tmp_path / "trace.sqlite"
    with FakeLLM() as llm:
        proxy = proxy_process(
            ["--upstream", "http://127.0.0.1:9/mcp", "--db", str(db), "--llm-upstream", llm.url]
        )
        assert (
            _post(proxy.base, f"/r/perfect/s/{refs.samples[0].id}/t/0/v1/messages", {"model": "fake"})[0]
            == 200
        )
        _rows(db, "perfect", 1)
    _add_calls(db, rows_from_refs(refs, "perfect"))
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"fake": {"input": 1, "output": 2}}))
    out = tmp_path / "out"
    args = ["score", "--bench", str(refs_path), "--db", str(db), "--run", "perfect", "--bootstrap", "0"]
    assert main([*args, "--prices", str(prices), "--report-dir", str(out), "--format", "json"]) == 0
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    base = Report.from_dict(data)
    cost = data["model_usage"]["totals"]["cost_usd"]
    assert cost == pytest.approx((11 + 7 * 2 + 3) / 1e6)

    def variant(tf1: float, dollars: float) -> Report:
        other = json.loads(json.dumps(data))
        other["official"]["overall"]["macro_F1"] = tf1
        other["model_usage"]["totals"]["cost_usd"] = dollars
        return Report.from_dict(other)

    no_door = json.loads(json.dumps(data))
    del no_door["model_usage"]
    rows = [
        ("perfect", base),
        ("dear", variant(0.5, cost * 3)),
        ("cheap", variant(0.4, cost / 2)),
        ("plain", Report.from_dict(no_door)),
    ]
    assert [p[0] for p in pareto_front(cost_points(rows)[0])] == ["cheap", "perfect"]
    page = render_leaderboard_html(rows, LEADERBOARD, [])
    assert '<svg class="pareto"' in page and "model cost ($)" in page
    assert page.count('class="agent on-front"') == 2 and page.count('class="agent"') == 1
    assert 'data-agent="plain"' not in page and '<polyline class="front"' in page
