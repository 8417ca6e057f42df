"""What every Qieman fund-analysis builder shares: arguments, report dates and NAV windows.

Rules shared by the family (``fund_diagnosis``, ``fund_attribution``, ``fund_allocation``,
``fund_bonds``, ``fund_screens``):

- **Unknown codes.** Single-fund tools (``fundCode``) refuse with a ToolInputError naming the code;
  list tools (``fundCodeList`` / ``fundCodes``) skip unknown codes, so a list of only unknown codes
  gives an empty ``funds`` (or result) list.
- **Windows.** ``timeRange`` / ``timeInterval`` / ``timePeriod`` name a trailing window ending at the
  world's ``as_of``. NAV-based figures use exactly that window of daily returns (``LatestReportDate``:
  since the latest quarterly report date; ``fromSetupDate``: since setup; ``sinceTakingOffice``: since
  the current manager started; windows longer than the fund's life start at setup). Report-based
  figures (weights, turnover) are the latest report's values when the window is omitted or
  ``LatestReportDate``, else the window average, modelled as the latest values moved by a seeded drift
  per (fund, window) that grows with the window length (``server.world.fund_profiles``); a
  ``reportDate`` (yyyy.MM.dd) selects the quarterly report in effect on that day and is treated the
  same way.
- **Free-text filters** (``scope``, ``sumRatingType``) that name no region / rating bucket match
  nothing (empty lists), like a filter on data the server does not hold.

Every figure is derived from the seeded world: asset mix, holdings and industries from ``World.fund``;
returns, drawdowns, volatility and factor fits from the fund's daily returns (``server.world.quant``);
what the fund record does not model from the fund profiles (``server.world.fund_profiles``). These
tools have a designed output shape (no real sample), so they follow the outputSchema in ``tool_specs``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from finmcp.recordings.plumbing.seeding import derive_seed
from finmcp.server.sim.qieman.common import code_list_arg, one_of
from finmcp.server.sim.registry import BuildContext, ToolInputError
from finmcp.server.world import World, queries
from finmcp.server.world import trading_calendar as cal
from finmcp.server.world.dates import last_quarter_end, shift_months
from finmcp.server.world.fund_profiles import LATEST, SPECIAL_WINDOWS, WINDOW_MONTHS
from finmcp.server.world.funds import Fund, FundStub
from finmcp.server.world.navs import NavSeries, year_bounds
from finmcp.server.world.rng import unit


def fund_or_error(world: World, code: Any, tool: str, field: str = "fundCode") -> Fund:
    """The fund named by ``code`` or a ToolInputError naming the tool and field."""
    if not isinstance(code, str) or not code:
        raise ToolInputError(f"{tool}: {field} is required (a six-digit fund code)")
    fund = world.fund(code)
    if fund is None:
        raise ToolInputError(f"{tool}: {field} {code!r} is not a known fund")
    return fund


def known_stubs(world: World, args: dict, field: str, tool: str, limit: int | None = None) -> list[FundStub]:
    """Stubs of the known codes of the code-list argument ``field`` (unknown codes skipped, order kept)."""
    return [s for s in (world.fund_stub(c) for c in code_list_arg(args, field, tool, limit)) if s is not None]


def latest_report_entry(world: World, stub: FundStub, **fields: Any) -> dict[str, Any]:
    """``{fundCode, fundName, reportDate, **fields}``: one fund of a list tool, as of the latest report."""
    return {
        "fundCode": stub.code,
        "fundName": stub.name,
        "reportDate": latest_report_date(world).isoformat(),
        **fields,
    }


def known_funds(world: World, codes: list[str]) -> list[Fund]:
    """Funds of ``codes`` that exist (unknown codes skipped)."""
    return [f for f in (world.fund(c) for c in codes) if f is not None]


def resolve_fund(world: World, query: Any, tool: str) -> Fund:
    """A fund from a code or a (partial) name, best match first."""
    q = (query or "").strip() if isinstance(query, str) else ""
    if not q:
        raise ToolInputError(f"{tool}: fundNameOrCode is required (a fund code or name)")
    if q.isdigit() and len(q) == 6:  # a code names one fund exactly; no fuzzy fallback to another
        fund = world.fund(q)
        if fund is None:
            raise ToolInputError(f"{tool}: no fund with code {q}")
        return fund
    matches = queries.guess_fund_code(world, q, limit=1)
    if not matches:
        raise ToolInputError(f"{tool}: no fund matches fundNameOrCode {q!r}")
    return world.require_fund(matches[0]["code"])


def latest_report_date(world: World) -> date:
    """The latest published quarterly report date."""
    return last_quarter_end(world.as_of)


def latest_semiannual_date(world: World) -> date:
    """The latest half-year or annual report date."""
    d = latest_report_date(world)
    while d.month not in (6, 12):
        d = last_quarter_end(d)
    return d


def report_date_for(world: World, fund: Fund, window: str) -> str:
    return fund.holdings["report_date"] if window == LATEST else latest_report_date(world).isoformat()


NAV_WINDOWS = (*WINDOW_MONTHS, "fromSetupDate", "sinceTakingOffice")
"""Windows of the NAV-only tools (no report date to anchor ``LatestReportDate``)."""


def fund_and_window(
    ctx: BuildContext,
    args: dict,
    tool: str,
    field: str = "timeRange",
    default: str = LATEST,
    allowed: Sequence[str] | None = None,
) -> tuple[World, Fund, str]:
    """(world, the fund of ``fundCode``, the validated window of ``args[field]``); the fund is checked first."""
    fund = fund_or_error(ctx.world, args.get("fundCode"), tool)
    return ctx.world, fund, window_key(args, field, tool, default, allowed)


def window_key(
    args: dict, field: str, tool: str, default: str | None, allowed: Sequence[str] | None = None
) -> str:
    """The validated window name of ``args[field]`` (``default`` when absent)."""
    key = args.get(field)
    if key is None:
        key = default or LATEST
    return one_of(key, field, tool, tuple(allowed) if allowed else (*WINDOW_MONTHS, *SPECIAL_WINDOWS))


def report_date_arg(world: World, args: dict, tool: str) -> str | None:
    """The report in effect at ``reportDate`` (yyyy.MM.dd) as ISO, or None when absent.

    Any date is accepted: it selects the latest quarterly report on or before it (dates after the
    latest published report select that report).
    """
    raw = args.get("reportDate")
    if raw in (None, ""):
        return None
    try:
        y, m, d = (int(p) for p in str(raw).split("."))
        day = date(y, m, d)
    except ValueError:
        raise ToolInputError(f"{tool}: reportDate {raw!r} must be yyyy.MM.dd, e.g. 2024.03.31") from None
    if (m, d) not in ((3, 31), (6, 30), (9, 30), (12, 31)):
        day = last_quarter_end(day)
    latest = latest_report_date(world)
    if day.year < 2000:
        raise ToolInputError(f"{tool}: reportDate {raw!r} is before the first report of any fund")
    return min(day, latest).isoformat()


def nav_window(world: World, fund: Fund, window: str) -> tuple[NavSeries, int, int]:
    """(series, lo, hi): the fund's daily series and the positions bounding the window."""
    series, _, _ = world.fund_nav_series(fund.code)
    hi = len(series.dates) - 1
    if hi < 1:
        return series, 0, max(hi, 0)
    end_day = date.fromisoformat(series.dates[hi])
    if window in WINDOW_MONTHS:
        start = shift_months(end_day, -WINDOW_MONTHS[window])
    elif window == LATEST:
        start = latest_report_date(world)
    elif window == "sinceTakingOffice" and fund.managers:
        start = date.fromisoformat(min(m["start_date"] for m in fund.managers))
    else:
        start = date.fromisoformat(series.dates[0])
    lo = max(0, series.index_of(start))
    return series, lo, hi


def window_dates(series: NavSeries, lo: int, hi: int) -> tuple[str, str]:
    """ISO start and end dates of a window."""
    return series.dates[lo], series.dates[hi]


def index_return(world: World, code: str, start: str, end: str) -> float:
    """Return of a world index between two ISO dates."""
    s = world.index_series(code)
    i, j = s.index_of(date.fromisoformat(start)), s.index_of(date.fromisoformat(end))
    return s.adj[j] / s.adj[max(i, 0)] - 1.0


def factor_returns(world: World, factor: str, start: str, end: str) -> list[float]:
    """Daily returns of a shared factor over trading days ``(start, end]``."""
    g0 = cal.index_on_or_before(date.fromisoformat(start)) + 1
    g1 = cal.index_on_or_before(date.fromisoformat(end))
    out: list[float] = []
    days = cal.all_trading_days()
    for year in range(days[g0].year, days[g1].year + 1):
        lo, hi = year_bounds(year)
        chunk = world.factor_year(factor, year)
        out.extend(chunk[max(g0, lo) - lo : min(g1 + 1, hi) - lo])
    return out


def month_end_positions(series: NavSeries, lo: int, hi: int) -> list[int]:
    out = [lo]
    for i in range(lo + 1, hi):
        if series.dates[i][:7] != series.dates[i + 1][:7]:
            out.append(i)
    out.append(hi)
    return out


def split_total(total: float, weights: list[float], world: World, *key: object) -> list[float]:
    """Split ``total`` across items in proportion to ``weights`` with seeded tilts; parts sum to total."""
    if not weights:
        return []
    h = derive_seed(world.seed, "split", *key)
    raw = [w * (0.4 + 1.2 * unit(h + i)) for i, w in enumerate(weights)]
    s = sum(raw) or 1.0
    parts = [round(total * x / s, 6) for x in raw]
    parts[0] = round(total - sum(parts[1:]), 6)
    return parts
