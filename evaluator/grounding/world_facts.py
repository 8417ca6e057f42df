"""What the seeded world says about a fund on a day: its unit and accumulated NAV, and its other days.

The world (``server.world.World``) builds every fund's NAV history from the seed, so a true value can
be looked up by code and date; a value that is the fund's NAV on another day is stale.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from finmcp.evaluator.grounding.text import DateParts

STALE_WINDOW_DAYS = 45
"""How far from the claimed day (calendar days) another day's value counts as stale."""


class WorldFacts:
    """Look-ups of true values in one seeded world."""

    CACHE = 4096
    """NAV windows kept (code, day): the world keeps few whole series, a window is a few KiB."""

    def __init__(self, world: Any) -> None:
        self.world = world
        self._windows: dict[tuple[str, DateParts | None], list[dict[str, Any]]] = {}

    def knows(self, code: str) -> bool:
        """Whether ``code`` is a fund or strategy of the world."""
        return self.world.fund_stub(code) is not None or self.world.strategy(code) is not None

    def name_of(self, code: str) -> set[str]:
        """The names the world gives ``code`` (short and full for a fund)."""
        stub = self.world.fund_stub(code)
        if stub is not None:
            return {stub.name, stub.full_name}
        strategy = self.world.strategy(code) if code[:1].isalpha() else None
        return {strategy.name} if strategy is not None else set()

    def nav_days(self, code: str, day: DateParts | None) -> list[dict[str, Any]]:
        """The fund's NAV rows around the claimed day (its last rows when no full day is claimed)."""
        key = (code, day)
        rows = self._windows.get(key)
        if rows is None:
            if len(self._windows) >= self.CACHE:
                self._windows.clear()
            rows = self._windows[key] = self._nav_days(code, day)
        return rows

    def _nav_days(self, code: str, day: DateParts | None) -> list[dict[str, Any]]:
        if self.world.fund_stub(code) is None:
            return []
        as_of = self.world.as_of
        if day is not None and day[0] is not None and day[2] is not None:
            try:
                centre = date(day[0], day[1], day[2])
            except ValueError:
                return []
        else:
            centre = as_of
        start = centre - timedelta(days=STALE_WINDOW_DAYS)
        end = min(as_of, centre + timedelta(days=STALE_WINDOW_DAYS))
        return self.world.nav_history(code, start, end) or []

    def check_value(
        self, code: str, day: DateParts | None, target: float, tol: float
    ) -> tuple[str, str] | None:
        """("supported" | "stale", world fact) when ``target`` is the fund's NAV on the claimed day (or
        its latest when none) or on another day near it; None when the world does not have it."""
        rows = self.nav_days(code, day)
        if not rows:
            return None
        claimed = _day_text(day) if day is not None else rows[-1]["date"]
        rows = sorted(rows, key=lambda row: row["date"] != claimed)  # the claimed day first
        for row in rows:
            for key in ("nav", "acc_nav"):
                value = row.get(key)
                if value is not None and abs(value - target) <= tol:
                    fact = f"world: fund {code} {key} on {row['date']} = {value}"
                    if claimed is None or row["date"] == claimed:
                        return "supported", fact
                    return "stale", fact + f" (claimed for {claimed})"
        return None


def _day_text(day: DateParts) -> str | None:
    if day[0] is None or day[2] is None:
        return None
    return f"{day[0]:04d}-{day[1]:02d}-{day[2]:02d}"
