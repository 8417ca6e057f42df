"""Shanghai/Shenzhen exchange trading calendar.

A trading day is a weekday on which the exchanges are open. The closure table below lists every
weekday closure for 2001-2026 (statutory holidays plus bridging days the exchanges close on);
weekend make-up working days are never trading days. The table was cross-checked against the
``holidays`` package (0.109, financial calendars XSHG and XSHE agree) and ``chinese-calendar``
(1.11.0; it differs only on 2024-02-09, when the exchanges closed although it was a working day).
Outside the table only the fixed-date holidays (1 Jan, 1 May, 1-7 Oct) are closed.
"""

from __future__ import annotations

import bisect
from datetime import date, timedelta
from functools import lru_cache

CALENDAR_START = date(2001, 1, 1)
CALENDAR_END = date(2030, 12, 31)

# year -> weekday closures as MMDD
_CLOSURES = {
    2001: "0101 0124 0125 0126 0129 0130 0501 0502 0503 0504 0507 1001 1002 1003 1004 1005",
    2002: "0101 0102 0103 0212 0213 0214 0215 0218 0501 0502 0503 0506 0507 1001 1002 1003 1004 1007",
    2003: "0101 0203 0204 0205 0206 0207 0501 0502 0505 0506 0507 1001 1002 1003 1006 1007",
    2004: "0101 0122 0123 0126 0127 0128 0503 0504 0505 0506 0507 1001 1004 1005 1006 1007",
    2005: "0103 0209 0210 0211 0214 0215 0502 0503 0504 0505 0506 1003 1004 1005 1006 1007",
    2006: "0102 0103 0130 0131 0201 0202 0203 0501 0502 0503 0504 0505 1002 1003 1004 1005 1006",
    2007: "0101 0102 0103 0219 0220 0221 0222 0223 0501 0502 0503 0504 0507 1001 1002 1003 1004 1005 1231",
    2008: "0101 0206 0207 0208 0211 0212 0404 0501 0502 0609 0915 0929 0930 1001 1002 1003",
    2009: "0101 0102 0126 0127 0128 0129 0130 0406 0501 0528 0529 1001 1002 1005 1006 1007 1008",
    2010: "0101 0215 0216 0217 0218 0219 0405 0503 0614 0615 0616 0922 0923 0924 1001 1004 1005 1006 1007",
    2011: "0103 0202 0203 0204 0207 0208 0404 0405 0502 0606 0912 1003 1004 1005 1006 1007",
    2012: "0102 0103 0123 0124 0125 0126 0127 0402 0403 0404 0430 0501 0622 1001 1002 1003 1004 1005",
    2013: "0101 0102 0103 0211 0212 0213 0214 0215 0404 0405 0429 0430 0501 0610 0611 0612 0919 0920 1001 1002 1003 1004 1007",
    2014: "0101 0131 0203 0204 0205 0206 0407 0501 0502 0602 0908 1001 1002 1003 1006 1007",
    2015: "0101 0102 0218 0219 0220 0223 0224 0406 0501 0622 0903 0904 1001 1002 1005 1006 1007",
    2016: "0101 0208 0209 0210 0211 0212 0404 0502 0609 0610 0915 0916 1003 1004 1005 1006 1007",
    2017: "0102 0127 0130 0131 0201 0202 0403 0404 0501 0529 0530 1002 1003 1004 1005 1006",
    2018: "0101 0215 0216 0219 0220 0221 0405 0406 0430 0501 0618 0924 1001 1002 1003 1004 1005 1231",
    2019: "0101 0204 0205 0206 0207 0208 0405 0501 0502 0503 0607 0913 1001 1002 1003 1004 1007",
    2020: "0101 0124 0127 0128 0129 0130 0131 0406 0501 0504 0505 0625 0626 1001 1002 1005 1006 1007 1008",
    2021: "0101 0211 0212 0215 0216 0217 0405 0503 0504 0505 0614 0920 0921 1001 1004 1005 1006 1007",
    2022: "0103 0131 0201 0202 0203 0204 0404 0405 0502 0503 0504 0603 0912 1003 1004 1005 1006 1007",
    2023: "0102 0123 0124 0125 0126 0127 0405 0501 0502 0503 0622 0623 0929 1002 1003 1004 1005 1006",
    2024: "0101 0209 0212 0213 0214 0215 0216 0404 0405 0501 0502 0503 0610 0916 0917 1001 1002 1003 1004 1007",
    2025: "0101 0128 0129 0130 0131 0203 0204 0404 0501 0502 0505 0602 1001 1002 1003 1006 1007 1008",
    2026: "0101 0102 0216 0217 0218 0219 0220 0223 0406 0501 0504 0505 0619 0925 1001 1002 1005 1006 1007",
}
_FIXED_CLOSURES = ("0101", "0501", "1001", "1002", "1003", "1004", "1005", "1006", "1007")


@lru_cache(maxsize=1)
def _closed() -> frozenset[date]:
    out: set[date] = set()
    for year in range(CALENDAR_START.year, CALENDAR_END.year + 1):
        tokens = _CLOSURES[year].split() if year in _CLOSURES else _FIXED_CLOSURES
        out.update(date(year, int(t[:2]), int(t[2:])) for t in tokens)
    return frozenset(out)


@lru_cache(maxsize=1)
def all_trading_days() -> tuple[date, ...]:
    """Every trading day in the supported range, ascending."""
    closed = _closed()
    days = []
    d = CALENDAR_START
    one = timedelta(days=1)
    while d <= CALENDAR_END:
        if d.weekday() < 5 and d not in closed:
            days.append(d)
        d += one
    return tuple(days)


@lru_cache(maxsize=1)
def all_trading_day_strings() -> tuple[str, ...]:
    """``all_trading_days()`` as ISO strings."""
    return tuple(d.isoformat() for d in all_trading_days())


@lru_cache(maxsize=1)
def _day_index() -> dict[date, int]:
    return {d: i for i, d in enumerate(all_trading_days())}


def _check(d: date) -> None:
    if not isinstance(d, date):
        raise TypeError(f"calendar: expected a datetime.date, got {type(d).__name__}")
    if not CALENDAR_START <= d <= CALENDAR_END:
        raise ValueError(f"calendar: date {d.isoformat()} outside {CALENDAR_START}..{CALENDAR_END}")


def is_trading_day(d: date) -> bool:
    """True when the Shanghai/Shenzhen exchanges are open on ``d``."""
    _check(d)
    return d in _day_index()


def index_on_or_before(d: date) -> int:
    """Index in ``all_trading_days()`` of the last trading day on or before ``d`` (-1 if none)."""
    _check(d)
    return bisect.bisect_right(all_trading_days(), d) - 1


def index_on_or_after(d: date) -> int:
    """Index in ``all_trading_days()`` of the first trading day on or after ``d``."""
    _check(d)
    return bisect.bisect_left(all_trading_days(), d)


def trading_day_on_or_before(d: date) -> date:
    """The last trading day on or before ``d``."""
    i = index_on_or_before(d)
    if i < 0:
        raise ValueError(f"calendar: no trading day on or before {d.isoformat()}")
    return all_trading_days()[i]


def trading_days(start: date, end: date) -> list[date]:
    """Trading days in ``[start, end]`` (both inclusive), ascending; empty when ``start > end``."""
    _check(start)
    _check(end)
    days = all_trading_days()
    return list(days[bisect.bisect_left(days, start) : bisect.bisect_right(days, end)])


def txn_day_range(center: date, before: int, after: int) -> list[date]:
    """``before`` trading days before the anchor, the anchor, and ``after`` trading days after it.

    The anchor is ``center`` when it is a trading day, else the next trading day (an order placed on a
    holiday is processed on the next trading day).
    """
    if before < 0 or after < 0:
        raise ValueError(f"txn_day_range: before/after must be >= 0, got {before}/{after}")
    days = all_trading_days()
    i = index_on_or_after(center)
    lo, hi = i - before, i + after
    if lo < 0 or hi >= len(days):
        raise ValueError(f"txn_day_range: range around {center.isoformat()} leaves the calendar")
    return list(days[lo : hi + 1])
