"""Arguments for tools a reference names without them (FinToolBench's select_tools): the question's
entities, dates in the format each parameter states, and values every fintool760 input schema accepts,
so the oracle's calls succeed through the real server (TESR = 1)."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from finmcp.evaluator.agents.arguments import DEFAULT_END, QuestionEntities, tool_arguments
from finmcp.evaluator.cli import main
from finmcp.tool_specs.inventory import load_inventory
from finmcp.tool_specs.model import META_KEY

EXTRA_QUESTIONS = (
    "Between 2023-01-03 and 2023-03-31, how did NYSE: NKE and $TSLA move against Bitcoin?",
    "请分析600519和基金000001在2022年的表现。",
    "What was Apple's revenue in FY2019?",
)


def tool(properties: dict, required: list[str] | None = None, source: str = "akshare") -> dict:
    return {
        "name": "t",
        "inputSchema": {"type": "object", "properties": properties, "required": required or []},
        "_meta": {META_KEY: {"source": source}},
    }


def test_question_entities():
    q = QuestionEntities.parse(
        "What is Amazon's FY2017 days payable outstanding (DPO)? Compare 600519 with (AAPL) on 2023/1/5, "
        "2023年11月8日 and 11月9日; 20240105; holdings of 000001; 比特币."
    )
    assert q.tickers == ["AMZN", "AAPL"]  # (DPO) abbreviates the words before it: not a ticker
    assert q.codes == ["600519", "000001"]
    assert q.dates == [date(2023, 1, 5), date(2023, 11, 8), date(2023, 11, 9), date(2024, 1, 5)]
    assert q.years == [2017] and q.cryptos == ["BTC"]
    assert q.window() == (date(2023, 1, 5), date(2024, 1, 5))
    assert QuestionEntities.parse("Nike from FY2016 to FY2018").window() == (
        date(2016, 1, 1),
        date(2018, 12, 31),
    )
    assert QuestionEntities.parse("净值 202312 月").codes == []  # a year-month, not a code
    empty = QuestionEntities.parse("看好哪些赛道")
    assert empty.window()[1] == DEFAULT_END and not empty.has_dates()


def test_dates_follow_the_stated_format_and_never_invert():
    q = QuestionEntities.parse("from 2023-11-08 to 2023-11-09")
    props = {
        "start_date": {"type": "string", "description": "Start of the date range. Format: YYYY-MM-DD."},
        "end_date": {"type": "string", "description": "End of the date range."},
        "since": {"type": "number", "description": "Start of the time window. Format: Unix timestamp."},
        "until": {"type": "number", "description": "End of the time window. Format: Unix timestamp."},
        "start": {"type": "string", "description": "Start of the time window. Format: YYYY-MM-DDTHH:MM:SS."},
        "date": {"type": "string", "description": "Date to query. One of: XXXX0331, XXXX0630."},
        "year": {"type": "number", "description": "Year."},
    }
    args = tool_arguments(tool(props, list(props)), q)
    assert args["start_date"] == "2023-11-08" and args["end_date"] == "20231109"  # akshare default format
    assert isinstance(args["since"], int) and args["since"] < args["until"]
    assert args["start"] == "2023-11-08T00:00:00" and args["date"] == "20230331" and args["year"] == 2023
    western = tool(
        {"end_date": {"type": "string", "description": "End of the date range."}}, ["end_date"], "rapidapi"
    )
    assert tool_arguments(western, q) == {"end_date": "2023-11-09"}


def test_optional_parameters_only_when_the_question_answers_them():
    props = {
        "symbol": {"type": "string", "description": "Stock code or ticker."},
        "start_date": {"type": "string", "description": "Start of the date range."},
        "adjust": {"type": "string", "description": "Price adjustment. One of: qfq, hfq."},
    }
    assert tool_arguments(tool(props), QuestionEntities.parse("看好哪些赛道")) == {}
    args = tool_arguments(tool(props), QuestionEntities.parse("600519 在 2023年5月21日"))
    assert args == {"symbol": "600519", "start_date": "20230421"}
    us = tool({"symbol": {"type": "string", "description": "Stock code or ticker."}}, ["symbol"], "rapidapi")
    assert tool_arguments(us, QuestionEntities.parse("Nike's margins")) == {"symbol": "NKE"}
    assert tool_arguments(us, QuestionEntities.parse("")) == {"symbol": "AAPL"}
    pick = tool(
        {"kind": {"type": "string", "description": "Kind. One of: 股票型, 债券型. Default: 债券型."}},
        ["kind"],
    )
    assert tool_arguments(pick, QuestionEntities.parse("")) == {"kind": "债券型"}
    assert tool_arguments(pick, QuestionEntities.parse("股票型基金")) == {"kind": "股票型"}
    assert tool_arguments(None, QuestionEntities.parse("")) == {}
    qieman = tool(
        {"fundCode": {"type": "string"}, "fundCodes": {"type": "array", "items": {"type": "string"}}},
        ["fundCode", "fundCodes"],
        "qieman",
    )
    assert tool_arguments(qieman, QuestionEntities.parse("基金161128怎么样")) == {
        "fundCode": "161128",
        "fundCodes": ["161128"],
    }


def test_every_fintool760_tool_gets_schema_valid_arguments():
    entities = [QuestionEntities.parse(q) for q in ["", *EXTRA_QUESTIONS]]
    for wire in load_inventory("fintool760").mcp_tools:
        validator = Draft202012Validator(wire["inputSchema"])
        for q in entities:
            args = tool_arguments(wire, q)
            assert validator.is_valid(args), (wire["name"], args, q.text[:60])


@pytest.mark.slow  # spawns finmcp-server and finmcp-proxy; 760 questions
@pytest.mark.shared
def test_oracle_succeeds_on_every_fintool760_tool(shared_dir: Path, tmp_path: Path):
    """One question per tool of fintool760 (question texts from the public sample and a few with dates,
    tickers and codes): every call the oracle makes succeeds, by both pass rules."""
    sample = [json.loads(line) for line in (shared_dir / "fintoolbench" / "questions_sample.jsonl").open()]
    texts = [s["question"] for s in sample] + list(EXTRA_QUESTIONS)
    names = load_inventory("fintool760").names
    bench = tmp_path / "every_tool.jsonl"
    lines = [
        {
            "id": f"t{i}",
            "question": texts[i % len(texts)],
            "answer": "A",
            "select_tools": [name],
            "tool_nums": 1,
        }
        for i, name in enumerate(names)
    ]
    bench.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines), encoding="utf-8")
    out = tmp_path / "report"
    status = main(
        ["run", "--bench", str(bench), "--inventory", "fintool760", "--agent", "oracle", "--spawn", "--run", "all",
         "--db", str(tmp_path / "runs.sqlite"), "--report-dir", str(out), "--bootstrap", "0", "--no-progress"]
    )  # fmt: skip
    assert status == 0
    report = json.loads((out / "report.json").read_text("utf-8"))
    for variant in ("fintoolbench", "fintoolbench_corrected"):
        records = report["fintoolbench"][variant]["records"]
        failed = [(r["id"], r["select_tools"], r["pass_reason"]) for r in records if r["pass"] != "passed"]
        assert not failed, failed[:10]
        assert report["fintoolbench"][variant]["metrics"]["cap"]["tesr"] == 1.0
    assert report["coverage"]["scored"] == len(names) == 760
