"""``World.strategy_nav_days`` continuing from a year-end mark equals the full NAV series bit for bit."""

from __future__ import annotations

from datetime import date

import pytest

from finmcp.server.world import World

SPANS = (
    (None, None),
    (date(2025, 8, 6), date(2025, 9, 26)),
    (date(2025, 1, 1), None),  # a year's first days: the previous day is the mark itself
    (date(2024, 12, 31), date(2025, 1, 3)),
    (date(2021, 6, 15), date(2023, 2, 1)),
    (date(2010, 1, 1), date(2016, 3, 1)),  # before the setup
    (date(2025, 9, 27), date(2025, 9, 28)),  # no trading day
    (date(2025, 9, 1), date(2025, 8, 1)),  # start after end
    (date(2026, 1, 1), None),  # after as_of
)


def _rows_from_series(world: World, code: str, start: date | None, end: date | None) -> list[tuple]:
    found = world.strategy_nav(code)
    assert found is not None
    series = found[0]
    return [(series.dates[i], series.nav[i], series.rounded_return(i)) for i in series.positions(start, end)]


@pytest.mark.parametrize("seed", [0, 3])
def test_spans_from_marks_equal_the_series(seed: int, monkeypatch) -> None:
    monkeypatch.setattr(World, "CACHE_LIMITS", {**World.CACHE_LIMITS, "strategy_nav": 1})
    world, reference = World(seed), World(seed)
    codes = world.strategy_codes()[::60]
    other = world.strategy_codes()[1]
    for code in codes:
        world.strategy_nav(code)  # builds the marks; another strategy's NAV evicts this one's series
        for start, end in SPANS:
            world.strategy_nav(other)
            expected = _rows_from_series(reference, code, start, end)
            assert repr(world.strategy_nav_days(code, start, end)) == repr(expected), (code, start, end)
    assert world.cache_sizes()["strategy_marks"] == len(codes) + 1


def test_unknown_strategy() -> None:
    with pytest.raises(KeyError, match="ZZ0"):
        World(0).strategy_nav_days("ZZ0")
