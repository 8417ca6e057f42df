"""What the world's builders may use of the world: :class:`WorldView`, a protocol of 21 members.

The builders (``funds``, ``fund_profiles``, ``market``, ``strategies``, ``users``, ``content``,
``planning``) derive one kind of entity each from the seed and, for what it depends on, from other
entities of the same world (a fund's NAV needs its stub and the factor returns; a strategy's NAV its
constituent funds' returns). They take a :class:`WorldView`, never the whole
:class:`~server.world.world.World` facade: the facade builds, caches and serves; the builders call
back only for the seed, the as-of date, the memo and the entities below. The tools' queries (search,
ranking, guessing) are not here: they live in :mod:`server.world.queries`, above the facade.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from datetime import date
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    from .funds import Fund, FundStub
    from .navs import NavSeries
    from .strategies import Strategy


class WorldView(Protocol):
    """The seed, the as-of date, the memo, and the entities a builder may derive from."""

    MANAGERS_PER_COMPANY: ClassVar[int]
    seed: int
    as_of: date

    def memo(self, key: tuple, build: Callable[[], Any]) -> Any:
        """``build()`` once per key while the world's caches live."""
        ...

    # funds
    def fund_codes(self) -> list[str]:
        """Every fund code of the world, sorted."""
        ...

    def require_stub(self, code: str) -> FundStub:
        """A fund's stub (KeyError for an unknown code)."""
        ...

    def codes_by_type(self, fund_type: str) -> list[str]:
        """The fund codes of one fund type."""
        ...

    def fund(self, code: str) -> Fund | None:
        """A fund's full record, or None."""
        ...

    def require_fund(self, code: str) -> Fund:
        """A fund's full record (KeyError for an unknown code)."""
        ...

    def fund_nav_series(self, code: str) -> tuple[NavSeries, list[dict], list[dict]]:
        """A fund's NAV series, dividend rows and split rows."""
        ...

    def fund_returns_year(self, stub: FundStub, year: int) -> array:
        """A fund's daily returns of one calendar year."""
        ...

    def factor_year(self, factor: str, year: int) -> array:
        """A market factor's daily returns of one calendar year."""
        ...

    def recent_returns(self, code: str, n: int) -> list[tuple[str, float]]:
        """A fund's last ``n`` daily returns with their dates."""
        ...

    def manager(self, company_idx: int, k: int) -> dict:
        """The ``k``-th manager of a fund company."""
        ...

    # market
    def stocks(self) -> list[dict]:
        """The world's stocks."""
        ...

    def bonds(self) -> list[dict]:
        """The world's bonds."""
        ...

    def index_series(self, code: str) -> NavSeries:
        """An index's value series."""
        ...

    # strategies and content
    def strategy_codes(self) -> list[str]:
        """Every strategy code of the world."""
        ...

    def require_strategy(self, code: str) -> Strategy:
        """A strategy (KeyError for an unknown code)."""
        ...

    def news_for_day(self, d: date) -> list[dict]:
        """News published on one day."""
        ...

    def viewpoints_for_day(self, d: date) -> list[dict]:
        """Manager viewpoints published on one day."""
        ...
