"""Builders for what a fund discloses: quarterly holdings, holder structure and announcements."""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from finmcp.recordings.plumbing.seeding import rng_for
from finmcp.server.sim.qieman.common import code_list_arg, int_arg, parse_day
from finmcp.server.sim.qieman.fund_batch import MAX_BATCH, batch, batch_tool
from finmcp.server.sim.registry import BuildContext, ToolInputError, qieman_builder
from finmcp.server.world.dates import last_quarter_end
from finmcp.server.world.funds import Fund

_QUARTER_ENDS = ("03-31", "06-30", "09-30", "12-31")


def _previous_quarter_end(d: date) -> date:
    return last_quarter_end(d)


def _holdings_at(ctx: BuildContext, fund: Fund, report: date, latest: date) -> tuple[list[dict], list[dict]]:
    """Top stock and bond positions at a quarter end; earlier quarters are seeded variations of the latest."""
    stocks = [dict(s) for s in fund.holdings["stocks"]]
    bonds = [dict(b) for b in fund.holdings["bonds"]]
    if report >= latest:
        return stocks, bonds
    rng = rng_for(ctx.world.seed, "holdings_at", fund.code, report.isoformat())
    for row in stocks + bonds:
        row["ratio"] = round(row["ratio"] * (0.75 + 0.5 * rng.random()), 4)
    if stocks and rng.random() < 0.4:
        stocks.pop()
    stocks.sort(key=lambda s: -s["ratio"])
    bonds.sort(key=lambda b: -b["ratio"])
    return stocks, bonds


def _change_type(prev: dict[str, float], code: str, ratio: float) -> str:
    if code not in prev:
        return "新增"
    if ratio > prev[code]:
        return "增持"
    if ratio < prev[code]:
        return "减持"
    return "不变"


@qieman_builder("BatchGetFundsHolding")
def build_funds_holding(ctx: BuildContext, args: dict[str, Any]) -> list[dict[str, Any]]:
    """Top-10 stock and bond positions of the latest quarterly report, or of the last published report on
    or before ``reportDate`` (a date that is not a quarter end snaps back to the previous quarter end)."""
    tool = "BatchGetFundsHolding"
    latest = last_quarter_end(ctx.world.as_of)
    report = latest
    if args.get("reportDate") is not None:
        asked = parse_day(args["reportDate"], tool, "reportDate")
        if asked.year < 2005:
            raise ToolInputError(f"{tool}: reportDate {asked} is before 2005, the first report kept")
        quarter_end = asked if asked.strftime("%m-%d") in _QUARTER_ENDS else last_quarter_end(asked)
        report = min(latest, quarter_end)

    def data(c: BuildContext, fund: Fund) -> dict[str, Any]:
        ratios = {a["name"]: a["ratio"] for a in fund.asset_allocation}
        stocks: list[dict]
        bonds: list[dict]
        if date.fromisoformat(fund.setup_date) > report:
            stocks, bonds, prev = [], [], {}
        else:
            stocks, bonds = _holdings_at(c, fund, report, latest)
            prev_stocks, _ = _holdings_at(c, fund, _previous_quarter_end(report), latest)
            prev = {s["code"]: s["ratio"] for s in prev_stocks}
        value = fund.net_asset
        return {
            "fundCode": fund.code,
            "fundName": fund.name,
            "reportDate": report.isoformat(),
            "stockRatio": ratios.get("股票"),
            "bondRatio": ratios.get("债券"),
            "stockHoldings": [
                {
                    "stockCode": s["code"],
                    "stockName": s["name"],
                    "ratio": s["ratio"],
                    "marketValue": round(s["ratio"] * value, 2),
                    "changeType": _change_type(prev, s["code"], s["ratio"]),
                }
                for s in stocks
            ],
            "bondHoldings": [
                {
                    "bondCode": b["code"],
                    "bondName": b["name"],
                    "ratio": b["ratio"],
                    "marketValue": round(b["ratio"] * value, 2),
                }
                for b in bonds
            ],
        }

    return batch(ctx, args, tool, data, limit=MAX_BATCH)


def _half_year_end(d: date) -> date:
    q = last_quarter_end(d)
    return q if q.month in (6, 12) else last_quarter_end(q)


def _share_classes(ctx: BuildContext, fund: Fund) -> list[Fund]:
    stub = ctx.world.require_stub(fund.code)
    key = stub.product_key
    siblings = []
    for code in (key, f"{int(key) + 1:06d}"):
        other = ctx.world.fund_stub(code)
        if other is not None and other.product_key == key:
            siblings.append(ctx.world.require_fund(code))
    return siblings or [fund]


@batch_tool("BatchGetFundsHolderInfo")
def holder_info(ctx: BuildContext, fund: Fund) -> dict[str, Any]:
    """Shares per class, total size and the institutional/individual split at the last half-year report."""
    classes: list[dict[str, Any]] = []
    for f in _share_classes(ctx, fund):
        nav = f.latest["nav"] or 1.0
        classes.append(
            {
                "fundCode": f.code,
                "shareClassName": f.share_class,
                "shares": round(f.net_asset / nav, 2),
                "netAsset": f.net_asset,
            }
        )
    rng = rng_for(ctx.world.seed, "holders", fund.code)
    base = {"债券型": 0.55, "货币型": 0.35, "FOF": 0.1}.get(fund.fund_type, 0.15)
    institutional = round(min(0.98, base * (0.4 + 1.2 * rng.random())), 4)
    total_asset = round(sum(x["netAsset"] for x in classes), 2)
    return {
        "fundCode": fund.code,
        "fundName": fund.name,
        "reportDate": _half_year_end(ctx.world.as_of).isoformat(),
        "totalShares": round(sum(x["shares"] for x in classes), 2),
        "totalNetAsset": total_asset,
        "shareClasses": classes,
        "institutionalRatio": institutional,
        "individualRatio": round(1.0 - institutional, 4),
        "holderCount": max(200, int(total_asset / (20000 + 80000 * rng.random()))),
    }


_ANNOUNCEMENT_ID_RE = re.compile(r"^\d{12}$")


def _announcement_link(item: dict) -> str:
    d = date.fromisoformat(item["date"])
    return f"https://cdn-fi.yingmi.cn/{d.year}/{d.month:02d}/{d.day:02d}/{item['id']}.PDF"


def _announcement_row(item: dict) -> dict[str, Any]:
    return {
        "基金代码": item["fund_code"],
        "基金全称": item["fund_full_name"],
        "基金简称": item["fund_name"],
        "公告ID": item["id"],
        "公告日期": item["date"],
        "公告来源": item["source"],
        "公告标题": item["title"],
        "公告链接": _announcement_link(item),
        "公告类型代码": item["type_code"],
        "公告类型": item["type_name"],
    }


@qieman_builder("GetFundAnnouncements")
def build_announcements(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """Announcements of the requested funds merged newest first, paged from 1 (default page size 10)."""
    tool = "GetFundAnnouncements"
    codes = code_list_arg(args, "fundCodes", tool, MAX_BATCH, six_digits=True)
    page = int_arg(args, "pageNum", tool, 1, 1)
    size = int_arg(args, "pageSize", tool, 10, 1)
    if size > 100:
        raise ToolInputError(f"{tool}: pageSize must be at most 100, got {size}")
    items = [item for code in codes for item in ctx.world.fund_announcements(code)]
    items.sort(key=lambda it: (it["date"], it["id"]), reverse=True)
    rows = items[(page - 1) * size : page * size]
    return {
        "pageSize": size,
        "rows": [_announcement_row(it) for it in rows],
        "status": "查询成功",
        "hasMoreRows": page * size < len(items),
    }


@qieman_builder("GetAnnouncementContent")
def build_announcement_content(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """The full text of one announcement; an id the world never issued is refused as not found."""
    ann_id = args.get("announcementId")
    if not isinstance(ann_id, str) or not _ANNOUNCEMENT_ID_RE.match(ann_id):
        raise ToolInputError(
            f"GetAnnouncementContent: announcementId must be a 12-digit 公告ID from GetFundAnnouncements, got {ann_id!r}"
        )
    item = ctx.world.announcement_content(ann_id)
    if item is None:
        raise ToolInputError(f"GetAnnouncementContent: no announcement with announcementId {ann_id!r}")
    return {
        "公告ID": item["id"],
        "公告标题": item["title"],
        "公告日期": item["date"],
        "公告类型": item["type_name"],
        "基金代码": item["fund_code"],
        "公告链接": _announcement_link(item),
        "公告内容": item["content"],
    }
