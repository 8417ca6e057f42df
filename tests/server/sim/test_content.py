"""Simulated Qieman content tools (server/sim/qieman/content.py)."""

from __future__ import annotations

from typing import Any

import pytest

from finmcp.server.sim import Simulator
from finmcp.tool_specs.inventory import load_inventory

INVENTORY = load_inventory("qieman79")


SEARCHES = {
    "SearchFinancialNews": ("items", "totalPages", "publishDate"),
    "SearchManagerViewpoint": ("list", "totalPage", "publishTime"),
    "searchRealtimeAiAnalysis": ("items", "totalPages", "publishTime"),
    "searchInvestAdvisorContent": ("list", None, "publishTime"),
}


@pytest.mark.parametrize("tool", sorted(SEARCHES))
def test_search_pages_newest_first(sim, tool, call):
    items_key, pages_key, time_key = SEARCHES[tool]
    window = {"startDate": "2025-06-01", "endDate": "2025-09-30"}
    first = call(tool, {**window, "page": 1, "pageSize": 4})["data"]
    second = call(tool, {**window, "page": 2, "pageSize": 4})["data"]
    everything = call(tool, {**window, "pageSize": 100})["data"]
    assert first["total"] == second["total"] == everything["total"] > 8
    assert first[items_key] + second[items_key] == everything[items_key][:8]
    if pages_key:
        assert first[pages_key] == -(-first["total"] // 4)
    stamps = [it[time_key] for it in everything[items_key]]
    assert stamps == sorted(stamps, reverse=True)
    assert all("2025-06-01" <= s[:10] <= "2025-09-30" for s in stamps)


@pytest.mark.parametrize("tool", sorted(SEARCHES))
def test_search_refuses_bad_windows(sim, tool, error_text):
    assert "startDate" in error_text(tool, {"startDate": "2025-09-10", "endDate": "2025-09-01"})
    assert "endDate" in error_text(tool, {"endDate": "2025/09/01"})
    assert "longer than" in error_text(tool, {"startDate": "2019-01-01", "endDate": "2025-09-01"})
    assert "pageSize" in error_text(tool, {"pageSize": 101})


def test_news_keyword_filter_and_long_range(sim, call):
    news = call(
        "SearchFinancialNews", {"keyword": "降息", "startDate": "2024-01-01", "endDate": "2025-08-28"}
    )
    items = news["data"]["items"]
    assert news["success"] is True and len(items) == 20 and news["data"]["total"] > 20
    assert all("降息" in it["title"] + it["summary"] or "美联储" in it["title"] for it in items)
    assert all(it["publishDate"] <= "2025-08-28 23:59:59" for it in items)
    nothing = call("SearchFinancialNews", {"keyword": "完全不会出现的词"})
    assert nothing["data"]["total"] == 0 and nothing["data"]["items"] == []


def test_viewpoints_match_topic_words_and_name_real_funds(sim, call):
    bond = call(
        "SearchManagerViewpoint",
        {"keyword": "债券市场", "startDate": "2024-01-01", "endDate": "2025-08-28"},
    )
    rows = bond["data"]["list"]
    assert rows and all("债市" in r["title"] + r["viewpoint"] + r["topicName"] for r in rows)
    universe = sim.world.fund_universe()
    for r in rows:
        assert r["fundCode"] in universe and r["representativeFund"]["code"] in universe
        assert universe[r["fundCode"]].company + "基金" == r["companyName"]
    outlook = call("SearchManagerViewpoint", {"keyword": "市场展望", "pageSize": 3})
    assert outlook["data"]["pageSize"] == 3 and len(outlook["data"]["list"]) == 3


def test_advisor_content_filters_and_empty_answer(sim, call, error_text):
    assert call("searchInvestAdvisorContent", {"keyword": "量子计算", "type": "文章", "pageSize": 5}) == {}
    kind = call("searchInvestAdvisorContent", {"type": "专栏", "pageSize": 50})["data"]["list"]
    assert kind and all(it["type"] == "专栏" for it in kind)
    author = call("searchInvestAdvisorContent", {"author": "且慢投研", "pageSize": 50})["data"]["list"]
    assert author and all(it["author"] == "且慢投研" for it in author)
    assert "type" in error_text("searchInvestAdvisorContent", {"type": "视频"})


def test_ai_analysis_defaults_to_last_week(sim, call):
    data = call("searchRealtimeAiAnalysis", {})["data"]
    assert data["pageSize"] == 10 and data["items"]
    assert all(it["publishTime"] >= "2025-09-24" for it in data["items"])
    assert {it["impact"] for it in data["items"]} <= {"利好", "利空", "中性"}


def test_hot_topics(sim, call, error_text):
    topics = call("SearchHotTopic", {})
    assert topics["total"] == len(topics["topics"]) > 3
    heats = [t["heat"] for t in topics["topics"]]
    assert heats == sorted(heats, reverse=True) and [t["rank"] for t in topics["topics"]][:2] == [1, 2]
    gold = call("SearchHotTopic", {"keyword": "黄金", "publishedDate": "2025-09-01"})
    assert [t["topicName"] for t in gold["topics"]] == ["黄金"]
    assert "after today" in error_text("SearchHotTopic", {"publishedDate": "2025-12-01"})


def test_latest_quotations_follow_the_index_series(sim, call, error_text):
    today = call("GetLatestQuotations", {})
    assert today["calDate"] == "2025-09-30"
    hs300 = next(m for m in today["markets"] if m["indexCode"] == "000300")
    world = sim.world.index("000300")
    assert hs300["closePrice"] == world["level"] and hs300["changeRate"] == world["daily_return"]
    weekend = call("GetLatestQuotations", {"calDate": "2025-09-28"})
    assert weekend["calDate"] == "2025-09-26"
    temp = today["marketTemperature"]
    assert 0 <= temp["value"] <= 100 and temp["level"] in ("低估", "正常", "高估")
    assert "future" in error_text("GetLatestQuotations", {"calDate": "2025-10-09"})
    assert "calDate" in error_text("GetLatestQuotations", {"calDate": "30/09/2025"})


def test_same_seed_same_bytes():
    script: list[tuple[str, dict[str, Any]]] = [
        ("SearchFinancialNews", {"keyword": "红利"}),
        ("SearchManagerViewpoint", {"pageSize": 5}),
        ("searchInvestAdvisorContent", {"keyword": "科技"}),
        ("searchRealtimeAiAnalysis", {"pageSize": 5}),
        ("SearchHotTopic", {}),
        ("GetLatestQuotations", {"calDate": "2024-10-08"}),
    ]
    one, two = Simulator(INVENTORY, seed=0), Simulator(INVENTORY, seed=0)
    for tool, args in script:
        assert (
            one.simulate(tool, args)["content"][0]["text"] == two.simulate(tool, args)["content"][0]["text"]
        )


def test_key_sets_match_recorded_outputs(recorded, sim, call):
    real_news = recorded("SearchFinancialNews")[0]
    ours = call("SearchFinancialNews", {"keyword": "市场"})
    assert list(ours["data"]) == list(real_news["data"])
    assert ours["data"]["items"][0].keys() == real_news["data"]["items"][0].keys()
    real_view = next(o for o in recorded("SearchManagerViewpoint") if o.get("data"))
    ours_view = call("SearchManagerViewpoint", {"keyword": "市场展望", "pageSize": 3})
    assert list(ours_view["data"]) == list(real_view["data"])
    assert ours_view["data"]["list"][0].keys() == real_view["data"]["list"][0].keys()
    assert recorded("searchInvestAdvisorContent") == [{}]
