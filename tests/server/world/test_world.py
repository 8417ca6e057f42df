"""Tests for the seeded synthetic financial world (server.world)."""

from __future__ import annotations

import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

from finmcp.server.world import World, is_trading_day, queries, trading_days, txn_day_range
from finmcp.server.world.quant import max_drawdown
from tests.server.world.snapshot import EXTRA_FUNDS, EXTRA_STRATEGIES, USER, digest, snapshot, world

_SUBPROCESS = """
import sys
sys.path.insert(0, {repo!r})
from tests.server.world.snapshot import digest, snapshot, world
print(digest(snapshot(world({seed}), "reversed")))
"""


@pytest.mark.slow
def test_same_seed_same_bytes_any_order_and_process():
    forward = snapshot(world(0), "forward")
    assert snapshot(world(0), "reversed") == forward
    repo = str(Path(__file__).resolve().parents[3])
    proc = subprocess.run(
        [sys.executable, "-c", _SUBPROCESS.format(repo=repo, seed=0)],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345", "PATH": ""},
    )
    assert proc.stdout.strip() == digest(forward)


def test_different_seed_different_world():
    a, b = world(0), world(1)
    assert a.fund_codes() != b.fund_codes()
    assert a.strategy_codes() != b.strategy_codes()
    assert a.user(USER).to_dict() != b.user(USER).to_dict()
    assert a.fund("161128").to_dict() != b.fund("161128").to_dict()


def test_nav_returns_consistent_with_series():
    w = world(0)
    checked = 0
    for code in w.fund_codes()[::60]:
        fund = w.fund(code)
        series, _, _ = w.fund_nav_series(code)
        if len(series.dates) < 300:
            continue
        perf = fund.performance
        assert perf["成立来"] == pytest.approx(series.adj[-1] / series.adj[0] - 1, abs=1e-6)
        base = series.index_of(date(2024, 9, 30))
        assert perf["近1年"] == pytest.approx(series.adj[-1] / series.adj[base] - 1, abs=1e-6)
        assert w.quick_return(code, 12) == pytest.approx(perf["近1年"], abs=1e-5)
        assert perf["成立来最大回撤"] == pytest.approx(
            max_drawdown(series.adj, 0, len(series.adj) - 1), abs=1e-6
        )
        assert fund.latest["nav"] == series.nav[-1] and fund.latest["nav_date"] == series.dates[-1]
        # unit NAV and accumulated NAV differ exactly by the dividends paid
        paid = sum(d["cash_per_unit"] for d in fund.dividends)
        if not fund.splits:
            assert series.acc_nav[-1] - series.nav[-1] == pytest.approx(paid, abs=2e-4)
        checked += 1
    assert checked >= 10


def test_nav_series_on_trading_days_and_type_volatility():
    w = world(0)
    vols: dict[str, list[float]] = {}
    for code in w.fund_codes()[::15]:
        stub = w.fund_stub(code)
        series, _, _ = w.fund_nav_series(code)
        assert all(is_trading_day(date.fromisoformat(d)) for d in series.dates[-40:])
        assert series.dates[0] >= stub.setup_date.isoformat() and series.dates[-1] <= "2025-09-30"
        v = w.fund(code).performance.get("近1年波动率")
        if v is not None:
            vols.setdefault(stub.fund_type, []).append(v)
    med = {t: sorted(x)[len(x) // 2] for t, x in vols.items()}
    assert med["货币型"] < 0.005 < med["债券型"] < 0.05 < med["指数型"]
    assert med["股票型"] > 0.12


def test_money_fund_yields():
    w = world(0)
    code = w.codes_by_type("货币型")[0]
    fund = w.fund(code)
    assert fund.latest["nav"] == 1.0
    assert 0.5 < fund.latest["yield_7d"] < 4.0
    assert fund.latest["unit_yield"] > 0


def test_strategy_weights_sum_to_one_and_tree_consistent():
    w = world(0)
    for code in w.strategy_codes()[::15] + ["J7"]:
        st = w.strategy(code)
        assert sum(c["weight_bp"] for c in st.composition) == 10000
        assert sum(c["weight"] for c in st.composition) == pytest.approx(1.0, abs=1e-3)
        assert all(w.fund_stub(c["fund_code"]) is not None for c in st.composition)
        assert sum(n["ratio"] for n in st.asset_classes) == pytest.approx(1.0, abs=1e-9)

        def check(node):
            if node["children"]:
                assert sum(k["ratio"] for k in node["children"]) == pytest.approx(node["ratio"], abs=1e-9)
                assert [k["levelType"] for k in node["children"]][0] == {
                    "TOP_LEVEL": "LEVEL1",
                    "LEVEL1": "LEVEL2",
                }[node["levelType"]]
            for k in node["children"]:
                check(k)

        for n in st.asset_classes:
            check(n)
        assert st.risk_level in range(1, 6)


def test_calendar_known_days():
    for d in [date(2025, 10, 1) + __import__("datetime").timedelta(days=i) for i in range(8)]:
        assert not is_trading_day(d)
    assert not is_trading_day(date(2025, 1, 29))  # Spring Festival
    assert not is_trading_day(date(2025, 9, 28))  # Sunday make-up workday: exchanges closed
    assert is_trading_day(date(2025, 9, 24))  # a normal Wednesday
    assert is_trading_day(date(2025, 10, 9))
    assert trading_days(date(2025, 9, 29), date(2025, 10, 10)) == [
        date(2025, 9, 29),
        date(2025, 9, 30),
        date(2025, 10, 9),
        date(2025, 10, 10),
    ]
    assert txn_day_range(date(2025, 10, 3), 1, 1) == [
        date(2025, 9, 30),
        date(2025, 10, 9),
        date(2025, 10, 10),
    ]
    with pytest.raises(ValueError, match="before/after"):
        txn_day_range(date(2025, 10, 3), -1, 1)


def test_unknown_codes_and_bad_ids():
    w = world(0)
    unknown = next(f"{n:06d}" for n in range(999999, 0, -1) if f"{n:06d}" not in w.fund_universe())
    assert w.fund(unknown) is None and w.nav_history(unknown) is None
    assert w.strategy("ZH999999X") is None
    assert w.composite_model("AAP999999") is None
    with pytest.raises(ValueError, match="14 lowercase hex"):
        w.user("not-a-user")
    with pytest.raises(ValueError, match="6 digits"):
        World(0, extra_fund_codes=["12345"])


def test_require_lookups_return_the_record_or_name_the_unknown_code():
    w = world(0)
    code = w.fund_codes()[0]
    assert w.require_stub(code) is w.fund_stub(code)
    assert w.require_fund(code).code == code
    st_code = w.strategy_codes()[0]
    assert w.require_strategy(st_code).code == st_code
    unknown = next(f"{n:06d}" for n in range(999999, 0, -1) if f"{n:06d}" not in w.fund_universe())
    with pytest.raises(KeyError, match=f"fund '{unknown}' not in this world"):
        w.require_stub(unknown)
    with pytest.raises(KeyError, match=f"fund '{unknown}' not in this world"):
        w.require_fund(unknown)
    with pytest.raises(KeyError, match="strategy 'ZH999999X' not in this world"):
        w.require_strategy("ZH999999X")


def test_extra_codes_resolve_and_leave_the_rest_unchanged():
    w = world(0)
    plain = World(0)
    for code in EXTRA_FUNDS:
        assert w.fund(code) is not None and w.fund(code).code == code
    for code in EXTRA_STRATEGIES:
        assert w.strategy(code) is not None
    common = [c for c in plain.fund_codes()[::200] if c not in EXTRA_FUNDS]
    assert all(w.fund(c).to_dict() == plain.fund(c).to_dict() for c in common)
    hinted = World(0, extra_fund_codes={"161128": {"name": "易方达标普信息科技人民币A", "type": "QDII型"}})
    assert (
        hinted.fund("161128").name == "易方达标普信息科技人民币A"
        and hinted.fund("161128").fund_type == "QDII型"
    )


def test_search_funds_keyword_paging_and_sort():
    w = world(0)
    res = queries.search_funds(w, "中证红利", size=5)
    assert res["total"] >= 6
    assert all("中证红利" in f["name"] for f in res["funds"])
    pages = [
        f["code"]
        for p in range((res["total"] + 4) // 5)
        for f in queries.search_funds(w, "中证红利", page=p, size=5)["funds"]
    ]
    assert len(pages) == res["total"] == len(set(pages))
    money_funds = queries.search_funds(w, category="货币型", sort_column="七日年化收益率", size=20)["funds"]
    yields = [f["yearlyRoe"] for f in money_funds]
    assert yields == sorted(yields, reverse=True) and all(f["fund_type"] == "货币型" for f in money_funds)
    ranked = queries.search_funds(w, category="股票型", sort_column="近一年收益", sort_order="升序", size=10)[
        "funds"
    ]
    rets = [f["returnYear"] for f in ranked]
    assert rets == sorted(rets)
    assert queries.search_funds(w, "不存在的关键字XYZ") == {"total": 0, "funds": []}
    with pytest.raises(ValueError, match="sortColumn"):
        queries.search_funds(w, sort_column="nonsense")


def test_guess_popular_and_strategy_search():
    w = world(0)
    stub = w.fund_stub(w.fund_codes()[42])
    assert queries.guess_fund_code(w, stub.code)[0]["code"] == stub.code
    assert queries.guess_fund_code(w, stub.name)[0]["code"] == stub.code
    assert len(queries.popular_funds(w, 5)) == 5
    st = w.strategy(w.strategy_codes()[3])
    hits = queries.search_strategies(w, st.name, page=1, size=50)
    assert st.code in [s.code for s in hits["items"]]


def test_user_accounts_and_profits_consistent():
    w = world(0)
    user = w.user(USER)
    assert user.to_dict() == w.user(USER).to_dict()
    ids = [user.root_account_id, user.wallet_account_id] + [s["account_id"] for s in user.sub_accounts]
    assert all(len(i) == 15 and i.startswith("SA") and i.isupper() for i in ids)
    latest = w.user_latest_profits(USER)
    calendar = w.user_profit_calendar(USER)
    assert calendar[-1]["profit"] == pytest.approx(sum(r["daily_profit"] for r in latest), abs=0.02)
    brief = w.user_asset_brief(USER)
    assert brief["total_asset"] == pytest.approx(
        sum(p["value"] for p in user.positions) + user.wallet_balance, abs=0.05
    )
    dist = w.user_holding_distribution(USER)
    assert sum(n["ratio"] for n in dist["tree"]) == pytest.approx(1.0, abs=1e-9)


def test_content_search_and_announcements():
    w = world(0)
    res = queries.search_content(w, "news", "红利", date(2025, 9, 1), date(2025, 9, 30), page=1, size=5)
    assert all("红利" in (i["title"] + i["summary"] + "".join(i["tags"])) for i in res["items"])
    assert all("2025-09-01" <= i["publish_time"][:10] <= "2025-09-30" for i in res["items"])
    page2 = queries.search_content(w, "news", "红利", date(2025, 9, 1), date(2025, 9, 30), page=2, size=5)
    assert {i["id"] for i in res["items"]}.isdisjoint(i["id"] for i in page2["items"])
    assert (
        queries.search_content(w, "viewpoints", None, date(2025, 9, 1), date(2025, 9, 30), 1, 20)["total"] > 0
    )
    code = w.fund_codes()[7]
    anns = w.fund_announcements(code)
    assert anns and w.announcement_content(anns[0]["id"])["content"]
    assert w.announcement_content("800000000000") is None


def test_plans_and_composite_models():
    w = world(0)
    plan = w.asset_allocation_plan(0.06, 0.05)
    assert plan["plan_id"].startswith("AAP") and len(plan["plan_id"]) == 9
    assert sum(plan["weights"].values()) == pytest.approx(1.0, abs=1e-9)
    model = w.composite_model(plan["plan_id"])
    total = sum(f["weight"] for c in model["classes"] for f in c["funds"])
    assert total == pytest.approx(1.0, abs=1e-3)
    assert w.asset_allocation_plan(0.12)["weights"]["中国股票"] > plan["weights"]["中国股票"]


def test_market_data():
    w = world(0)
    s = w.index_series("000300")
    assert all(is_trading_day(date.fromisoformat(d)) for d in s.dates[-30:])
    assert 0.0 <= w.valuation("000300")["pe_percentile"] <= 1.0
    assert len(w.stocks()) == len({x["code"] for x in w.stocks()})
    assert w.stock(w.stocks()[0]["code"]) == w.stocks()[0]
    rows = w.nav_history(w.fund_codes()[5], date(2025, 9, 27), date(2025, 9, 30))
    assert [r["date"] for r in rows] == ["2025-09-29", "2025-09-30"]
    assert [p["period"] for p in w.macro("GDP同比")][-1] == "2025Q2"
    with pytest.raises(KeyError):
        w.macro("nonexistent")
