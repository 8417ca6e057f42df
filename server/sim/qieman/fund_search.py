"""Builders for the Qieman fund search tools: SearchFunds, GuessFundCode, GetPopularFund."""

from __future__ import annotations

from typing import Any

from finmcp.recordings.plumbing.seeding import derive_seed
from finmcp.server.sim.qieman.common import choice_arg, fund_url, int_arg
from finmcp.server.sim.qieman.fund_batch import display_type
from finmcp.server.sim.registry import BuildContext, ToolInputError, qieman_builder
from finmcp.server.world import queries
from finmcp.server.world import vocab as v
from finmcp.server.world.funds import FundStub
from finmcp.server.world.queries import CATEGORY_ALIASES, SORT_COLUMNS

_TRADE_STATUS = {
    "正常开放": {"0"},
    "认购期": {"1"},
    "暂停申购": {"5"},
    "暂停赎回": {"6"},
    "暂停交易": {"4", "9"},
}


# sort columns the world ranks directly, plus close synonyms
_SORT_SYNONYMS = {"收益率": "近一年收益", "万份收益": "七日年化收益率"}


_CATEGORY_GROUPS = {"偏股型": ("股票型", "混合型"), "权益型": ("股票型", "混合型", "指数型")}


def _category_filter(category: str | None):
    """(world category or None, extra stub predicate or None, known?) for a SearchFunds category."""
    if not category:
        return None, None, True
    name = CATEGORY_ALIASES.get(category, category)
    if name in v.FUND_TYPES:
        return name, None, True
    if name in _CATEGORY_GROUPS:
        types = _CATEGORY_GROUPS[name]
        return None, lambda s: s.fund_type in types and "偏债" not in s.name, True
    if name in ("偏债型", "偏债混合"):
        return None, lambda s: "偏债" in s.name, True
    return None, lambda s: name in s.theme or name in s.name, True


def _search_row(ctx: BuildContext, row: dict, with_yield: bool) -> dict:
    out = {
        "fundCode": row["code"],
        "fundName": row["name"],
        "fundInvestType": v.FUND_TYPE_CODES[row["fund_type"]],
        "status": row["status"],
        "setupDate": row["setup_date"],
        "returnYear": row["returnYear"],
    }
    if with_yield:
        out["yearlyRoe"] = row["yearlyRoe"]
    out["url"] = fund_url(row["code"])
    return out


def _seeded_rank(ctx: BuildContext, column: str, code: str) -> int:
    return derive_seed(ctx.world.seed, "search_sort", column, code)


def _sort_value(ctx: BuildContext, stub: FundStub, column: str) -> Any:
    """The world's value of a sort column for one fund."""
    return queries.sort_value(ctx.world, stub, SORT_COLUMNS[column])


def _filtered_search(ctx, keyword, category, predicate, status, column, order, page, size):
    """SearchFunds over stubs when a filter or sort the world's search lacks is asked for."""
    if category is not None:
        ctx.world.codes_by_type(category)  # validates the type name
    stubs = [
        s
        for s in ctx.world.fund_universe().values()
        if (not keyword or keyword in s.name or keyword == s.code)
        and (category is None or s.fund_type == category)
        and (predicate is None or predicate(s))
        and (status == "不限" or s.status in _TRADE_STATUS[status])
    ]
    desc = order in ("降序", "")
    if column in SORT_COLUMNS:
        keyed = [(_sort_value(ctx, s, column), s) for s in stubs]
        present = sorted(
            (k for k in keyed if k[0] is not None), key=lambda kv: (kv[0], kv[1].code), reverse=desc
        )
        stubs = [s for _, s in present] + sorted((s for val, s in keyed if val is None), key=lambda s: s.code)
    elif column:
        stubs.sort(key=lambda s: _seeded_rank(ctx, column, s.code), reverse=desc)
    rows = []
    for s in stubs[page * size : (page + 1) * size]:
        rows.append(
            {
                "code": s.code,
                "name": s.name,
                "fund_type": s.fund_type,
                "status": s.status,
                "setup_date": s.setup_date.isoformat(),
                "returnYear": _sort_value(ctx, s, "近一年收益"),
                "yearlyRoe": _sort_value(ctx, s, "七日年化收益率"),
            }
        )
    return rows, len(stubs)


@qieman_builder("SearchFunds")
def build_search_funds(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """Funds by keyword / category / trading status, sorted, paged from page 0.

    Sort columns the world cannot rank (起购金额, 选股能力, 综合费率, …) order by a seeded per-fund key:
    stable, but not derived from fund data. ``yearlyRoe`` is printed only when a sort column is given,
    as in the recorded outputs.
    """
    tool = "SearchFunds"
    page = int_arg(args, "page", tool, 0, 0)
    size = int_arg(args, "size", tool, 10, 1)
    if size > 100:
        raise ToolInputError(f"{tool}: size must be at most 100, got {size}")
    keyword = (args.get("keyword") or "").strip() or None
    status = choice_arg(args, "tradeStatus", tool, ("不限", *_TRADE_STATUS), "不限")
    order = args.get("sortOrder") or "降序"
    column = args.get("sortColumn") or None
    column = _SORT_SYNONYMS.get(column, column) if column is not None else None
    world_column = column if column in SORT_COLUMNS else None
    category, predicate, _ = _category_filter(args.get("category"))
    needs_all = predicate is not None or status != "不限" or (column and world_column is None)
    try:
        if not needs_all:
            found = queries.search_funds(ctx.world, keyword, category, world_column, order, page, size)
            rows, total = found["funds"], found["total"]
        else:
            rows, total = _filtered_search(
                ctx, keyword, category, predicate, status, column, order, page, size
            )
    except ValueError as exc:
        raise ToolInputError(str(exc)) from exc
    return {"funds": [_search_row(ctx, r, column is not None) for r in rows], "total": total}


def _match_score(query: str, name: str, code: str) -> float:
    if query in (name, code):
        return 1.0
    if query in name:
        return round(0.6 + 0.4 * len(query) / len(name), 4)
    common = len(set(query) & set(name))
    return round(common / max(len(set(query) | set(name)), 1), 4)


@qieman_builder("GuessFundCode")
def build_guess_fund_code(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """The best-matching fund for a name or code, with close candidates.

    No match answers ``fundCode``/``fundName`` as empty strings and no candidates.
    """
    query = args.get("fundNameOrCode")
    if not isinstance(query, str) or not query.strip():
        raise ToolInputError("GuessFundCode: fundNameOrCode must be a non-empty fund name or code")
    query = query.strip()
    matches = queries.guess_fund_code(ctx.world, query)
    if not matches:
        return {"fundCode": "", "fundName": "", "candidates": []}
    best = matches[0]
    stub = ctx.world.require_stub(best["code"])
    return {
        "fundCode": best["code"],
        "fundName": best["name"],
        "fundInvestType": display_type(stub.fund_type),
        "candidates": [
            {"fundCode": m["code"], "fundName": m["name"], "score": _match_score(query, m["name"], m["code"])}
            for m in matches[1:]
        ],
        "url": fund_url(best["code"]),
    }


@qieman_builder("GetPopularFund")
def build_popular_fund(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """The world's stable 'most visited' list."""
    size = int_arg(args, "size", "GetPopularFund", 6, 1)
    if size > 50:
        raise ToolInputError(f"GetPopularFund: size must be at most 50, got {size}")
    funds = []
    for rank, stub in enumerate(queries.popular_funds(ctx.world, size), start=1):
        funds.append(
            {
                "rank": rank,
                "fundCode": stub["code"],
                "fundName": stub["name"],
                "fundInvestType": display_type(stub["fund_type"]),
                "returnYear": ctx.world.quick_return(stub["code"], 12),
                "url": fund_url(stub["code"]),
            }
        )
    return {"funds": funds}
