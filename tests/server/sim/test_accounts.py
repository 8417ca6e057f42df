"""User-account tools: schema-valid, real-looking, coherent with each other and the strategy tools."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest

from finmcp.server.sim import Simulator
from finmcp.server.sim.qieman.accounts import china_midnight_ms
from finmcp.tool_specs.inventory import load_inventory

CHINA = timezone(timedelta(hours=8))
USER_TOOLS = (
    "GetUserAssetView",
    "GetUserAssetBrief",
    "GetProfitCalendar",
    "GetUserAssetHoldingDistribution",
)


@pytest.fixture(scope="module")
def user_ids(sim) -> list[str]:
    return sim.world.user_ids(12)


def test_every_tool_valid_for_many_users(user_ids, call):
    for uid in user_ids:
        for tool in USER_TOOLS:
            call(tool, {"userId": uid})


def test_view_ids_and_products_resolve(user_ids, call):
    for uid in user_ids[:6]:
        view = call("GetUserAssetView", {"userId": uid})
        assert view["rootView"]["assetType"] == "ROOT_ACCOUNT"
        assert view["walletView"]["assetType"] == "WALLET_ACCOUNT"
        ids = [view["rootView"]["assetId"], view["walletView"]["assetId"]]
        for sub in view["umaViewList"]:
            assert sub["assetType"] == "SUB_ACCOUNT" and sub["holdingProdList"]
            ids.append(sub["assetId"])
            for prod in sub["holdingProdList"]:
                ids.append(prod["assetId"])
                assert prod["assetType"] == "PROD" and prod["isOnlyProd"] is True
                if prod["assetCode"] != "FUND":  # a strategy: resolves in the strategy tools
                    risk = call("GetStrategyRiskInfo", {"strategyCode": prod["assetCode"]})
                    assert risk["strategyName"] == prod["assetName"]
        assert len(ids) == len(set(ids))
        assert all(i.startswith("SA0A0JT") and len(i) == 15 for i in ids)


def test_chain_view_composition_latest_profit(user_ids, call):
    """As in demo sample 2: sub-account ids from the view, fund codes from the held strategies."""
    uid = next(
        u
        for u in user_ids
        if any(
            p["assetCode"] != "FUND"
            for s in call("GetUserAssetView", {"userId": u})["umaViewList"]
            for p in s["holdingProdList"]
        )
    )
    view = call("GetUserAssetView", {"userId": uid})
    brief = call("GetUserAssetBrief", {"userId": uid})
    sub = next(s for s in view["umaViewList"] if any(p["assetCode"] != "FUND" for p in s["holdingProdList"]))
    strategies = [p["assetCode"] for p in sub["holdingProdList"] if p["assetCode"] != "FUND"]
    comp = call("BatchGetStrategiesComposition", {"strategyCodes": strategies})
    fund_codes = sorted({f["基金代码"] for c in comp.values() for cat in c.values() for f in cat["持有成分"]})
    profits = call(
        "GetFundLatestProfit",
        {"userId": uid, "serviceAccountIdList": [sub["assetId"]], "fundCodeList": fund_codes},
    )
    assert {p["fundCode"] for p in profits} == set(fund_codes)
    profit_day = datetime.fromtimestamp(brief["profitDate"] / 1000, CHINA).date().isoformat()
    assert all(p["profitDate"] == profit_day for p in profits)
    assert all(p["zeroAsset"] is False for p in profits)
    names = {
        f["基金代码"]: f["基金名称"] for c in comp.values() for cat in c.values() for f in cat["持有成分"]
    }
    assert all(p["fundName"] == names[p["fundCode"]] for p in profits)


def test_latest_profit_filters_and_bad_input(user_ids, sim, call):
    uid = user_ids[0]
    user = sim.world.user(uid)
    held = sorted({p["fund_code"] for p in user.positions})
    all_subs = [s["account_id"] for s in user.sub_accounts]
    every = call(
        "GetFundLatestProfit", {"userId": uid, "serviceAccountIdList": all_subs, "fundCodeList": held}
    )
    assert [p["fundCode"] for p in every] == held
    assert (
        call(
            "GetFundLatestProfit",
            {"userId": uid, "serviceAccountIdList": ["SA0A0JT00000000"], "fundCodeList": held},
        )
        == []
    )
    not_held = next(c for c in sim.world.fund_codes() if c not in held)
    assert (
        call(
            "GetFundLatestProfit",
            {"userId": uid, "serviceAccountIdList": all_subs, "fundCodeList": [not_held]},
        )
        == []
    )
    bad = sim.simulate(
        "GetFundLatestProfit", {"userId": uid, "serviceAccountIdList": all_subs, "fundCodeList": ["12AB"]}
    )
    assert bad["isError"] and "fundCodeList[0]" in bad["content"][0]["text"]


def test_brief_calendar_and_distribution_agree(user_ids, call):
    for uid in user_ids[:6]:
        brief = call("GetUserAssetBrief", {"userId": uid})
        calendar = call("GetProfitCalendar", {"userId": uid})
        dist = call("GetUserAssetHoldingDistribution", {"userId": uid})
        latest = calendar["profitList"][0]
        assert china_midnight_ms(date.fromisoformat(latest["profitDate"])) == brief["profitDate"]
        assert latest["dailyProfit"] == brief["latestDailyProfit"]
        days = [r["profitDate"] for r in calendar["profitList"]]
        assert days == sorted(days, reverse=True)
        assert (calendar["startDate"], calendar["endDate"]) == (days[-1], days[0])
        assert abs(calendar["totalProfit"] - sum(r["dailyProfit"] for r in calendar["profitList"])) < 0.01
        assert dist["totalAsset"] == brief["totalAsset"]
        assert abs(sum(p["ratio"] for p in dist["prodDistribution"]) - 1) < 0.002
        assert abs(sum(p["amount"] for p in dist["prodDistribution"]) - dist["totalAsset"]) < 0.05
        tree = dist["assetClassCategoryInfo"]
        assert abs(sum(n["amount"] for n in tree) - dist["totalAsset"]) < 0.05
        assert abs(sum(n["ratio"] for n in tree) - 1) < 1e-6


def test_malformed_user_ids_are_errors(sim):
    for tool in USER_TOOLS:
        for bad in ("", "XYZ", "9B989C9D999F93", "9b989c9d999f9"):
            result = sim.simulate(tool, {"userId": bad})
            assert result["isError"] is True, (tool, bad)
            assert "userId" in result["content"][0]["text"]


def test_china_midnight_matches_the_real_sample_convention():
    # demo sample 2 prints profitDate 1755187200000 for profits of 2025-08-15
    assert china_midnight_ms(date(2025, 8, 15)) == 1755187200000


def test_deterministic_across_fresh_simulators(user_ids):
    a, b = Simulator(load_inventory("qieman79"), seed=0), Simulator(load_inventory("qieman79"), seed=0)
    for tool in USER_TOOLS:
        args = {"userId": user_ids[2]}
        assert a.simulate(tool, args)["content"][0]["text"] == b.simulate(tool, args)["content"][0]["text"]


# ------------------------------------------------------------------ against the real samples
def test_key_order_matches_real_outputs(recorded, user_ids, sim, call):
    uid = user_ids[0]
    real_view = recorded("GetUserAssetView")[0]
    view = call("GetUserAssetView", {"userId": uid})
    assert list(view) == list(real_view)
    assert list(view["rootView"]) == list(real_view["rootView"])
    assert list(view["umaViewList"][0]) == list(real_view["umaViewList"][0])
    assert list(view["umaViewList"][0]["holdingProdList"][0]) == list(
        real_view["umaViewList"][0]["holdingProdList"][0]
    )
    assert view["rootView"]["assetName"] == real_view["rootView"]["assetName"]
    assert view["walletView"]["assetName"] == real_view["walletView"]["assetName"]
    assert list(call("GetUserAssetBrief", {"userId": uid})) == list(recorded("GetUserAssetBrief")[0])
    user = sim.world.user(uid)
    profits = call(
        "GetFundLatestProfit",
        {
            "userId": uid,
            "serviceAccountIdList": [s["account_id"] for s in user.sub_accounts],
            "fundCodeList": [p["fund_code"] for p in user.positions],
        },
    )
    assert list(profits[0]) == list(recorded("GetFundLatestProfit")[0][0])
