"""The seeded synthetic financial world the simulator answers from.

``World(seed)`` builds funds, strategies, market data, content, users and plans lazily from the
seed alone; see ``world.World``. Trading-calendar helpers are re-exported here.
"""

from .trading_calendar import is_trading_day, trading_days, txn_day_range
from .world import World

__all__ = ["World", "is_trading_day", "trading_days", "txn_day_range"]
