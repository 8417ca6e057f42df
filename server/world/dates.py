"""Date helpers (pure arithmetic, no locale)."""

from __future__ import annotations

from datetime import date


def shift_months(d: date, months: int) -> date:
    """``d`` moved by ``months`` calendar months, clamping the day to the month's length."""
    total = d.year * 12 + (d.month - 1) + months
    year, month = divmod(total, 12)
    month += 1
    days = (31, 29 if _leap(year) else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)[month - 1]
    return date(year, month, min(d.day, days))


def _leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def last_quarter_end(d: date) -> date:
    """The last calendar quarter end strictly before ``d``'s quarter (a report date that is published)."""
    q_month = ((d.month - 1) // 3) * 3  # month before the current quarter starts (0 => previous year)
    if q_month == 0:
        return date(d.year - 1, 12, 31)
    return date(d.year, q_month, (31, 30, 30, 31)[q_month // 3 - 1] if q_month != 6 else 30)


def iso(d: date | None) -> str | None:
    """ISO date string (or None)."""
    return None if d is None else d.isoformat()
