"""Claim extraction: what counts as a claim, in Chinese and English, and what the checker cannot read."""

from __future__ import annotations

import pytest

from finmcp.evaluator.grounding.check import Checker
from finmcp.evaluator.grounding.claims import extract_claims, unreadable
from finmcp.evaluator.grounding.lexicon import NameLexicon


@pytest.fixture(scope="module")
def checker() -> Checker:
    return Checker(0)


def kinds(text: str, lexicon: NameLexicon | None = None) -> list[tuple[str, str]]:
    return [(c.kind, c.text) for c in extract_claims(text, lexicon or NameLexicon())]


def test_numbers_with_units_codes_and_dates_zh() -> None:
    text = "截至2024年5月1日，000957的净值为1.2345，近一年收益率12.3%，规模1.5亿元，费率0.15%，共3只基金，ZH013136成立于2017-01-20。"
    assert kinds(text) == [
        ("date", "2024年5月1日"),
        ("fund_code", "000957"),
        ("number", "1.2345"),
        ("percent", "12.3%"),
        ("amount", "1.5亿元"),
        ("percent", "0.15%"),
        ("count", "3只"),
        ("strategy_code", "ZH013136"),
        ("date", "2017-01-20"),
    ]


def test_english_dates_and_amounts() -> None:
    text = "On May 1, 2024 the NAV of 000957 was 1.2345 and assets were 1,234,567 yuan (2.5 billion)."
    assert kinds(text) == [
        ("date", "May 1, 2024"),
        ("fund_code", "000957"),
        ("number", "1.2345"),
        ("amount", "1,234,567 yuan"),
        ("amount", "2.5 billion"),
    ]


def test_not_claims_list_markers_years_quarters_ordinals_times() -> None:
    text = "1. 第2名\n（3）2025年2季度报告 Top10 发布于23:30，A500与5G"
    assert kinds(text) == []


def test_full_width_digits_read_as_ascii_with_offsets_kept() -> None:
    text = "净值１．２３４５，涨幅１２．３％"
    claims = extract_claims(text, NameLexicon())
    assert [(c.kind, c.quantity.value if c.quantity else None) for c in claims] == [
        ("number", 1.2345),
        ("percent", 12.3),
    ]
    assert text[claims[0].start : claims[0].end] == "１．２３４５"


def test_names_from_the_world_longest_first_with_share_class(checker: Checker) -> None:
    stub = checker.world.fund_stub(checker.world.fund_codes()[3])
    claims = extract_claims(f"推荐{stub.name}，理由如下", checker.lexicon)
    assert [(c.kind, c.text) for c in claims] == [("name", stub.name)]


def test_short_names_only_where_they_stand_alone() -> None:
    lex = NameLexicon([("长期定投", "ZH000001")])
    assert kinds("长期来看，长期定投是可行的", lex) == []
    assert kinds("相关策略：长期定投、稳稳的宝", lex) == [("name", "长期定投")]


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("Привет, это ответ на русском языке", "language"),
        ("これは日本語の答えです。ひらがなとカタカナ", "language"),
        ('{"nav": 1.2345}', "JSON"),
        (None, "not text"),
        (b"\x00\x01", "not text"),
        ("abc\x00def", "control"),
    ],
)
def test_unreadable_answers_are_not_checkable_never_true(
    checker: Checker, answer: object, reason: str
) -> None:
    why = unreadable(answer)
    assert why is not None and reason.lower() in why.lower()
    result = checker.check(answer, [("c1", '{"nav": 1.2345}')])
    assert [c.verdict for c in result.claims] == ["not_checkable"]
    assert result.counts()["supported"] == 0
