"""NAV series: shared market factors, per-fund daily returns by calendar year, series and metrics.

Daily returns are drawn per (entity, calendar year) from their own RNG, so any window of any series
can be produced without generating anything before it; levels are cumulative products of returns.
"""

from __future__ import annotations

import random
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from typing import overload

from finmcp.recordings.plumbing.seeding import rng_for

from . import trading_calendar as cal
from .dates import shift_months
from .quant import RISK_FREE, TRADING_DAYS_PER_YEAR, level_volatility, max_drawdown

_SQRT3 = 1.7320508075688772
SQRT6 = 2.449489742783178  # sqrt(6): scales a sum of 2 uniforms minus 1 to unit variance


@lru_cache(maxsize=64)
def year_bounds(year: int) -> tuple[int, int]:
    """Global trading-day index range ``[lo, hi)`` of ``year``."""
    return cal.index_on_or_after(date(year, 1, 1)), cal.index_on_or_before(date(year, 12, 31)) + 1


def noisy_returns(rng: random.Random, n: int, mu: float, vol: float) -> list[float]:
    """``n`` daily returns ``mu + vol * z``, z approximately standard normal (sum of 4 uniforms)."""
    r = rng.random
    s = vol * _SQRT3
    return [mu + (r() + r() + r() + r() - 2.0) * s for _ in range(n)]


def factor_year(seed: int, factor: str, year: int, vol: float, drift: float) -> array:
    """Daily returns of a shared market factor for every trading day of ``year``."""
    lo, hi = year_bounds(year)
    return array(
        "d", noisy_returns(rng_for(seed, "factor", factor, year), hi - lo, drift / TRADING_DAYS_PER_YEAR, vol)
    )


class Rounded(Sequence[float]):
    """``round(x, digits)`` of each value of an unrounded series, computed when read.

    A fund's unit NAV is its unrounded unit value rounded to 4 decimals; rounding all of a 20-year
    history up front cost more than building it, and most calls read one day or one window of it.
    """

    __slots__ = ("_raw", "_digits")

    def __init__(self, raw: Sequence[float], digits: int) -> None:
        self._raw = raw
        self._digits = digits

    def __len__(self) -> int:
        return len(self._raw)

    @overload
    def __getitem__(self, i: int) -> float: ...
    @overload
    def __getitem__(self, i: slice) -> list[float]: ...
    def __getitem__(self, i: int | slice) -> float | list[float]:
        if isinstance(i, slice):
            return [round(x, self._digits) for x in self._raw[i]]
        return round(self._raw[i], self._digits)

    def __iter__(self) -> Iterator[float]:
        digits = self._digits
        return (round(x, digits) for x in self._raw)

    def unrounded(self, i: int) -> float:
        """The value at ``i`` before rounding."""
        return self._raw[i]

    def scaled(self, factor: float) -> Rounded:
        """The series times ``factor`` (each unrounded value), rounded as this one."""
        return Rounded(array("d", (x * factor for x in self._raw)), self._digits)


@dataclass(frozen=True)
class NavSeries:
    """A daily series on trading days.

    ``adj`` is the unrounded total-return index (dividends reinvested, starts at 1.0); ``nav`` the
    unit NAV and ``acc_nav`` the accumulated NAV (unit NAV plus dividends paid per unit). Returns and
    risk metrics are computed from ``adj``.
    """

    start_index: int  # global trading-day index of dates[0]
    dates: tuple[str, ...]
    nav: Sequence[float]  # compact array('d') storage
    acc_nav: Sequence[float]
    adj: Sequence[float]

    def daily_return(self, i: int) -> float | None:
        """Return of day ``i`` against day ``i - 1`` (None on the first day)."""
        return None if i <= 0 else self.adj[i] / self.adj[i - 1] - 1.0

    def rounded_return(self, i: int) -> float | None:
        """:meth:`daily_return` rounded to 6 decimals, as the tools print it."""
        r = self.daily_return(i)
        return None if r is None else round(r, 6)

    def positions(self, start: date | None = None, end: date | None = None) -> range:
        """Series positions of the days in ``[start, end]`` (an open end runs to the series' edge)."""
        lo = 0 if start is None else max(0, cal.index_on_or_after(start) - self.start_index)
        hi = len(self.dates) - 1 if end is None else min(len(self.dates) - 1, self.index_of(end))
        return range(lo, hi + 1)

    def index_of(self, d: date) -> int:
        """Position of the last series day on or before ``d`` (-1 when before the series)."""
        return cal.index_on_or_before(d) - self.start_index if self.dates else -1

    def to_dict(self) -> dict:
        return {
            "dates": list(self.dates),
            "nav": list(self.nav),
            "accNav": list(self.acc_nav),
            "adj": list(self.adj),
        }


WINDOWS: tuple[tuple[str, int], ...] = (
    ("近1月", 1),
    ("近3月", 3),
    ("近6月", 6),
    ("近1年", 12),
    ("近2年", 24),
    ("近3年", 36),
    ("近5年", 60),
)


def window_base_index(series: NavSeries, end_i: int, months: int) -> int | None:
    """Series position of the base day of a trailing ``months`` window ending at ``end_i``."""
    end_day = date.fromisoformat(series.dates[end_i])
    base = series.index_of(shift_months(end_day, -months))
    if base < 0 or date.fromisoformat(series.dates[0]) > shift_months(end_day, -months):
        return None
    return base


def performance(series: NavSeries) -> dict:
    """Trailing returns, year-to-date, since-setup, annualised return, drawdown, volatility, Sharpe."""
    if not series.dates:
        return {}
    adj = series.adj
    end = len(adj) - 1
    out: dict[str, float | None] = {}
    for label, months in WINDOWS:
        base = window_base_index(series, end, months)
        out[label] = None if base is None else round(adj[end] / adj[base] - 1.0, 6)
    end_day = date.fromisoformat(series.dates[end])
    ytd_base = series.index_of(date(end_day.year - 1, 12, 31))
    out["今年来"] = None if ytd_base < 0 else round(adj[end] / adj[ytd_base] - 1.0, 6)
    out["成立来"] = round(adj[end] / adj[0] - 1.0, 6)
    years = end / TRADING_DAYS_PER_YEAR
    out["年化收益"] = round((adj[end] / adj[0]) ** (1.0 / years) - 1.0, 6) if years >= 1 else None
    base_1y = window_base_index(series, end, 12)
    lo = 0 if base_1y is None else base_1y
    vol = level_volatility(adj, lo, end)
    ret_1y = adj[end] / adj[lo] - 1.0
    out["近1年最大回撤"] = round(max_drawdown(adj, lo, end), 6)
    out["成立来最大回撤"] = round(max_drawdown(adj, 0, end), 6)
    out["近1年波动率"] = None if vol is None else round(vol, 6)
    span = (end - lo) / TRADING_DAYS_PER_YEAR
    if vol and span > 0.5 and vol > 1e-6:
        out["近1年夏普"] = round((ret_1y / span - RISK_FREE) / vol, 4)
    else:
        out["近1年夏普"] = None
    return out
