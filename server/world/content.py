"""Content: news and manager viewpoints per day (searchable), fund announcements and their text.

Items are generated per calendar day from (seed, day), so a date-range search only builds the days it
covers. Headlines quote the world's own index moves, so news agrees with market data.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import TYPE_CHECKING

from finmcp.recordings.plumbing.seeding import derive_seed, rng_for

from . import trading_calendar as cal
from . import vocab as v
from .rng import pick

if TYPE_CHECKING:
    from .view import WorldView

MAX_SEARCH_DAYS = 366
_HEADLINE_INDICES = ("000001", "000300", "399006", "000905", "HSI")


def _index_move(world: WorldView, code: str, d: date) -> float | None:
    series = world.index_series(code)
    i = series.index_of(d)
    if i < 1 or series.dates[i] != d.isoformat():
        return None
    return series.adj[i] / series.adj[i - 1] - 1.0


def news_for_day(world: WorldView, d: date) -> list[dict]:
    """News articles published on ``d`` (newest first)."""
    rng = rng_for(world.seed, "news", d.isoformat())
    trading = cal.is_trading_day(d)
    n = 5 + rng.randrange(6) if trading else 1 + rng.randrange(3)
    out = []
    for j in range(n):
        topic, tags = pick(rng, v.NEWS_TOPICS)
        idx_code = pick(rng, _HEADLINE_INDICES)
        idx_name = next(s[1] for s in v.INDICES if s[0] == idx_code)
        move = _index_move(world, idx_code, d) if trading else None
        company = pick(rng, v.COMPANIES)[0]
        if move is not None and rng.random() < 0.5:
            verb = "收涨" if move >= 0 else "收跌"
            title = f"{idx_name}{verb}{abs(move) * 100:.2f}%，{topic}板块{pick(rng, ('走强', '承压', '分化', '活跃'))}"
            lead = f"{d.month}月{d.day}日，{idx_name}{verb}{abs(move) * 100:.2f}%。"
        else:
            title = pick(
                rng,
                (
                    f"{topic}观察：{d.month}月市场展望",
                    f"{company}基金：{topic}配置价值显现",
                    f"{topic}领域迎来新变化，机构怎么看",
                    f"解读{topic}最新数据：{pick(rng, ('边际改善', '预期修复', '结构分化'))}",
                ),
            )
            lead = f"{d.year}年{d.month}月{d.day}日，市场关注{topic}相关动向。"
        body = (
            f"{lead}分析人士认为，{tags[1]}方面{pick(rng, ('仍有支撑', '存在分歧', '值得关注', '逐步明朗'))}，"
            f"投资者可关注{tags[2]}相关机会，同时注意控制{pick(rng, ('回撤', '仓位', '波动'))}。"
        )
        minute = 23 * 60 + 59 - j * (60 + rng.randrange(90))
        out.append(
            {
                "id": 7_000_000 + (d - date(2015, 1, 1)).days * 16 + j,
                "title": title,
                "summary": body,
                "source": pick(rng, v.NEWS_SOURCES),
                "publish_time": f"{d.isoformat()} {max(0, minute) // 60:02d}:{max(0, minute) % 60:02d}:00",
                "tags": list(tags),
            }
        )
    return out


def viewpoints_for_day(world: WorldView, d: date) -> list[dict]:
    """Fund-manager viewpoints published on ``d`` (trading days only)."""
    if not cal.is_trading_day(d):
        return []
    rng = rng_for(world.seed, "viewpoints", d.isoformat())
    out = []
    for j in range(rng.randrange(4)):
        ci = rng.randrange(len(v.COMPANIES))
        mgr = world.manager(ci, rng.randrange(world.MANAGERS_PER_COMPANY))
        topic, tags = pick(rng, v.NEWS_TOPICS)
        stance = pick(rng, ("看好", "谨慎乐观", "中性", "关注"))
        title = f"{mgr['company']}{mgr['name']}：{stance}{topic}{pick(rng, ('中长期机会', '阶段性行情', '结构性机会', '配置价值'))}"
        text = (
            f"{mgr['name']}表示，当前{tags[0]}{pick(rng, ('估值处于合理区间', '景气度边际回升', '仍需等待催化'))}，"
            f"对{tags[1]}持{stance}态度，组合将{pick(rng, ('保持均衡配置', '适度提高仓位', '控制回撤', '精选个股'))}。"
        )
        out.append(
            {
                "id": 9_000_000 + (d - date(2015, 1, 1)).days * 8 + j,
                "title": title,
                "content": text,
                "manager": mgr["name"],
                "company": mgr["company"],
                "publish_time": f"{d.isoformat()} {15 + j}:30:00",
                "tags": list(tags),
            }
        )
    return out


_ANN_TYPES = {"1": "定期报告", "2": "分红公告", "3": "人事公告", "4": "其他公告"}


def fund_announcements(world: WorldView, code: str) -> list[dict]:
    """A fund's announcements (newest first); ids are 12 digits: '8' + fund code + 5-digit sequence."""
    fund = world.fund(code)
    if fund is None:
        return []
    rng = rng_for(world.seed, "announcements", code)
    items: list[tuple[date, str, str, str]] = []
    setup = date.fromisoformat(fund.setup_date)
    y, q = world.as_of.year, (world.as_of.month - 1) // 3
    for _ in range(8):
        if q == 0:
            y, q = y - 1, 4
        qd = date(y, 3 * q, 28)
        pub = qd + timedelta(days=20 if q != 4 else 85)
        if setup < qd and pub <= world.as_of:
            label = "年度报告" if q == 4 else f"{q}季度报告"
            items.append((pub, "1", f"{fund.full_name}{y}年{label}", "基金管理公司"))
        q -= 1
    for dv in fund.dividends[-3:]:
        items.append(
            (
                date.fromisoformat(dv["record_date"]) - timedelta(days=3),
                "2",
                f"{fund.full_name}分红公告",
                "基金管理公司",
            )
        )
    for m in fund.managers:
        start = date.fromisoformat(m["start_date"])
        if start > setup:
            items.append(
                (start, "3", f"{fund.company_full}关于{fund.name}基金经理变更的公告", "基金管理公司")
            )
    if fund.trade["status"] == "5" or fund.trade["max_buy"]:
        items.append(
            (
                world.as_of - timedelta(days=1 + rng.randrange(60)),
                "4",
                f"{fund.full_name}调整大额申购业务限制的公告",
                "基金管理公司",
            )
        )
    for _ in range(rng.randrange(4)):
        items.append(
            (
                world.as_of - timedelta(days=rng.randrange(365)),
                "4",
                f"{fund.company_full}关于{pick(rng, ('旗下部分基金估值调整情况', '网上直销平台系统维护', '旗下基金参加费率优惠活动'))}的公告",
                pick(rng, ("基金管理公司", "上海证券交易所", "深圳证券交易所")),
            )
        )
    items = [it for it in items if setup <= it[0] <= world.as_of]
    items.sort(key=lambda it: (it[0], it[2]), reverse=True)
    out = []
    for seq, (d, t, title, source) in enumerate(items):
        ann_id = (
            f"8{code}{derive_seed(world.seed, 'announcement', code, seq) % 100000:05d}"
            if code.isdigit()
            else f"8{seq:011d}"
        )
        out.append(
            {
                "id": ann_id,
                "fund_code": code,
                "fund_name": fund.name,
                "fund_full_name": fund.full_name,
                "date": d.isoformat(),
                "source": source,
                "title": title,
                "type_code": t,
                "type_name": _ANN_TYPES[t],
            }
        )
    return out


def announcement_content(world: WorldView, ann_id: str) -> dict | None:
    """The text of an announcement by id (None when unknown)."""
    if not (isinstance(ann_id, str) and len(ann_id) == 12 and ann_id.isdigit()):
        return None
    for item in fund_announcements(world, ann_id[1:7]):
        if item["id"] == ann_id:
            fund = world.require_fund(item["fund_code"])
            text = (
                f"{item['title']}\n\n{fund.company_full}（以下简称“本公司”）现就{fund.full_name}（基金代码：{fund.code}）"
                f"有关事项公告如下：\n一、本公告所述事项自{item['date']}起生效。\n二、投资者可登录本公司网站或拨打客户服务电话咨询。\n"
                "风险提示：基金管理人承诺以诚实信用、勤勉尽责的原则管理和运用基金资产，但不保证基金一定盈利，也不保证最低收益。"
            )
            return {**item, "content": text}
    return None
