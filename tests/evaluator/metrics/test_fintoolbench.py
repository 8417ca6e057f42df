"""FinToolBench evaluation: the released logic (pass/fail, TIR..CSS, TMR/IMR/DMR), the corrected variant,
the rule judge and the cached OpenAI-compatible judge (against a loopback server)."""

from __future__ import annotations

import json
import sqlite3

import pytest

from finmcp.evaluator.inputs.fintoolbench_jsonl import result_prediction
from finmcp.evaluator.inputs.model import PredictionSet
from finmcp.evaluator.inputs.predictions import load_predictions_file
from finmcp.evaluator.inputs.references import load_references
from finmcp.evaluator.llm import ChatClient, RetryPolicy
from finmcp.evaluator.metrics.fintoolbench import (
    compliance_one,
    corrected_pass,
    determine_answer_type,
    evaluate_records,
    judge_score,
    load_tool_metadata,
    official_pass,
    summarize_capability,
)
from finmcp.evaluator.metrics.judges import JudgeCache, LLMJudge, build_prompt, make_judge
from finmcp.evaluator.metrics.options import EvalOptions
from finmcp.evaluator.metrics.rule_judge import RuleJudge, match_domain, match_intent, match_timeliness
from finmcp.evaluator.reports.pipeline import evaluate
from tests.evaluator.fake_llm import completion


class Scripted:
    """A judge replying from a function of (kind, fields, repeat); counts its calls."""

    name = "scripted"

    def __init__(self, reply):
        self.reply = reply
        self.calls = []

    def ask(self, kind, fields, repeat):
        self.calls.append((kind, fields.get("tool_name"), repeat))
        return self.reply(kind, fields, repeat)


def rec(calls, error=None, **kw):
    return {
        "id": kw.pop("id", "r"),
        "question": "q",
        "execution_result": "a",
        "ground_truth": "1",
        "error": error,
        "tool_calls": calls,
        **kw,
    }


def tc(step, output, name="t", **kw):
    return {"step": step, "tool_name": name, "parameters": {}, "output": output, **kw}


# ------------------------------------------------------------------ pass / fail


@pytest.mark.parametrize(
    ("record", "label", "reason"),
    [
        (rec([tc(1, "ok")], error="boom"), "failed", "example.error: boom"),
        (rec([]), "failed", "no tool_calls"),
        (rec([tc(1, {"error": "x"})]), "failed", "tool_call[0] output.error"),
        (
            rec([tc(1, "fine"), tc(1, "Traceback (most recent call last)")]),
            "failed",
            "tool_call[1] output error text",
        ),
        (
            rec([tc(1, '{"error": "429"}'), tc(2, "data")]),
            "passed",
            "tool_calls ok",
        ),  # earlier rounds forgiven
        (rec([tc(1, '{"error_code": 0, "rows": []}')]), "failed", "tool_call[0] output error text"),
        (rec([tc(1, ["error"]), tc(1, None), tc(1, "")]), "passed", "tool_calls ok"),
        (rec([tc(1, "工具返回内容过长")]), "passed", "tool_calls ok"),
    ],
)
def test_official_pass_rules(record, label, reason):
    assert official_pass(record) == (label, reason)


def test_corrected_pass_uses_structure_not_substrings():
    assert corrected_pass(rec([tc(1, '{"error_code": 0, "rows": []}')]))[0] == "passed"
    assert corrected_pass(rec([tc(1, "standard error of the estimate: 0.3")]))[0] == "passed"
    assert corrected_pass(rec([tc(1, '{"error": "HTTP 429"}')]))[0] == "failed"
    assert corrected_pass(rec([tc(1, "fine", status="tool_error")]))[0] == "failed"
    assert corrected_pass(rec([tc(1, "[error] timeout")]))[0] == "failed"
    # the agent's copy of the last output in `error` no longer fails a record by substring
    out = "news: exception clause in the merger"
    assert official_pass(rec([tc(1, out)], error=out))[0] == "failed"
    assert corrected_pass(rec([tc(1, out)], error=out))[0] == "passed"
    assert corrected_pass(rec([tc(1, "x")], error="execution_trace_empty"))[0] == "failed"


@pytest.mark.parametrize(
    ("gold", "kind"),
    [
        ("$8.70", "other_str"),
        ("55.1%", "numeric"),
        ("1,234", "numeric"),
        ("3亿", "numeric"),
        ("b", "choice"),
        ('[{"c1": {"content": "x", "score": "0.5"}}]', "criterium"),
        ("[1, 2", "other_str"),
        ("", "other_str"),
        ("海光信息、北方华创", "other_str"),
    ],
)
def test_answer_type(gold, kind):
    assert determine_answer_type(gold) == kind


def test_judge_score_parsing_binarising_and_majority():
    replies = iter(
        [
            'noise {"score": 0.6, "label": "Partial", "reason": "r1"} tail',
            "garbage",
            '{"score": 0.2, "label": "wrong"}',
        ]
    )
    judge = Scripted(lambda k, f, r: next(replies))
    assert judge_score(judge, "q", "a", "1", "numeric", 3) == (0.5, "partial", "r1")  # 0.6 -> 1, 0.2 -> 0
    assert judge_score(Scripted(lambda *a: ""), "q", "a", "gold", "other_str", 3) == (None, None, "")
    assert judge_score(Scripted(lambda *a: "x"), "q", "a", "", "other_str", 3) == (None, None, "")
    replies = iter(['{"score": 1, "label": "correct"}', '{"score": 0, "label": "wrong"}', '{"score": 7}'])
    assert judge_score(Scripted(lambda *a: next(replies)), "q", "a", "g", "other_str", 3)[:2] == (
        2 / 3,
        "correct",
    )


def test_capability_summary_edge_cases():
    assert summarize_capability([]) == {}
    rows = [
        {"tool_invoked": False, "pass": "failed", "score_mean": 1.0},
        {"tool_invoked": True, "pass": "passed", "score_mean": 0.5},
        {"tool_invoked": True, "pass": "failed", "score_mean": None},
        {"tool_invoked": True, "pass": "passed", "score_mean": 0.0},
    ]
    assert summarize_capability(rows) == {
        "tir": 0.75,
        "tesr": 0.5,
        "cer": 2 / 3,
        "css": 0.25,
        "soft_score": 0.5,
    }
    assert (
        summarize_capability([{"tool_invoked": False, "pass": "failed", "score_mean": None}])["cer"] is None
    )


def test_compliance_last_round_skips_and_duplicates():
    meta = {
        "a": {"timeliness": "daily", "intent_type": "informational", "regulatory_domains": ["fund"]},
        "b": {"timeliness": "realtime", "intent_type": "informational", "regulatory_domains": ["equity"]},
    }
    judge = Scripted(
        lambda k, f, r: '{"match": "no"}' if f["tool_name"] == "b" and k == "domain" else '{"match": "yes"}'
    )
    assert compliance_one("q", ["a", "a", "zz"], meta, judge) == {
        "eligible": True,
        "tmr": 0,
        "imr": 0,
        "dmr": 0,
        "judged_tools": 3,
        "with_metadata": 2,
        "verdicts": {"tmr": 2, "imr": 2, "dmr": 2},
    }
    assert len(judge.calls) == 6  # a twice per dimension, zz has no metadata
    assert compliance_one("q", ["a", "b"], meta, judge)["dmr"] == 1
    unsure = Scripted(lambda *a: '{"match": "maybe"}')
    skipped = compliance_one("q", ["b"], meta, unsure)
    assert {k: skipped[k] for k in ("eligible", "tmr", "imr", "dmr")} == {
        "eligible": True,
        "tmr": 0,
        "imr": 0,
        "dmr": 0,
    }
    assert skipped["verdicts"] == {"tmr": 0, "imr": 0, "dmr": 0}  # a skipped verdict counts as a match
    none = compliance_one("q", [], meta, unsure)
    assert {k: none[k] for k in ("eligible", "tmr", "imr", "dmr")} == {
        "eligible": False,
        "tmr": None,
        "imr": None,
        "dmr": None,
    }


def test_official_judges_last_round_corrected_every_round():
    meta = {
        "early": {"timeliness": "static", "intent_type": "transactional", "regulatory_domains": ["crypto"]},
        "late": {"timeliness": "daily", "intent_type": "informational", "regulatory_domains": ["fund"]},
    }
    judge = Scripted(
        lambda k, f, r: '{"match": "no"}' if f.get("tool_name") == "early" else '{"match": "yes", "score": 1}'
    )
    record = rec([tc(1, "x", "early"), tc(2, "y", "late")])
    _, official = evaluate_records([record], judge, meta, 1, corrected=False)
    _, corrected = evaluate_records([record], judge, meta, 1, corrected=True)
    rates = ("tmr", "imr", "dmr")
    assert {k: official["com"][k] for k in rates} == {"tmr": 0.0, "imr": 0.0, "dmr": 0.0}
    assert {k: corrected["com"][k] for k in rates} == {"tmr": 1.0, "imr": 1.0, "dmr": 1.0}
    assert (
        official["com"]["verdicts"] == {"tmr": 1, "imr": 1, "dmr": 1} and "na_reason" not in official["com"]
    )
    assert corrected["com"]["verdicts"] == {"tmr": 2, "imr": 2, "dmr": 2}


def test_tool_metadata_loader(tmp_path, shared_dir):
    assert load_tool_metadata(tmp_path / "missing.jsonl") == {}
    meta = load_tool_metadata(shared_dir / "fintoolbench" / "tools.jsonl")
    assert len(meta) == 760
    assert meta["amac_fund_info"]["timeliness"] == "as_filed" and meta["amac_fund_info"]["description"]


# ------------------------------------------------------------------ rule judge


@pytest.mark.parametrize(
    ("answer", "gold", "kind", "score"),
    [
        ("Amazon's DPO was 93.86 days.", "93.86", "numeric", 1.0),
        ("about 93.9", "93.86", "numeric", 0.0),
        ("The margin is 55.1 percent", "55.1%", "numeric", 1.0),
        ("约为0.551", "55.1%", "numeric", 1.0),
        ("答案是 B", "B", "choice", 1.0),
        ("A 或 B", "B", "choice", 0.0),
        ("海光信息和北方华创", "海光信息、北方华创", "other_str", 1.0),
        ("只有海光信息", "海光信息、北方华创", "other_str", 0.5),
        ("完全无关的回答", "海光信息、北方华创", "other_str", 0.0),
    ],
)
def test_rule_judge_scores(answer, gold, kind, score):
    reply = json.loads(RuleJudge().ask("score", {"answer": answer, "gold": gold, "answer_type": kind}, 0))
    assert reply["score"] == score


def test_rule_judge_criteria_weights():
    gold = json.dumps(
        [
            {"criterium1": {"content": "投资端改革可以提高市场流动性", "score": "0.6"}},
            {"criterium2": {"content": "吸引长期资金入市", "score": "0.4"}},
        ],
        ensure_ascii=False,
    )
    judge = RuleJudge()
    full = json.loads(
        judge.ask(
            "score",
            {
                "answer": "改革可以提高市场流动性，并吸引长期资金入市。",
                "gold": gold,
                "answer_type": "criterium",
            },
            0,
        )
    )
    part = json.loads(
        judge.ask(
            "score", {"answer": "改革可以提高市场流动性。", "gold": gold, "answer_type": "criterium"}, 0
        )
    )
    assert (full["score"], part["score"]) == (1.0, 0.5)


def test_rule_compliance_rules():
    assert match_timeliness("What is the real-time price of AAPL?", "daily") is False
    assert match_timeliness("What is the real-time price of AAPL?", "realtime") is True
    assert match_timeliness("FY2017 balance sheet of Amazon", "as_filed") is True
    assert match_timeliness("Tell me a joke", "daily") is None  # nothing to infer: verdict skipped
    assert match_intent("What is the NAV of fund 161128?", "transactional") is False
    assert match_intent("Please buy 100 shares of MSFT", "transactional") is True
    assert match_intent("Should I hold this fund?", "advisory") is True
    assert match_domain("基金净值是多少", ["equity"]) is False
    assert match_domain("基金净值是多少", ["fund"]) is True
    assert match_domain("宏观经济与CPI走势", ["economic_policy"]) is True  # related domains
    reply = json.loads(RuleJudge().ask("timeliness", {"question": "hello", "tag": "daily"}, 0))
    assert reply["match"] not in ("yes", "no")


# ------------------------------------------------------------------ LLM judge over loopback


JUDGE_REPLY = '{"score": 1, "label": "correct", "reason": "ok"}'


def _judge_server(fake_openai, status: int = 200):
    def script(body, n):
        assert body["messages"][0]["role"] == "user"
        assert body["temperature"] == 0.8 and body["max_tokens"] == 500
        if status != 200:
            return status, {"error": "down"}, 0.0
        return 200, completion(JUDGE_REPLY), 0.0

    return fake_openai(script)


def _judge(url: str, cache: JudgeCache | None = None, retries: int = 0) -> LLMJudge:
    chat = ChatClient(
        url, "m", temperature=0.8, max_tokens=500, retry=RetryPolicy(retries), sleep=lambda s: None
    )
    return LLMJudge(chat, cache)


def test_llm_judge_repeats_are_cached_per_repeat(fake_openai, tmp_path):
    server = _judge_server(fake_openai)
    cache_path = tmp_path / "judge.sqlite"
    judge = _judge(server.url, JudgeCache(cache_path))
    fields = {"question": "q", "answer": "a", "gold": "1", "answer_type": "numeric"}
    assert judge_score(judge, "q", "a", "1", "numeric", 3) == (1.0, "correct", "ok")
    assert len(server.requests) == 3  # three repeated judgments of the same prompt
    judge_score(judge, "q", "a", "1", "numeric", 3)
    assert len(server.requests) == 3  # all cached
    again = _judge(server.url, JudgeCache(cache_path))
    assert again.ask("score", fields, 2).startswith('{"score": 1')
    assert len(server.requests) == 3  # the SQLite cache survives a new judge


def test_llm_judge_failures_skip_the_verdict(fake_openai, tmp_path):
    server = _judge_server(fake_openai, status=500)
    cache_path = tmp_path / "judge.sqlite"
    judge = _judge(server.url, JudgeCache(cache_path), retries=1)
    assert judge.ask("score", {"answer_type": "numeric"}, 0) == ""
    assert len(server.requests) == 2  # one retry
    assert judge_score(judge, "q", "a", "1", "numeric", 1) == (None, None, "")
    with sqlite3.connect(cache_path) as con:  # a failure is never cached as an empty answer
        assert con.execute("SELECT COUNT(*) FROM judgments").fetchone()[0] == 0


def test_make_judge_and_prompts():
    assert make_judge("rules").name == "rules"
    with pytest.raises(ValueError, match="--judge llm needs --llm-url"):
        make_judge("llm")
    prompt = build_prompt("domain", {"question": "Q?", "tool_name": "t", "tag": ["fund"], "description": "d"})
    assert "Q?" in prompt and "['fund']" in prompt and '"match"' in prompt


# ------------------------------------------------------------------ end to end


def test_fintoolbench_run_end_to_end(tmp_path, shared_dir):
    refs = load_references(shared_dir / "fintoolbench" / "questions_sample.jsonl")
    lines = []
    for i, ref in enumerate(refs.samples[:4]):
        calls = [tc(1, "data", name) for name in [c.tool for c in ref.turns[0].calls[0]]]
        if i == 1:
            calls.append(tc(2, '{"error": "HTTP 500"}', "symbols_get_financials"))
        if i == 2:
            calls = []
        error = "execution failed" if i == 3 else None
        lines.append(
            {
                "id": ref.id,
                "question": ref.question,
                "execution_result": f"选 {ref.ground_truth}" if i == 2 else ref.ground_truth,
                "ground_truth": ref.ground_truth,
                "tool_calls": calls,
                "error": error,
                "setting": "full",
            }
        )
    path = tmp_path / "result_full.jsonl"
    path.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines), encoding="utf-8")
    preds = load_predictions_file(path)
    meta = load_tool_metadata(shared_dir / "fintoolbench" / "tools.jsonl")
    report = evaluate(
        refs, preds, EvalOptions(bootstrap=50, judge=RuleJudge(), judge_repeats=3, tool_meta=meta)
    ).to_dict()
    block = report["fintoolbench"]["fintoolbench"]["metrics"]["cap"]
    # 12 references, 4 records given: 8 empty; invoked: 3; passed: record 0 only (1 has a step-2 error,
    # 2 no call, 3 a record-level error that fails it without dropping it)
    assert block["tir"] == 3 / 12 and block["tesr"] == 1 / 12 and block["cer"] == 1 / 3
    assert report["coverage"]["dropped"] == [] and report["coverage"]["scored"] == 12
    assert report["benchmark"] == "fintoolbench" and "tool_selection" in report and "official" not in report
    rows = {r["id"]: r for r in report["samples"]}
    assert rows["financebench_1"]["fintoolbench"]["pass"] == "failed"
    assert rows["openfindata_release_2"]["fintoolbench"]["score_mean"] == 1.0  # choice "A" answered "A"
    assert rows["openfindata_release_2"]["fintoolbench"]["pass"] == "failed"  # but no tool call
    corrected = report["fintoolbench"]["fintoolbench_corrected"]["metrics"]["cap"]
    assert corrected["tesr"] == block["tesr"]


# ------------------------------------------------------------------ compliance over nothing


def test_compliance_without_verdicts_is_not_a_number():
    """A rate that rests on no verdict is None with its reason, never a perfect 0."""
    record = rec([tc(1, "rows", "a"), tc(1, "rows", "b")])
    yes = Scripted(lambda *a: '{"match": "yes"}')
    _, nothing = evaluate_records([record], yes, {}, 1)
    assert {k: nothing["com"][k] for k in ("tmr", "imr", "dmr")} == {"tmr": None, "imr": None, "dmr": None}
    assert nothing["com"]["na_reason"] == {k: "no tool metadata" for k in ("tmr", "imr", "dmr")}
    other = {"zz": {"timeliness": "daily", "intent_type": "informational", "regulatory_domains": ["fund"]}}
    _, unrelated = evaluate_records([record], yes, other, 1)
    assert unrelated["com"]["tmr"] is None
    assert unrelated["com"]["na_reason"]["tmr"] == "no called tool has tool metadata"
    meta = {"a": other["zz"]}
    _, unsure = evaluate_records([record], Scripted(lambda *a: "no idea"), meta, 1)
    assert unsure["com"]["na_reason"]["imr"] == "the judge gave no verdict"
    _, judged = evaluate_records([record], yes, meta, 1)
    assert judged["com"]["tmr"] == 0.0 and "na_reason" not in judged["com"]
    assert judged["com"]["judged_tools"] == 2 and judged["com"]["with_metadata"] == 1
    _, nobody = evaluate_records([rec([])], yes, meta, 1)
    assert nobody["com"]["na_reason"]["dmr"] == "no record with a named tool call"


def fintoolbench_preds(refs):
    """Result records calling every question's tools once, in one step, with plain row outputs."""
    by_sample = {}
    for r in refs.samples:
        record = {
            "id": r.id,
            "tool_calls": [tc(1, "rows", c.tool) for c in r.turns[0].calls[0]],
            "error": None,
        }
        by_sample[r.id] = [result_prediction(r.id, record, [])]
    return PredictionSet(by_sample, "fintoolbench_result", "memory")


@pytest.mark.shared
def test_compliance_cis_are_null_without_verdicts(shared_dir):
    refs = load_references(shared_dir / "fintoolbench" / "questions_sample.jsonl")
    report = evaluate(refs, fintoolbench_preds(refs), EvalOptions(bootstrap=50, judge=RuleJudge())).to_dict()
    block = report["fintoolbench"]
    assert block["tool_metadata"] == 0 and block["tool_metadata_source"] is None
    for variant in ("fintoolbench", "fintoolbench_corrected"):
        com = block[variant]["metrics"]["com"]
        assert com["tmr"] is None and com["na_reason"]["tmr"] == "no tool metadata"
        assert block[variant]["ci"][f"{variant}.tmr"]["lo"] is None
        assert block[variant]["metrics"]["cap"]["tesr"] == 1.0  # the other numbers are still there
    assert any("TMR/IMR/DMR n/a: no tool metadata" in w for w in report["warnings"])
