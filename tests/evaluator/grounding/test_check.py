"""Matching: tolerant of formatting (rounding, %, 万/亿, separators, full width), not of value changes;
stale values (outputs and world), swapped entities, derived numbers, evidence paths."""

from __future__ import annotations

import json
from datetime import date

import pytest

from finmcp.evaluator.grounding.check import Checker, check_answer

OUTPUT = json.dumps(
    {
        "funds": [
            {
                "fundCode": "000957",
                "fundName": "甲基金A",
                "nav": 1.23456,
                "navDate": "2025-09-30",
                "yield": 0.1234,
                "size": 152345678,
                "fee": 0.0015,
            },
            {
                "fundCode": "000958",
                "fundName": "乙基金C",
                "nav": 2.5,
                "navDate": "2025-09-30",
                "yield": 0.05,
                "size": 9870,
                "fee": 0.006,
            },
        ],
        "history": [
            {"fundCode": "000957", "date": "2025-09-29", "nav": 1.2011},
            {"fundCode": "000957", "date": "2025-09-30", "nav": 1.23456},
        ],
    },
    ensure_ascii=False,
)


@pytest.fixture(scope="module")
def checker() -> Checker:
    return Checker(0)


def verdicts(checker: Checker, answer: str, outputs: list | None = None) -> list[tuple[str, str, str]]:
    result = checker.check(answer, outputs if outputs is not None else [("c1:Search", OUTPUT)])
    return [(c.text, c.verdict, c.evidence) for c in result.claims]


@pytest.mark.parametrize(
    "shown",
    [
        "1.2346",
        "1.23",
        "1.2",
        "１．２３",
        "12.34%",
        "12.3%",
        "0.1234",
        "1.52亿",
        "1.5亿元",
        "15234.57万",
        "152,345,678",
        "0.15%",
        "15BP",
    ],
)
def test_formatting_is_tolerated(checker: Checker, shown: str) -> None:
    (claim,) = [v for v in verdicts(checker, f"结果：{shown}。") if v[0] != "结果"]
    assert claim[1] == "supported", claim
    assert claim[2].startswith("c1:Search $.")


@pytest.mark.parametrize("shown", ["1.2347", "1.24", "12.5%", "1.6亿", "152,345,679", "0.16%", "16BP"])
def test_value_changes_are_not(checker: Checker, shown: str) -> None:
    assert [v[1] for v in verdicts(checker, f"结果：{shown}。")] == ["unsupported"]


def test_evidence_names_call_and_json_path(checker: Checker) -> None:
    assert verdicts(checker, "甲基金A（000957）的净值为1.2346。") == [
        ("000957", "supported", "c1:Search $.funds[0].fundCode"),
        ("1.2346", "supported", "c1:Search $.funds[0].nav"),
    ]


def test_another_entitys_value_is_unsupported(checker: Checker) -> None:
    got = verdicts(checker, "000958的净值为1.2346。")
    assert got[1][1] == "unsupported" and "another entity" in got[1][2]


def test_a_value_of_another_date_is_stale(checker: Checker) -> None:
    got = verdicts(checker, "000957在2025-09-30的净值为1.2011。")
    assert got[2][:2] == ("1.2011", "stale")
    assert "c1:Search $.history[0].nav" in got[2][2]


def test_world_facts_support_and_stale(checker: Checker) -> None:
    world = checker.world
    code = next(c for c in world.fund_codes() if world.fund_stub(c).fund_type == "股票型")
    rows = world.nav_history(code, date(2025, 9, 1), date(2025, 9, 30))
    day, other = rows[-1], next(r for r in reversed(rows) if abs(r["nav"] - rows[-1]["nav"]) > 0.001)
    ok = checker.check(f"{code}在{day['date']}的单位净值为{day['nav']:.4f}。", [])
    assert [c.verdict for c in ok.claims] == ["supported", "supported", "supported"], ok.to_dict()
    assert ok.claims[2].evidence == f"world: fund {code} nav on {day['date']} = {day['nav']}"
    stale = checker.check(f"{code}在{day['date']}的单位净值为{other['nav']:.4f}。", [])
    assert stale.claims[2].verdict == "stale"
    assert f"on {other['date']}" in stale.claims[2].evidence


def test_codes_dates_and_names_absent_from_outputs(checker: Checker) -> None:
    got = verdicts(checker, "另有000123，2025-10-08公布。")
    assert [v[1] for v in got] == ["unsupported", "unsupported"]


def test_derived_sum_of_one_objects_numbers_is_supported(checker: Checker) -> None:
    out = [("c2:Assets", json.dumps({"liquid": 400000.5, "invest": 20000.25}))]
    got = verdicts(checker, "合计420000.75元", out)
    assert got[0][1] == "supported" and got[0][2].startswith("derived: 400000.5 + 20000.25")


def test_counts_and_periods_not_stated_are_not_checkable(checker: Checker) -> None:
    got = verdicts(checker, "以下5只基金，建议持有3年以上；共2只。")
    assert [v[1] for v in got] == ["not_checkable", "not_checkable", "supported"]  # the list has 2 funds


def test_plain_text_outputs_and_the_question(checker: Checker) -> None:
    outputs = [("m1", "策略代码：ZH013136\n策略净值：1.5146\n年化收益率：4.94%")]
    result = checker.check("ZH013136净值1.51，年化4.9%，目标6%。", outputs, question="目标收益6%可以吗")
    assert [(c.text, c.verdict) for c in result.claims] == [
        ("ZH013136", "supported"),
        ("1.51", "supported"),
        ("4.9%", "supported"),
        ("6%", "supported"),
    ]
    assert result.claims[3].evidence == "question line 1"


def test_check_answer_entry_point_any_source() -> None:
    result = check_answer("净值1.2346", [("any-id", {"structuredContent": {"nav": 1.23456}, "content": []})])
    assert result.to_dict()["claims"][0]["evidence"] == "any-id $.nav"
