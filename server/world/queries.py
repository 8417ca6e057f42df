"""The simulated tools' queries over the world: fund search and ranking, name guessing, strategy and
content search.

They read the :class:`~server.world.world.World` facade (its entities and its memo) and are used by
the Qieman tools (``server/sim/qieman``); the world's builders never call them. Memo keys are the
facade's, so a warmed index (:func:`warm`) is shared by every query.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

from finmcp.recordings.plumbing.seeding import derive_seed

from . import vocab as v
from .content import MAX_SEARCH_DAYS
from .funds import FundStub

if TYPE_CHECKING:
    from .world import World

_SORT_SYNONYMS: dict[str, tuple[str, ...]] = {
    "近1年": ("近一年收益", "近1年收益", "returnYear"),
    "近1月": ("近一月收益", "近1月收益"),
    "近3月": ("近三月收益", "近3月收益"),
    "近6月": ("近六月收益", "近6月收益"),
    "近3年": ("近三年收益", "近3年收益"),
    "yield_7d": ("七日年化收益率", "yearlyRoe"),
    "setup_date": ("成立日期", "setupDate"),
    "size": ("基金规模", "规模"),
}
"""The world's sort columns and the SearchFunds ``sortColumn`` names (Chinese and English) for each."""
SORT_COLUMNS = {name: column for column, names in _SORT_SYNONYMS.items() for name in names}
CATEGORY_ALIASES = {
    "QDII": "QDII型",
    "股票": "股票型",
    "混合": "混合型",
    "债券": "债券型",
    "指数": "指数型",
    "货币": "货币型",
}


def sort_value(world: World, stub: FundStub, column: str) -> Any:
    """A fund's value of a search sort column (``SORT_COLUMNS`` values); None when it has none."""
    if column == "setup_date":
        return stub.setup_date.isoformat()
    if column == "size":
        return stub.size_yi
    if column == "yield_7d":
        if stub.fund_type != "货币型":
            return None
        return world.memo(("yield_7d", stub.code), lambda: world.require_fund(stub.code).latest["yield_7d"])
    months = {"近1月": 1, "近3月": 3, "近6月": 6, "近1年": 12, "近3年": 36}[column]
    return world.quick_return(stub.code, months)


def search_funds(
    world: World,
    keyword: str | None = None,
    category: str | None = None,
    sort_column: str | None = None,
    sort_order: str = "降序",
    page: int = 0,
    size: int = 10,
) -> dict:
    """Funds whose name contains ``keyword`` (and of ``category``), sorted, paged from page 0.

    Returns {"total", "funds": [stub dict + returnYear + yearlyRoe]}.
    """
    if page < 0 or size < 1:
        raise ValueError(f"SearchFunds: page must be >= 0 and size >= 1, got {page}/{size}")
    if category is not None:
        category = CATEGORY_ALIASES.get(category, category)
        if category not in v.FUND_TYPES:
            raise ValueError(f"SearchFunds: category {category!r} unknown; expected one of {v.FUND_TYPES}")
    if sort_column is not None and sort_column not in SORT_COLUMNS:
        raise ValueError(
            f"SearchFunds: sortColumn {sort_column!r} unknown; expected one of {sorted(SORT_COLUMNS)}"
        )
    if sort_order not in ("降序", "升序", "desc", "asc"):
        raise ValueError(f"SearchFunds: sortOrder {sort_order!r} must be 降序 or 升序")
    stubs = [
        s
        for s in world.fund_universe().values()
        if (not keyword or keyword in s.name or keyword == s.code)
        and (category is None or s.fund_type == category)
    ]
    if sort_column is not None:
        col = SORT_COLUMNS[sort_column]
        desc = sort_order in ("降序", "desc")
        keyed = [(sort_value(world, s, col), s) for s in stubs]
        present = sorted(
            (k for k in keyed if k[0] is not None), key=lambda kv: (kv[0], kv[1].code), reverse=desc
        )
        stubs = [s for _, s in present] + sorted((s for val, s in keyed if val is None), key=lambda s: s.code)
    rows = []
    for s in stubs[page * size : (page + 1) * size]:
        rows.append(
            {
                **s.to_dict(),
                "returnYear": sort_value(world, s, "近1年"),
                "yearlyRoe": sort_value(world, s, "yield_7d") if s.fund_type == "货币型" else None,
            }
        )
    return {"total": len(stubs), "funds": rows}


def popular_funds(world: World, size: int = 10) -> list[dict]:
    """A stable 'popular' list: large open funds, lightly shuffled by the seed."""
    if size < 1:
        raise ValueError(f"GetPopularFund: size must be >= 1, got {size}")
    return [
        world.require_stub(c).to_dict()
        for c in world.memo(("popular",), lambda: _popular_ranking(world))[:size]
    ]


def _popular_ranking(world: World) -> list[str]:
    scored = [
        (s.size_yi * (0.5 + (derive_seed(world.seed, "popular", s.code) % 1000) / 1000), s.code)
        for s in world.fund_universe().values()
        if s.status == "0" and s.fund_type != "货币型"
    ]
    scored.sort(key=lambda t: (-t[0], t[1]))
    return [c for _, c in scored]


def guess_fund_code(world: World, name_or_code: str, limit: int = 10) -> list[dict]:
    """Best-matching funds for a code or (partial, possibly inexact) name; best first."""
    q = (name_or_code or "").strip()
    if not q:
        raise ValueError("GuessFundCode: fundNameOrCode is empty")
    uni = world.fund_universe()
    if q in uni:
        return [{"code": q, "name": uni[q].name}]
    scored = []
    qs = set(q)
    names = world.memo(("name_chars",), lambda: [(s.name, frozenset(s.name), s.code) for s in uni.values()])
    for name, chars, code in names:
        if name == q:
            score = 3.0
        elif q in name:
            score = 2.0 + len(q) / len(name)
        elif name in q:
            score = 1.5 + len(name) / len(q)
        else:
            score = len(qs & chars) / max(len(qs), 1)
            if score < 0.6:
                continue
        scored.append((-score, code))
    scored.sort()
    return [{"code": c, "name": uni[c].name} for _, c in scored[:limit]]


def search_strategies(world: World, keyword: str, page: int = 1, size: int = 10) -> dict:
    """Strategies whose code, name or intro contains ``keyword``; pages count from 1."""
    if not keyword:
        raise ValueError("StrategySearchByKeyword: keyword is empty")
    if page < 1 or size < 1:
        raise ValueError(f"StrategySearchByKeyword: pageNum and pageSize must be >= 1, got {page}/{size}")
    hits = [
        c
        for c in world.strategy_codes()
        if keyword == c or keyword in (st := world.require_strategy(c)).name or keyword in st.intro
    ]
    return {
        "total": len(hits),
        "page": page,
        "page_size": size,
        "items": [world.strategy(c) for c in hits[(page - 1) * size : page * size]],
    }


def search_content(
    world: World, kind: str, keyword: str | None, start: date | None, end: date | None, page: int, size: int
) -> dict:
    """News (``kind="news"``) or manager viewpoints (``"viewpoints"``) containing ``keyword`` in
    ``[start, end]`` (default: the 30 days up to as_of), newest first; pages count from 1."""
    if page < 1 or size < 1:
        raise ValueError(f"search {kind}: page and pageSize must be >= 1, got {page}/{size}")
    end = end or world.as_of
    start = start or end - timedelta(days=30)
    if start > end:
        raise ValueError(f"search {kind}: startDate {start} is after endDate {end}")
    if (end - start).days > MAX_SEARCH_DAYS:
        raise ValueError(f"search {kind}: date range longer than {MAX_SEARCH_DAYS} days")
    getter = world.news_for_day if kind == "news" else world.viewpoints_for_day
    hits = []
    d = end
    while d >= start:
        for item in getter(d):
            text = item["title"] + item.get("summary", item.get("content", "")) + "".join(item["tags"])
            if not keyword or keyword in text:
                hits.append(item)
        d -= timedelta(days=1)
    total = len(hits)
    return {
        "total": total,
        "page": page,
        "page_size": size,
        "total_pages": (total + size - 1) // size,
        "items": hits[(page - 1) * size : page * size],
    }


def warm(world: World) -> None:
    """Build the queries' shared indexes once: the popular ranking and the fund-name index."""
    popular_funds(world, 1)
    guess_fund_code(world, "基金", 1)
