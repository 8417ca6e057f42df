"""Content tools: financial news, manager viewpoints, advisor articles, AI news readings, hot topics and
the daily market review, all drawn from the world's per-day content and index series.

Searches walk the requested days newest first (default windows: news 30 days, viewpoints 90 days, AI
readings 7 days, advisor content 90 days, all ending at ``as_of``; an end date after ``as_of`` is cut to
it), keep items whose title, text or tags contain any of the keyword's space-separated words, and page
from 1. A range longer than ``MAX_RANGE_DAYS`` or a start after the end is refused. An advisor-content
search with no match answers ``{}``, as the real server does.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from finmcp.recordings.plumbing.seeding import derive_seed, hex_token, rng_for
from finmcp.server.sim.qieman.common import int_arg, parse_day
from finmcp.server.sim.registry import BuildContext, ToolInputError, qieman_builder
from finmcp.server.world import trading_calendar as cal
from finmcp.server.world import vocab as v
from finmcp.server.world.rng import pick

MAX_RANGE_DAYS = 1100
CONTENT_START = date(2015, 1, 1)
ADVISOR_TYPES = ("文章", "碎碎念", "专栏", "社区", "自有策略的内容")
ADVISOR_AUTHORS = ("且慢投研", "长赢投研", "盈米研究院", "ETF拯救世界", "稳健配置团队", "养基小课堂")


# ---------------------------------------------------------------- search plumbing


def _window(ctx: BuildContext, args: dict[str, Any], tool: str, default_days: int) -> tuple[date, date]:
    as_of = ctx.world.as_of
    end = as_of if args.get("endDate") is None else parse_day(args["endDate"], tool, "endDate")
    end = min(end, as_of)
    if args.get("startDate") is None:
        start = end - timedelta(days=default_days - 1)
    else:
        start = parse_day(args["startDate"], tool, "startDate")
    if start > end:
        raise ToolInputError(
            f"{tool}: startDate {start} is after endDate {end} (dates after {as_of} are cut)"
        )
    if (end - start).days > MAX_RANGE_DAYS:
        raise ToolInputError(f"{tool}: the date range {start}..{end} is longer than {MAX_RANGE_DAYS} days")
    return max(start, CONTENT_START), end


def _terms(args: dict[str, Any]) -> list[str]:
    keyword = args.get("keyword")
    if keyword is not None and not isinstance(keyword, str):
        raise ToolInputError(f"keyword must be a string, got {keyword!r}")
    return (keyword or "").split()


def _is_subsequence(short: str, long: str) -> bool:
    chars = iter(long)
    return all(c in chars for c in short)


def _matches(text: str, terms: list[str], tags: list[str] | tuple[str, ...] = ()) -> bool:
    """True when any term occurs in the text, or a tag is spelled inside a term (债市 in 债券市场)."""
    if not terms:
        return True
    return any(t in text or any(len(g) > 1 and _is_subsequence(g, t) for g in tags) for t in terms)


def _collect(start: date, end: date, day_items, text_of, terms: list[str]) -> list[dict]:
    """Items of every day in ``[start, end]`` newest first that match the terms."""
    hits: list[dict] = []
    d = end
    while d >= start:
        items = sorted(day_items(d), key=lambda it: (it["publish_time"], it["id"]), reverse=True)
        hits.extend(it for it in items if _matches(text_of(it), terms, it.get("tags", ())))
        d -= timedelta(days=1)
    return hits


def _page(args: dict[str, Any], tool: str, default_size: int, max_size: int = 100) -> tuple[int, int]:
    page = int_arg(args, "page", tool, 1, 1)
    size = int_arg(args, "pageSize", tool, default_size, 1)
    if size > max_size:
        raise ToolInputError(f"{tool}: pageSize must be at most {max_size}, got {size}")
    return page, size


def _items_page(hits: list, page: int, size: int, items: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``{"success", "data": {total, page, pageSize, totalPages, items}}`` page of a search."""
    return {
        "success": True,
        "data": {
            "total": len(hits),
            "page": page,
            "pageSize": size,
            "totalPages": (len(hits) + size - 1) // size,
            "items": items,
        },
    }


# ---------------------------------------------------------------- news


def _news_text(item: dict) -> str:
    return item["title"] + item["summary"] + "".join(item["tags"])


@qieman_builder("SearchFinancialNews")
def build_financial_news(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """News articles matching the keyword, newest first."""
    tool = "SearchFinancialNews"
    page, size = _page(args, tool, 20)
    start, end = _window(ctx, args, tool, 30)
    hits = _collect(start, end, ctx.world.news_for_day, _news_text, _terms(args))
    items = [
        {
            "id": it["id"],
            "title": it["title"],
            "summary": it["summary"],
            "sources": it["source"],
            "url": f"https://mp.weixin.qq.com/s/{hex_token(ctx.world.seed, 'news', it['id'])}",
            "publishDate": it["publish_time"],
        }
        for it in hits[(page - 1) * size : page * size]
    ]
    return _items_page(hits, page, size, items)


# ---------------------------------------------------------------- manager viewpoints


def _viewpoint_body(item: dict) -> str:
    return f"【市场展望】{item['content']}"


def _viewpoint_text(item: dict) -> str:
    return item["title"] + _viewpoint_body(item) + "".join(item["tags"])


def _company_funds(ctx: BuildContext, company: str) -> list[str]:
    return [
        s.code for s in ctx.world.fund_universe().values() if s.company == company and s.fund_type != "货币型"
    ]


@qieman_builder("SearchManagerViewpoint")
def build_manager_viewpoint(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """Fund-manager viewpoints matching the keyword, newest first.

    ``fundCode`` and ``representativeFund`` name funds of the manager's company chosen by seed; the
    world does not link managers to the funds they run from this side.
    """
    tool = "SearchManagerViewpoint"
    page, size = _page(args, tool, 10)
    start, end = _window(ctx, args, tool, 90)
    hits = _collect(start, end, ctx.world.viewpoints_for_day, _viewpoint_text, _terms(args))
    rows = []
    universe = ctx.world.fund_universe()
    for it in hits[(page - 1) * size : page * size]:
        funds = _company_funds(ctx, it["company"])
        rng = rng_for(ctx.world.seed, "viewpoint_funds", it["id"])
        own, rep = (pick(rng, funds), pick(rng, funds)) if funds else (None, None)
        rows.append(
            {
                "id": it["id"],
                "title": it["title"],
                "viewpoint": _viewpoint_body(it),
                "topicName": f"{it['tags'][0]}展望",
                "publishTime": it["publish_time"][:10],
                "articleUrl": "",
                "fundCode": own,
                "industryName": ",".join(it["tags"][1:]),
                "managerName": it["manager"],
                "companyName": f"{it['company']}基金",
                "representativeFund": None if rep is None else {"name": universe[rep].name, "code": rep},
            }
        )
    return {
        "success": True,
        "data": {
            "page": page,
            "pageSize": size,
            "total": len(hits),
            "totalPage": (len(hits) + size - 1) // size,
            "list": rows,
        },
    }


# ---------------------------------------------------------------- advisor content


def advisor_items_for_day(ctx: BuildContext, d: date) -> list[dict]:
    """Advisor posts of one day (0-2 per day), generated from (seed, day)."""
    rng = rng_for(ctx.world.seed, "advisor_content", d.isoformat())
    out = []
    for j in range(rng.randrange(3)):
        topic, tags = pick(rng, v.NEWS_TOPICS)
        kind = pick(rng, ADVISOR_TYPES)
        author = pick(rng, ADVISOR_AUTHORS)
        title = pick(
            rng,
            (
                f"聊聊{topic}：{pick(rng, ('现在还能上车吗', '该怎么配置', '长期视角怎么看'))}",
                f"{d.month}月{topic}观察与操作思路",
                f"从{tags[1]}看{tags[2]}：一份给普通投资者的说明",
            ),
        )
        summary = (
            f"{author}结合近期{tags[0]}与{tags[1]}的变化，讨论{topic}方向的配置思路，"
            f"提醒投资者{pick(rng, ('分散配置', '控制仓位', '拉长持有期限', '按计划定投'))}。"
        )
        out.append(
            {
                "id": f"AC{(d - CONTENT_START).days * 4 + j:07d}",
                "title": title,
                "summary": summary,
                "author": author,
                "type": kind,
                "publish_time": f"{d.isoformat()} {9 + 4 * j:02d}:{rng.randrange(60):02d}:00",
                "tags": list(tags),
            }
        )
    return out


@qieman_builder("searchInvestAdvisorContent")
def build_advisor_content(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """Advisor articles, notes and columns; ``{}`` when nothing matches (the real server's empty answer)."""
    tool = "searchInvestAdvisorContent"
    page, size = _page(args, tool, 20)
    kind, author = args.get("type"), args.get("author")
    if kind is not None and kind not in ADVISOR_TYPES:
        raise ToolInputError(f"{tool}: type {kind!r} unknown; expected one of {list(ADVISOR_TYPES)}")
    start, end = _window(ctx, args, tool, 90)

    def text_of(it: dict) -> str:
        return it["title"] + it["summary"] + "".join(it["tags"]) + it["author"]

    hits = [
        it
        for it in _collect(start, end, lambda d: advisor_items_for_day(ctx, d), text_of, _terms(args))
        if (kind is None or it["type"] == kind) and (not author or author in it["author"])
    ]
    if not hits:
        return {}
    rows = [
        {
            "id": it["id"],
            "title": it["title"],
            "summary": it["summary"],
            "author": it["author"],
            "type": it["type"],
            "publishTime": it["publish_time"],
        }
        for it in hits[(page - 1) * size : page * size]
    ]
    return {"success": True, "data": {"total": len(hits), "page": page, "pageSize": size, "list": rows}}


# ---------------------------------------------------------------- AI readings of news


_IMPACT_WORDS = {"利好": "偏正面", "利空": "偏负面", "中性": "中性"}


def _impact(item: dict, seed: int) -> str:
    score = derive_seed(seed, "ai_impact", item["id"]) % 100
    if "收涨" in item["title"]:
        score += 30
    if "收跌" in item["title"]:
        score -= 30
    return "利好" if score >= 66 else ("利空" if score < 33 else "中性")


@qieman_builder("searchRealtimeAiAnalysis")
def build_ai_analysis(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """AI interpretations of recent news (default: the last 7 days), newest first."""
    tool = "searchRealtimeAiAnalysis"
    page, size = _page(args, tool, 10, max_size=100)
    start, end = _window(ctx, args, tool, 7)
    hits = _collect(start, end, ctx.world.news_for_day, _news_text, _terms(args))
    items = []
    for it in hits[(page - 1) * size : page * size]:
        impact = _impact(it, ctx.world.seed)
        items.append(
            {
                "id": it["id"],
                "title": it["title"],
                "analysis": f"该消息对{it['tags'][0]}相关资产的影响{_IMPACT_WORDS[impact]}："
                f"{it['tags'][1]}与{it['tags'][2]}方向值得跟踪，短期情绪影响大于基本面变化。",
                "impact": impact,
                "relatedSectors": list(it["tags"]),
                "sources": it["source"],
                "publishTime": it["publish_time"],
                "url": None,
            }
        )
    return _items_page(hits, page, size, items)


# ---------------------------------------------------------------- hot topics


@qieman_builder("SearchHotTopic")
def build_hot_topic(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """Topics ranked by how much news covered them since ``publishedDate`` (default: the last 7 days)."""
    tool = "SearchHotTopic"
    as_of = ctx.world.as_of
    since = as_of - timedelta(days=6)
    if args.get("publishedDate") is not None:
        since = parse_day(args["publishedDate"], tool, "publishedDate")
    if since > as_of:
        raise ToolInputError(f"{tool}: publishedDate {since} is after today ({as_of})")
    if (as_of - since).days > 366:
        raise ToolInputError(f"{tool}: publishedDate {since} is more than a year before today ({as_of})")
    terms = _terms(args)
    heat: dict[str, float] = {}
    last_seen: dict[str, str] = {}
    tags_of = dict(v.NEWS_TOPICS)
    d = as_of
    while d >= since:
        weight = 1.0 / (1 + (as_of - d).days / 7)
        for it in ctx.world.news_for_day(d):
            topic = it["tags"][0]
            heat[topic] = heat.get(topic, 0.0) + weight
            last_seen.setdefault(topic, d.isoformat())
        d -= timedelta(days=1)
    topics = [t for t in heat if _matches(t + "".join(tags_of[t]), terms)]
    topics.sort(key=lambda t: (-heat[t], t))
    rows = [
        {
            "rank": i,
            "topicName": t,
            "heat": round(heat[t] * 100, 1),
            "summary": f"近期{t}相关报道增多，市场关注{tags_of[t][1]}与{tags_of[t][2]}的后续变化。",
            "relatedSectors": list(tags_of[t]),
            "publishDate": last_seen[t],
        }
        for i, t in enumerate(topics, start=1)
    ]
    return {"total": len(rows), "topics": rows}


# ---------------------------------------------------------------- daily market review

_REVIEW_INDICES = (
    ("A股", "000001"),
    ("A股", "399001"),
    ("A股", "399006"),
    ("A股", "000300"),
    ("港股", "HSI"),
    ("港股", "HSTECH"),
    ("美股", "NDX"),
    ("美股", "SPX"),
)
_TEMPERATURE_INDICES = ("000300", "000905")


def _temperature(ctx: BuildContext, i_day: date) -> float:
    """Mean 5-year percentile of the day's level for the broad indices, 0-100."""
    pcts = []
    for code in _TEMPERATURE_INDICES:
        series = ctx.world.index_series(code)
        i = series.index_of(i_day)
        window = series.adj[max(0, i - 1249) : i + 1]
        pcts.append(sum(1 for x in window if x < window[-1]) / len(window))
    return round(sum(pcts) / len(pcts) * 100, 1)


def _commentary(change: float) -> str:
    if change >= 0.01:
        return "放量大涨"
    if change > 0:
        return "小幅收涨"
    if change <= -0.01:
        return "明显回调"
    return "小幅收跌" if change < 0 else "基本持平"


@qieman_builder("GetLatestQuotations")
def build_latest_quotations(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """Closing levels, daily changes and the market temperature of one trading day (default: today).

    A non-trading ``calDate`` reviews the last trading day before it.
    """
    tool = "GetLatestQuotations"
    as_of = ctx.world.as_of
    day = as_of if args.get("calDate") is None else parse_day(args["calDate"], tool, "calDate")
    if day > as_of:
        raise ToolInputError(f"{tool}: calDate {day} is in the future (today is {as_of})")
    if day < date(2010, 1, 4):
        raise ToolInputError(f"{tool}: calDate {day} is before 2010-01-04, the first reviewed day")
    day = cal.trading_day_on_or_before(day)
    markets: list[dict[str, Any]] = []
    for market, code in _REVIEW_INDICES:
        series = ctx.world.index_series(code)
        i = series.index_of(day)
        change = round(series.adj[i] / series.adj[i - 1] - 1.0, 6)
        name = next(x[1] for x in v.INDICES if x[0] == code)
        markets.append(
            {
                "marketName": market,
                "indexName": name,
                "indexCode": code,
                "closePrice": series.nav[i],
                "changeRate": change,
                "commentary": _commentary(change),
            }
        )
    temp = _temperature(ctx, day)
    level = "低估" if temp < 30 else ("高估" if temp > 70 else "正常")
    advice = {
        "低估": "估值处于历史较低区域，适合分批加大权益配置",
        "正常": "估值处于历史中等区域，可按计划均衡配置",
        "高估": "估值处于历史较高区域，注意控制权益仓位",
    }[level]
    up = sum(1 for m in markets if m["changeRate"] > 0)
    return {
        "calDate": day.isoformat(),
        "marketTemperature": {"value": temp, "level": level, "description": advice},
        "markets": markets,
        "summary": f"{day.month}月{day.day}日，跟踪的{len(markets)}个主要指数中{up}个上涨、{len(markets) - up}个下跌或持平；"
        f"且慢市场温度{temp}°，{advice}。",
    }


__all__ = ["ADVISOR_TYPES", "advisor_items_for_day"]
