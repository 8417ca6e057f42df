"""Entity universes and per-symbol price histories for the schema-driven simulator.

Every instrument type the FinToolBench tools talk about (``tool_specs.entities``) gets a deterministic
universe: A-shares, funds, indices and bonds come from the seeded :class:`World`; US tickers, futures,
options, crypto coins, currency pairs, industries and exchanges are small fixed lists (real market
identifiers are facts). Any code outside a universe still works: its name and price level are derived
from ``(seed, code)``.

Price histories: a symbol's close on a trading day is the same in every schema-driven tool. Each symbol
walks backwards from its as-of level (the world stock price, the index's nominal level, or a level
derived from ``(seed, symbol)``) using per-(symbol, year) random chunks, so a day's bar never depends on
the range that was asked for. Fund NAVs here are *not* the Qieman NAV series (``World.nav_history``):
building those costs ~12 ms per fund, too slow for list tools, and the two inventories are served
separately.
"""

from __future__ import annotations

import weakref
from array import array
from dataclasses import dataclass
from datetime import date
from itertools import accumulate, islice
from typing import Any

from finmcp.recordings.plumbing.seeding import derive_seed, rng_for
from finmcp.server.world import World
from finmcp.server.world import trading_calendar as cal
from finmcp.server.world import vocab as v
from finmcp.tool_specs.entities import INSTRUMENT_ENTITIES

US_TICKERS: tuple[tuple[str, str], ...] = (
    ("AAPL", "Apple Inc."),
    ("MSFT", "Microsoft Corporation"),
    ("GOOGL", "Alphabet Inc."),
    ("AMZN", "Amazon.com, Inc."),
    ("NVDA", "NVIDIA Corporation"),
    ("META", "Meta Platforms, Inc."),
    ("TSLA", "Tesla, Inc."),
    ("JPM", "JPMorgan Chase & Co."),
    ("V", "Visa Inc."),
    ("JNJ", "Johnson & Johnson"),
    ("WMT", "Walmart Inc."),
    ("PG", "The Procter & Gamble Company"),
    ("XOM", "Exxon Mobil Corporation"),
    ("BAC", "Bank of America Corporation"),
    ("KO", "The Coca-Cola Company"),
    ("PEP", "PepsiCo, Inc."),
    ("DIS", "The Walt Disney Company"),
    ("NFLX", "Netflix, Inc."),
    ("INTC", "Intel Corporation"),
    ("AMD", "Advanced Micro Devices, Inc."),
    ("NKE", "NIKE, Inc."),
    ("BABA", "Alibaba Group Holding Limited"),
    ("ORCL", "Oracle Corporation"),
    ("CSCO", "Cisco Systems, Inc."),
)
CRYPTO: tuple[tuple[str, str], ...] = (
    ("BTC", "Bitcoin"),
    ("ETH", "Ethereum"),
    ("USDT", "Tether"),
    ("BNB", "BNB"),
    ("SOL", "Solana"),
    ("XRP", "XRP"),
    ("ADA", "Cardano"),
    ("DOGE", "Dogecoin"),
    ("TRX", "TRON"),
    ("DOT", "Polkadot"),
    ("LTC", "Litecoin"),
    ("AVAX", "Avalanche"),
)
CURRENCY_PAIRS: tuple[tuple[str, str], ...] = (
    ("USDCNY", "美元人民币"),
    ("EURUSD", "欧元美元"),
    ("USDJPY", "美元日元"),
    ("GBPUSD", "英镑美元"),
    ("USDHKD", "美元港币"),
    ("AUDUSD", "澳元美元"),
    ("EURCNY", "欧元人民币"),
    ("USDCHF", "美元瑞郎"),
)
FUTURES_PRODUCTS: tuple[tuple[str, str, float], ...] = (
    ("rb", "螺纹钢", 3200.0),
    ("cu", "沪铜", 78000.0),
    ("au", "沪金", 820.0),
    ("ag", "沪银", 9800.0),
    ("al", "沪铝", 20500.0),
    ("m", "豆粕", 2900.0),
    ("c", "玉米", 2200.0),
    ("i", "铁矿石", 780.0),
    ("SR", "白糖", 5600.0),
    ("CF", "棉花", 13800.0),
    ("TA", "PTA", 4700.0),
    ("MA", "甲醇", 2400.0),
    ("IF", "沪深300股指", 4500.0),
    ("IC", "中证500股指", 7000.0),
    ("T", "10年期国债", 108.0),
    ("sc", "原油", 500.0),
)
EXCHANGES: tuple[tuple[str, str], ...] = (
    ("SSE", "上海证券交易所"),
    ("SZSE", "深圳证券交易所"),
    ("NASDAQ", "NASDAQ"),
    ("NYSE", "New York Stock Exchange"),
    ("HKEX", "香港交易所"),
    ("SHFE", "上海期货交易所"),
)
REGIONS: tuple[tuple[str, str], ...] = (
    ("US", "United States"),
    ("CN", "China"),
    ("HK", "Hong Kong"),
    ("GB", "United Kingdom"),
    ("DE", "Germany"),
    ("JP", "Japan"),
)
INSTRUMENT_TYPES = INSTRUMENT_ENTITIES | {"exchange", "region"}


@dataclass(frozen=True)
class Entity:
    """One instrument: its type, code and display name."""

    type: str
    code: str
    name: str


class _WorldCache:
    def __init__(self) -> None:
        self.universes: dict[tuple[str, bool], tuple[Entity, ...]] = {}
        self.names: dict[tuple[str, str], str] = {}
        self.chunks: dict[tuple[str, int], tuple[array, ...]] = {}
        self.closes: dict[tuple[str, int], array] = {}


_CACHES: weakref.WeakKeyDictionary[World, _WorldCache] = weakref.WeakKeyDictionary()
_MAX_YEARS = 256
"""(symbol, year) chunks kept per cache (8 KiB of noise, 2 KiB of closes each); beyond it the oldest
quarter is dropped (rebuilt identically when asked again)."""


def _keep(cache: dict, key: tuple, value: Any) -> None:
    if len(cache) >= _MAX_YEARS:
        for old in list(islice(cache, len(cache) // 4)):
            cache.pop(old, None)
    cache[key] = value


def _cache(world: World) -> _WorldCache:
    cache = _CACHES.get(world)
    if cache is None:
        cache = _CACHES[world] = _WorldCache()
    return cache


def _futures_contracts(as_of: date) -> list[Entity]:
    out = []
    for code, name, _ in FUTURES_PRODUCTS:
        yy, mm = as_of.year % 100, as_of.month + 1
        if mm > 12:
            yy, mm = yy + 1, mm - 12
        out.append(Entity("futures_symbol", f"{code}{yy:02d}{mm:02d}", f"{name}{yy:02d}{mm:02d}"))
    return out


def universe(world: World, etype: str, western: bool = False) -> tuple[Entity, ...]:
    """The deterministic list of entities of ``etype`` (``western``: US-style tickers for stocks)."""
    cache = _cache(world)
    key = (etype, western)
    if key in cache.universes:
        return cache.universes[key]
    if etype == "stock_symbol" and western or etype == "company_id":
        items = [Entity(etype, c, n) for c, n in US_TICKERS]
    elif etype == "stock_symbol":
        items = [Entity(etype, s["code"], s["name"]) for s in world.stocks()]
    elif etype == "fund_code":
        uni = world.fund_universe()
        items = [Entity(etype, c, s.name) for c, s in uni.items()]
    elif etype == "index_symbol":
        items = [Entity(etype, s[0], s[1]) for s in v.INDICES]
    elif etype == "bond_code":
        items = [Entity(etype, b["code"], b["name"]) for b in world.bonds()]
    elif etype == "futures_symbol":
        items = _futures_contracts(world.as_of)
    elif etype == "option_symbol":
        items = [
            Entity(etype, f"{f.code}-{kind}-{strike}", f"{f.name}{'购' if kind == 'C' else '沽'}{strike}")
            for f in _futures_contracts(world.as_of)[:6]
            for kind in ("C", "P")
            for strike in (100, 110)
        ]
    elif etype == "crypto_symbol":
        items = [Entity(etype, c, n) for c, n in CRYPTO]
    elif etype == "currency_pair":
        items = [Entity(etype, c, n) for c, n in CURRENCY_PAIRS]
    elif etype == "industry":
        items = [Entity(etype, f"BK{1000 + i:04d}", n) for i, n in enumerate(v.INDUSTRIES)]
    elif etype == "exchange":
        items = [Entity(etype, c, n) for c, n in EXCHANGES]
    elif etype == "region":
        items = [Entity(etype, c, n) for c, n in REGIONS]
    elif etype == "article_id":
        items = [
            Entity(etype, str(4_000_000 + derive_seed(world.seed, "article", i) % 900_000), "")
            for i in range(40)
        ]
    else:
        items = [Entity("stock_symbol", s["code"], s["name"]) for s in world.stocks()]
    cache.universes[key] = tuple(items)
    return cache.universes[key]


def entity_name(world: World, etype: str, code: str) -> str:
    """The display name of ``code``: the world's name when known, else one derived from (seed, code)."""
    cache = _cache(world)
    key = (etype, code)
    if key in cache.names:
        return cache.names[key]
    name = None
    bare = code.split(".")[0].lower().removeprefix("sh").removeprefix("sz").removeprefix("bj")
    if etype == "fund_code":
        stub = world.fund_stub(bare)
        name = stub.name if stub else None
    elif etype == "stock_symbol" and bare.isdigit():
        stock = world.stock(bare)
        name = stock["name"] if stock else None
    if name is None:
        for ent in universe(world, etype, western=not bare.isdigit()):
            if ent.code.lower() == code.lower() or ent.code == bare:
                name = ent.name
                break
    if name is None:
        n = derive_seed(world.seed, "entity_name", etype, code)
        if etype in ("stock_symbol", "company_id") and not bare.isdigit():
            name = f"{code.upper()} Holdings Inc."
        else:
            industry = v.INDUSTRIES[n % len(v.INDUSTRIES)]
            prefix = v.STOCK_PREFIXES[(n >> 8) % len(v.STOCK_PREFIXES)]
            middle = v.STOCK_MIDDLES[(n >> 16) % len(v.STOCK_MIDDLES)]
            name = prefix + middle + v.INDUSTRY_SUFFIX[industry]
    cache.names[key] = name
    return name


def price_level(world: World, etype: str, code: str) -> float:
    """The as-of price level of a symbol, the same in every tool."""
    bare = code.split(".")[0].lower().removeprefix("sh").removeprefix("sz")
    if etype == "stock_symbol" and bare.isdigit():
        stock = world.stock(bare)
        if stock:
            return stock["price"]
    for index_code, _, index_level, _, _ in v.INDICES:
        if etype == "index_symbol" and code == index_code:
            u = (derive_seed(world.seed, "index_level", code) % 1000) / 1000
            return round(index_level * (0.9 + 0.2 * u), 2)
    for product, _, level in FUTURES_PRODUCTS:
        if etype in ("futures_symbol", "option_symbol") and code.startswith(product):
            return level
    u = (derive_seed(world.seed, "price_level", etype, code.upper()) % 1_000_000) / 1_000_000
    if etype == "crypto_symbol":
        return {"BTC": 65000.0, "ETH": 3200.0, "USDT": 1.0}.get(code.upper(), round(0.05 + u * u * 600, 4))
    if etype == "currency_pair":
        return round(0.5 + u * 7, 4)
    if etype == "index_symbol":
        return round(800 + u * 8000, 2)
    if etype == "fund_code":
        return round(0.8 + u * 2.5, 4)
    if etype == "bond_code":
        return round(95 + u * 15, 3)
    return round(3 + u * u * 300, 2)


def _year_bounds(year: int) -> tuple[int, int]:
    return cal.index_on_or_after(date(year, 1, 1)), cal.index_on_or_before(date(year, 12, 31)) + 1


def _noise_year(world: World, key: str, year: int) -> tuple[array, ...]:
    """(gap, wick_high, wick_low, volume_factor) for every trading day of ``year``."""
    cache = _cache(world)
    got = cache.chunks.get((key, year))
    if got is not None:
        return got
    lo, hi = _year_bounds(year)
    r = rng_for(world.seed, "sim_bar_noise", key, year).random
    draws = [r() for _ in range(4 * (hi - lo))]  # day by day: gap, wick high, wick low, volume
    cols = (  # arrays: the same doubles in a quarter of a list's memory
        array("d", [x - 0.5 for x in draws[0::4]]),
        array("d", draws[1::4]),
        array("d", draws[2::4]),
        array("d", [0.5 + x for x in draws[3::4]]),
    )
    _keep(cache.chunks, (key, year), cols)
    return cols


def _anchor(world: World, key: str, level: float, year: int) -> float:
    """The close on the first trading day of ``year`` (the as-of level for years after as-of)."""
    if year > world.as_of.year:
        return level
    u = (derive_seed(world.seed, "sim_anchor", key, year) % 10_000) / 10_000
    return level * (0.6 + 0.8 * u)


def _year_closes(world: World, key: str, level: float, year: int) -> array:
    """Closes of one year: a bridge from this year's anchor to the next one (or to ``level`` at as-of).

    Each year depends only on its own draws and two anchors, so any day costs O(one year) to build.
    """
    cache = _cache(world)
    got = cache.closes.get((key, year))
    if got is not None:
        return got
    lo, hi = _year_bounds(year)
    g_end = cal.index_on_or_before(world.as_of)
    last_year = year == world.as_of.year
    n = (g_end + 1 - lo) if last_year else (hi - lo)
    a0 = _anchor(world, key, level, year)
    a1 = level if last_year else _anchor(world, key, level, year + 1)
    r = rng_for(world.seed, "sim_returns", key, year).random
    walk = list(accumulate([(r() - 0.5) * 0.04 for _ in range(n)], initial=0.0))  # walk[t-1] + step
    total = walk[-1] if last_year else walk[n]
    span = (n - 1) if last_year else n
    closes = array(
        "d",
        [
            (a0 + (a1 - a0) * frac) * (1.0 + max(-0.5, walk[t] - frac * total))
            for t, frac in ((t, t / span if span else 1.0) for t in range(n))
        ],
    )
    _keep(cache.closes, (key, year), closes)
    return closes


def _close(world: World, key: str, level: float, g: int) -> float:
    year = cal.all_trading_days()[g].year
    return _year_closes(world, key, level, year)[g - _year_bounds(year)[0]]


@dataclass(frozen=True)
class Bar:
    """One daily bar of a symbol."""

    day: date
    open: float
    high: float
    low: float
    close: float
    prev_close: float
    volume: int
    acc_close: float


def _decimals(level: float) -> int:
    return 4 if level < 20 else 2


def bars(world: World, entity: Entity, days: list[int]) -> dict[int, Bar]:
    """Daily bars of ``entity`` for the given global trading-day indices (days after as-of are skipped)."""
    g_end = cal.index_on_or_before(world.as_of)
    days = [g for g in days if 0 < g <= g_end]
    if not days:
        return {}
    key = f"{entity.type}:{entity.code.upper()}"
    level = price_level(world, entity.type, entity.code)
    dec = 4 if entity.type in ("fund_code", "currency_pair") else _decimals(level)
    base_volume = max(100, int(5e8 / (level + 5)))
    acc_offset = 0.0
    if entity.type == "fund_code":  # accumulated NAV adds back the distributions paid so far
        acc_offset = round((derive_seed(world.seed, "acc_offset", entity.code) % 1000) / 1000, 4)
    out = {}
    all_days = cal.all_trading_days()
    for g in days:
        year = all_days[g].year
        lo = _year_bounds(year)[0]
        gap, wick_hi, wick_lo, vol = (col[g - lo] for col in _noise_year(world, key, year))
        close = round(_close(world, key, level, g), dec)
        prev = round(_close(world, key, level, g - 1), dec)
        open_ = round(prev * (1 + 0.01 * gap), dec)
        high = round(max(open_, close) * (1 + 0.015 * wick_hi), dec)
        low = round(min(open_, close) * (1 - 0.015 * wick_lo), dec)
        out[g] = Bar(
            all_days[g], open_, high, low, close, prev, int(base_volume * vol), round(close + acc_offset, dec)
        )
    return out
