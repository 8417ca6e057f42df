"""``World.fund_latest`` (the lean path: no series, no record) equals ``Fund.latest`` bit for bit."""

from __future__ import annotations

from datetime import date

import pytest

from finmcp.server.world import World
from finmcp.server.world import trading_calendar as cal
from finmcp.server.world.fund_navs import split_plan


def _with_splits(world: World, n: int) -> list[str]:
    """Funds whose history has a share split (about 3 in 100; found from the plans, not the series)."""
    return [c for c, stub in world.fund_universe().items() if split_plan(world.seed, stub)][:n]


def _assert_same(world: World, codes: list[str]) -> None:
    for code in codes:
        full = world.require_fund(code).latest
        lean = world.fund_latest(code)
        # repr: floats equal to the last bit (and None stays None), keys in the same order
        assert repr(lean) == repr(full), code


@pytest.mark.parametrize("seed", [0, 3])
def test_lean_latest_equals_the_series_latest(seed: int) -> None:
    world = World(seed)
    codes = world.fund_codes()
    sample = codes[::97]
    with_splits = _with_splits(world, 6)
    money = world.codes_by_type("货币型")[:3]
    assert with_splits and money
    _assert_same(world, sample + with_splits + money)
    assert any(world.require_fund(c).dividends for c in sample)
    # an earlier as_of: funds set up after it have no NAV at all
    early = World(seed, as_of=date(2016, 3, 15))
    unborn = [c for c in sample if early.fund_stub(c).setup_date > early.as_of][:10]
    assert unborn and early.fund_latest(unborn[0])["nav"] is None
    _assert_same(early, sample + unborn)


def test_an_event_or_the_setup_on_the_last_day() -> None:
    world = World(0)
    floor = date(2015, 1, 1)  # the earliest as_of a world accepts
    cases = []  # (fund, a day with its dividend or split, or its first NAV)
    for code in world.fund_codes()[::97]:
        paid = [
            d for r in world.require_fund(code).dividends if (d := date.fromisoformat(r["ex_date"])) > floor
        ]
        if paid:
            cases.append((code, paid[-1]))
    splits = [
        (c, d) for c, stub in world.fund_universe().items() for d, _ in split_plan(0, stub) if d > floor
    ]
    cases = cases[:2] + splits[:1]
    setup = [(c, d) for c, stub in world.fund_universe().items() if (d := stub.setup_date) > floor]
    code, day = setup[0]
    cases.append((code, cal.all_trading_days()[cal.index_on_or_after(day)]))
    assert len(cases) == 4
    for code, day in cases:
        on_the_day = World(0, as_of=day)
        _assert_same(on_the_day, [code])
        assert on_the_day.fund_latest(code)["nav_date"] == cal.trading_day_on_or_before(day).isoformat()
    assert World(0, as_of=cases[-1][1]).fund_latest(cases[-1][0])["daily_return"] is None


def test_unknown_codes_and_independent_copies() -> None:
    world = World(0)
    with pytest.raises(KeyError, match="999999"):
        world.fund_latest("999999")
    code = world.fund_codes()[5]
    first = world.fund_latest(code)
    first["nav"] = -1.0
    assert world.fund_latest(code)["nav"] != -1.0
