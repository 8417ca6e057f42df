"""The injected corpus: detection F1 >= 0.95, and no false alarm on the oracle's gold answers.

``sim``: finmcp-sim's gold replies (what the ``oracle`` agent answers) with their recorded outputs;
``facts``: answers stating values of those outputs and of the world in the forms answers use. The
whole corpus runs in the slow test (about 40 s on one core); the fast one takes every fourth answer.
The official demo files' gold answers run when ../shared is present.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from finmcp.evaluator.grounding.check import Checker
from finmcp.evaluator.grounding.corpus import Item, fact_items, official_items, sim_items
from finmcp.evaluator.grounding.validate import validate


@pytest.fixture(scope="module")
def checker() -> Checker:
    return Checker(0)


@pytest.fixture(scope="module")
def corpus(checker: Checker) -> dict[str, list[Item]]:
    sim = list(sim_items())
    return {"sim": sim, "facts": list(fact_items(sim, checker))}


def _assert_clean(result: dict, kinds: set[str]) -> None:
    assert result["false_alarms"] == []
    assert result["f1"] is not None and result["f1"] >= 0.95, result
    assert set(result["by_kind"]) == kinds, result["by_kind"].keys()


def test_every_fourth_answer(corpus: dict[str, list[Item]], checker: Checker) -> None:
    sim = validate(corpus["sim"][::4], checker)
    facts = validate(corpus["facts"][::4], checker)
    _assert_clean(sim, {"entity", "number"})
    _assert_clean(facts, {"entity", "number", "code", "date", "stale"})
    assert facts["by_kind"]["stale"]["as_stale"] == facts["by_kind"]["stale"]["injected"]


@pytest.mark.slow
def test_whole_corpus(corpus: dict[str, list[Item]], checker: Checker) -> None:
    sim = validate(corpus["sim"], checker)
    facts = validate(corpus["facts"], checker)
    assert (sim["clean"], sim["clean_claims"], facts["clean"], facts["clean_claims"]) == (
        1130,
        3096,
        722,
        7552,
    )
    _assert_clean(sim, {"entity", "number"})
    _assert_clean(facts, {"entity", "number", "code", "date", "stale"})
    assert sim["injected"] + facts["injected"] == 1950
    print("sim", {k: sim[k] for k in ("injected", "tp", "fp", "fn", "f1")})
    print("facts", {k: facts[k] for k in ("injected", "tp", "fp", "fn", "f1")})


def test_official_demo_gold_answers(shared_dir: Path, checker: Checker) -> None:
    items = list(official_items(shared_dir / "finmcp"))
    result = validate(items, checker)
    assert result["clean"] == 12
    assert result["f1"] is not None and result["f1"] >= 0.95, result
    # the official gold answers state numbers their outputs do not (ranges, estimates, advice): each
    # is listed with its evidence, none is counted as a false alarm of the checker, none is hidden
    assert result["false_alarms"] == []
    assert all(f["evidence"] for f in result["gold_flagged"])
