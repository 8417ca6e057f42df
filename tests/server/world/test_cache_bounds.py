"""Bounded world caches: a dropped entity comes back identical; lazy fund fields build the series late."""

from __future__ import annotations

from finmcp.server.world import World


def test_caches_stay_within_their_limits_and_rebuild_identically(monkeypatch) -> None:
    monkeypatch.setattr(
        World, "CACHE_LIMITS", {"fund_ret": 8, "nav": 2, "fund": 2, "strategy_nav": 2, "user": 2}
    )
    world = World(0)
    codes = world.fund_codes()[::400][:6]
    first = {c: (world.require_fund(c).to_dict(), world.nav_history(c)) for c in codes}
    sizes = world.cache_sizes()
    assert sizes["nav"] <= 2 and sizes["fund"] <= 2 and sizes["fund_ret"] <= 8
    again = {c: (world.require_fund(c).to_dict(), world.nav_history(c)) for c in codes}
    assert again == first
    unbounded = World(0)
    assert {c: (unbounded.require_fund(c).to_dict(), unbounded.nav_history(c)) for c in codes} == first


def test_fund_fields_from_the_series_are_built_when_read() -> None:
    world = World(0)
    code = world.fund_codes()[7]
    fund = world.require_fund(code)
    assert fund.trade["min_buy"] > 0 and fund.fees
    assert world.cache_sizes().get("nav", 0) == 0  # fees and trade rules need no NAV history
    series, dividends, _ = world.fund_nav_series(code)
    assert fund.latest["nav"] == series.nav[-1] and fund.latest["nav_date"] == series.dates[-1]
    assert fund.dividends == dividends
    assert list(fund.to_dict())[-4:] == ["dividends", "splits", "latest", "performance"]
