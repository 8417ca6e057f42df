"""Funds: the deterministic universe of codes (with names for search) and full fund records (NAVs: ``fund_navs``)."""

from __future__ import annotations

from collections.abc import Mapping
from copy import deepcopy
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

from finmcp.recordings.plumbing.seeding import rng_for

from . import trading_calendar as cal
from . import vocab as v
from .dates import last_quarter_end
from .fund_navs import latest_values
from .navs import NavSeries, performance
from .rng import money, pick, ratio, sample, split_basis_points, weighted_pick

if TYPE_CHECKING:
    from .view import WorldView

N_PRODUCTS = 1800
_LEGACY_PREFIXES = (
    "110",
    "161",
    "162",
    "163",
    "519",
    "420",
    "240",
    "270",
    "050",
    "202",
    "217",
    "090",
    "320",
    "180",
)
STATUS_TEXT = {"0": "正常开放", "5": "暂停申购", "6": "暂停赎回", "4": "停止交易", "9": "封闭期"}
_THEME_INDUSTRY = {
    "中证医疗": "医药生物",
    "医疗健康": "医药生物",
    "医药健康": "医药生物",
    "医疗创新": "医药生物",
    "中证白酒": "食品饮料",
    "中证消费": "食品饮料",
    "消费升级": "食品饮料",
    "新能源车": "汽车",
    "新能源": "电力设备",
    "光伏产业": "电力设备",
    "半导体": "电子",
    "科技创新": "电子",
    "科创50": "电子",
    "证券公司": "非银金融",
    "中证银行": "银行",
    "中证军工": "国防军工",
    "数字经济": "计算机",
    "科技领航": "计算机",
    "中证红利": "银行",
    "红利": "银行",
    "中证红利低波动": "银行",
}


@dataclass(frozen=True)
class FundStub:
    """What search needs about a fund, built for the whole universe at once (cheap)."""

    code: str
    name: str
    full_name: str
    fund_type: str
    theme: str
    company: str
    company_full: str
    share_class: str
    setup_date: date
    product_key: str
    risk_level: int
    status: str
    size_yi: float  # net assets, 100 million yuan

    def to_dict(self) -> dict:
        d = asdict(self)
        d["setup_date"] = self.setup_date.isoformat()
        return d


def _setup_date(rng, year_lo: float, year_hi: float) -> date:
    start = date(int(year_lo), 1, 1) + timedelta(days=int((year_lo % 1) * 365))
    span = max(30, int((year_hi - year_lo) * 365))
    return cal.all_trading_days()[cal.index_on_or_after(start + timedelta(days=rng.randrange(span)))]


def _product_name(rng, fund_type: str, company: str) -> tuple[str, str, str, str]:
    """(short name without share class, full name, theme, forced type override-free)."""
    if fund_type == "指数型":
        theme = pick(rng, v.INDEX_THEMES)
        form = pick(rng, v.INDEX_FORMS)
        short = f"{company}{theme}{form}"
        full = f"{company}{theme}{'交易型开放式指数证券投资基金联接基金' if 'ETF' in form else '指数证券投资基金'}"
    elif fund_type == "股票型":
        theme = pick(rng, v.STOCK_THEMES)
        short, full = f"{company}{theme}股票", f"{company}{theme}股票型证券投资基金"
    elif fund_type == "混合型":
        theme = pick(rng, v.MIXED_THEMES)
        form = pick(rng, v.MIXED_FORMS)
        short, full = f"{company}{theme}{form}", f"{company}{theme}{form}型证券投资基金"
    elif fund_type == "债券型":
        theme = pick(rng, v.BOND_NAMES)
        short, full = f"{company}{theme}", f"{company}{theme}型证券投资基金"
    elif fund_type == "货币型":
        theme = pick(rng, v.MONEY_NAMES)
        short, full = f"{company}{theme}", f"{company}{theme}市场基金"
    elif fund_type == "QDII型":
        theme = pick(rng, v.QDII_NAMES)
        short, full = f"{company}{theme}", f"{company}{theme.split('(')[0]}证券投资基金"
    else:
        theme = pick(rng, v.FOF_NAMES)
        short, full = f"{company}{theme}", f"{company}{theme.replace('(FOF)', '')}基金中基金(FOF)"
    return short, full, theme, fund_type


def _make_product(
    rng, product_key: str, codes: list[str], fund_type: str, hint_name: str | None
) -> list[FundStub]:
    company, company_full = pick(rng, v.COMPANIES)
    if hint_name:  # an adopted fund keeps its company when its name starts with one the world knows
        company, company_full = next(
            ((c, f) for c, f in v.COMPANIES if hint_name.startswith(c)), (company, company_full)
        )
    short, full, theme, _ = _product_name(rng, fund_type, company)
    n = int(codes[0]) if codes[0].isdigit() else 0
    if codes[0].startswith("0") and n < 26000:
        year = 2013.0 + n / 26000 * 12.5
        setup = _setup_date(rng, year, min(year + 0.3, 2025.6))
    else:
        setup = _setup_date(rng, 2003.0, 2014.0)
    lo, hi = v.FUND_RISK_LEVELS[fund_type]
    risk = lo + rng.randrange(hi - lo + 1)
    size = round(0.5 + rng.random() ** 3 * (600 if fund_type == "货币型" else 200), 2)
    status = weighted_pick(rng, ("0", "5", "6", "9"), (88, 8, 1, 3))
    classes = ("A", "B") if fund_type == "货币型" else ("A", "C")
    stubs = []
    for i, code in enumerate(codes):
        cls = classes[i] if len(codes) > 1 else ("A" if len(codes) == 1 and rng.random() < 0.6 else "")
        name = hint_name if hint_name else f"{short}{cls}"
        c_setup = (
            setup
            if i == 0 or rng.random() < 0.7
            else min(setup + timedelta(days=rng.randrange(30, 2000)), date(2025, 6, 30))
        )
        c_setup = cal.all_trading_days()[cal.index_on_or_after(c_setup)]
        stubs.append(
            FundStub(
                code,
                name,
                full,
                fund_type,
                theme,
                company,
                company_full,
                cls or "A",
                c_setup,
                product_key,
                risk,
                status,
                round(size * (1.0 if i == 0 else 0.2 + rng.random() * 0.6), 2),
            )
        )
    return stubs


def build_universe(seed: int, extra: Mapping[str, Mapping[str, str]]) -> dict[str, FundStub]:
    """Every fund code of the world with its stub, in code order."""
    taken: set[str] = set()
    out: dict[str, FundStub] = {}
    for p in range(N_PRODUCTS):
        rng = rng_for(seed, "fund_product", p)
        fund_type = weighted_pick(rng, v.FUND_TYPES, v.FUND_TYPE_WEIGHTS)
        if rng.random() < 0.72:
            n = 1 + rng.randrange(25998)
        else:
            n = int(pick(rng, _LEGACY_PREFIXES)) * 1000 + rng.randrange(999)
        while f"{n:06d}" in taken or f"{n + 1:06d}" in taken:
            n += 2
        n_classes = 2 if rng.random() < 0.65 else 1
        codes = [f"{n + i:06d}" for i in range(n_classes)]
        taken.update(codes)
        for stub in _make_product(rng, codes[0], codes, fund_type, None):
            out[stub.code] = stub
    for code in sorted(extra):
        hints = extra[code]
        drawn = out.get(code)
        adopted_type = hints.get("type") or (
            hints.get("name_type") if hints.get("name") not in (None, drawn and drawn.name) else None
        )
        if drawn is not None and adopted_type in (None, drawn.fund_type):
            # a code the world has keeps its drawn fund (under the adopted names) unless the type asked,
            # or the type another name says, differs
            out[code] = replace(
                drawn,
                name=hints.get("name") or drawn.name,
                full_name=hints.get("full_name") or drawn.full_name,
            )
            continue
        rng = rng_for(seed, "fund_extra", code)
        # an adopted fund: the type asked, else the one its name says, else its type field's (the real
        # server calls an index fund's investment type 股票型), else a drawn one
        fund_type = (
            hints.get("type")
            or hints.get("name_type")
            or hints.get("field_type")
            or weighted_pick(rng, v.FUND_TYPES, v.FUND_TYPE_WEIGHTS)
        )
        if fund_type not in v.FUND_TYPES:
            raise ValueError(
                f"extra_fund_codes[{code!r}]: unknown fund type {fund_type!r}; expected one of {v.FUND_TYPES}"
            )
        stub = _make_product(rng, code, [code], fund_type, hints.get("name"))[0]
        out[code] = replace(stub, full_name=hints["full_name"]) if hints.get("full_name") else stub
    return dict(sorted(out.items()))


# ---------------------------------------------------------------- full record


# Fund fields read from the NAV series: filled on first read (``Fund.__getattr__``), so a tool that
# reads a fund's fees, trade rules or holdings never builds its 20-year history.
_SERIES_FIELDS = frozenset({"managers", "dividends", "splits", "latest", "performance"})


@dataclass
class Fund:
    """A fund with everything the fund tools answer from (dates ISO, money 2 decimals, ratios 4).

    ``managers`` (their tenure returns), ``dividends``, ``splits``, ``latest`` and ``performance`` come
    from the NAV series and are computed when first read; every other field is built with the record.
    """

    code: str
    name: str
    full_name: str
    fund_type: str
    fund_type_code: str
    sub_tag: str
    share_class: str
    company: str
    company_full: str
    setup_date: str
    risk_level: int
    risk_name: str
    index_code: str | None
    index_name: str | None
    benchmark: str
    managers: list[dict] = field(init=False)
    net_asset: float
    net_asset_date: str
    fees: dict
    trade: dict
    holdings: dict
    asset_allocation: list[dict]
    industry_allocation: list[dict]
    dividends: list[dict] = field(init=False)
    splits: list[dict] = field(init=False)
    latest: dict = field(init=False)
    performance: dict = field(init=False)
    series_source: SeriesSource | None = field(default=None, repr=False, compare=False)

    def __getattr__(self, name: str) -> Any:
        # only reached for a field not set yet: fill it from the series (idempotent, so two threads
        # reading the same new fund at once both get the same values)
        source = self.__dict__.get("series_source")
        if name not in _SERIES_FIELDS or source is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        if name == "performance":
            self.performance = performance(source.series())
        else:
            self.__dict__.update(source.fields())
        return self.__dict__[name]

    def to_dict(self) -> dict:
        # asdict() without the series source (it would deep-copy the world)
        return {f.name: deepcopy(getattr(self, f.name)) for f in fields(self) if f.name != "series_source"}


@dataclass(frozen=True, eq=False)
class SeriesSource:
    """What a fund's series-derived fields are computed from: its world, stub and managers' start days."""

    world: WorldView
    stub: FundStub
    managers: tuple[tuple[dict, date], ...]  # (manager record, start date) in pool order

    def series(self) -> NavSeries:
        """The fund's NAV series (cached by the world)."""
        return self.world.fund_nav_series(self.stub.code)[0]

    def fields(self) -> dict[str, Any]:
        """``managers``, ``dividends``, ``splits`` and ``latest`` of the fund."""
        series, div_rows, split_rows = self.world.fund_nav_series(self.stub.code)
        managers = [
            {
                **m,
                "start_date": start.isoformat(),
                "tenure_years": round((self.world.as_of - start).days / 365, 1),
                "tenure_return": _tenure_return(series, start),
            }
            for m, start in self.managers
        ]
        return {
            "managers": managers,
            "dividends": div_rows,
            "splits": split_rows,
            "latest": latest_values(series, self.stub),
        }


def _tiers(bounds: list[float | None], rates: list[float], fixed: float | None) -> list[dict]:
    out = []
    for i, rate in enumerate(rates):
        out.append(
            {"lower": bounds[i], "upper": bounds[i + 1], "unit": "元", "rate": rate, "fixed_fee": None}
        )
    if fixed is not None:
        out.append(
            {"lower": bounds[len(rates)], "upper": None, "unit": "元", "rate": None, "fixed_fee": fixed}
        )
    return out


def build_fees(rng, stub: FundStub) -> dict:
    """Subscription/purchase tiers, redemption by holding days and running fees."""
    t = stub.fund_type
    front_free = stub.share_class in ("C", "B") or t == "货币型"
    if front_free:
        allot = subscribe = [{"lower": 0, "upper": None, "unit": "元", "rate": 0.0, "fixed_fee": None}]
    elif t == "债券型":
        base = 0.008 if "短债" not in stub.theme else 0.003
        allot = _tiers(
            [0, 1_000_000, 3_000_000, 5_000_000], [base, round(base * 0.6, 4), round(base * 0.3, 4)], 1000
        )
        subscribe = _tiers(
            [0, 1_000_000, 3_000_000, 5_000_000],
            [round(base * 0.8, 4), round(base * 0.5, 4), round(base * 0.2, 4)],
            1000,
        )
    else:
        base = {"指数型": 0.012, "FOF": 0.008, "QDII型": 0.012}.get(t, 0.015)
        allot = _tiers([0, 1_000_000, 5_000_000], [base, round(base * 0.4, 4)], 1000)
        subscribe = _tiers([0, 1_000_000, 5_000_000], [round(base * 0.8, 4), round(base * 0.3, 4)], 1000)
    if t == "货币型":
        redeem = [{"min_days": 0, "max_days": None, "rate": 0.0}]
    elif stub.share_class == "C":
        redeem = [
            {"min_days": 0, "max_days": 6, "rate": 0.015},
            {"min_days": 7, "max_days": 29, "rate": 0.005 if t != "债券型" else 0.001},
            {"min_days": 30, "max_days": None, "rate": 0.0},
        ]
    else:
        mid = 0.005 if t not in ("债券型",) else 0.001
        redeem = [
            {"min_days": 0, "max_days": 6, "rate": 0.015},
            {"min_days": 7, "max_days": 364, "rate": mid},
            {"min_days": 365, "max_days": 729, "rate": round(mid / 2, 4)},
            {"min_days": 730, "max_days": None, "rate": 0.0},
        ]
    mgmt = v.MANAGEMENT_FEE[t]
    management = round(mgmt[0] + (mgmt[1] - mgmt[0]) * rng.randrange(5) / 4, 4)
    custody = round(max(0.0005, management / 6), 4)
    sales = (
        0.0 if not front_free else round((0.0025 if t == "货币型" else 0.004) * (1 + rng.randrange(3)) / 3, 4)
    )
    return {
        "subscribe": subscribe,
        "allot": allot,
        "redeem": redeem,
        "management": management,
        "custody": custody,
        "sales": sales,
        "discount": 0.1 if not front_free else 1.0,
    }


def asset_mix(seed: int, stub: FundStub) -> tuple[float, float, float, float]:
    """(stock, bond, cash, other) shares of net assets, from their own RNG stream.

    Cheap (no fund record, no NAV series), so screens over hundreds of funds can read it; ``build_fund``
    uses the same function, so both always agree.
    """
    rng = rng_for(seed, "fund_asset_mix", stub.code)
    stock, bond = v.BASE_MIX[stub.fund_type]
    if stub.fund_type == "QDII型" and "债" in stub.theme:
        stock, bond = 0.0, 0.92
    stock = ratio(max(0.0, stock + (rng.random() - 0.5) * 0.1)) if stock else 0.0
    bond = ratio(max(0.0, bond + (rng.random() - 0.5) * 0.1)) if bond else 0.0
    cash = ratio(0.005 + rng.random() * (0.5 if stub.fund_type == "货币型" else 0.08))
    other = ratio(max(0.0, 1.0 - stock - bond - cash)) if stub.fund_type in ("FOF", "货币型") else 0.0
    return stock, bond, cash, other


def build_fund(world: WorldView, stub: FundStub) -> Fund:
    """The full record of one fund; its series-derived fields are computed when first read (:class:`Fund`)."""
    seed = world.seed
    rng = rng_for(seed, "fund_detail", stub.code)
    report_date = last_quarter_end(world.as_of)
    company_idx = next(i for i, c in enumerate(v.COMPANIES) if c[0] == stub.company)
    pool = sample(
        rng_for(seed, "fund_managers", stub.product_key),
        range(world.MANAGERS_PER_COMPANY),
        1 + (rng.random() < 0.3),
    )
    managers = []
    for k in pool:
        m = world.manager(company_idx, k)
        start = cal.all_trading_days()[
            cal.index_on_or_after(
                max(
                    stub.setup_date,
                    world.as_of
                    - timedelta(days=int(365 * m["experience_years"] * (0.2 + 0.8 * rng.random()))),
                )
            )
        ]
        managers.append((m, start))
    fees = build_fees(rng, stub)
    stock_ratio, bond_ratio, cash_ratio, other = asset_mix(seed, stub)
    net_asset = money(stub.size_yi * 1e8)
    alloc = [
        {"name": n, "ratio": r, "value": money(r * net_asset)}
        for n, r in (("股票", stock_ratio), ("债券", bond_ratio), ("现金", cash_ratio), ("其他", other))
    ]
    holdings = _holdings(world, rng, stub, stock_ratio, bond_ratio, report_date)
    industry: dict[str, float] = {}
    for h in holdings["stocks"]:
        industry[h["industry"]] = industry.get(h["industry"], 0.0) + h["ratio"]
    industry_alloc = [
        {"industry": k, "ratio": ratio(x / 0.6)}
        for k, x in sorted(industry.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    idx_code = idx_name = None
    if stub.fund_type == "指数型" or "ETF" in stub.theme or "指数" in stub.theme:
        idx_name = stub.theme.replace("ETF联接(QDII)", "").replace("指数(QDII)", "").replace("(QDII-LOF)", "")
        idx_code = (
            f"{rng_for(seed, 'index_code', idx_name).randrange(1000):06d}"
            if not idx_name.startswith("标普")
            else "SPX"
        )
    benchmark = (
        f"{idx_name}指数收益率*95%+银行活期存款利率(税后)*5%"
        if idx_name
        else {"债券型": "中债综合财富(总值)指数收益率", "货币型": "七天通知存款利率(税后)"}.get(
            stub.fund_type, "沪深300指数收益率*60%+中债综合指数收益率*40%"
        )
    )
    min_buy = 0.01 if stub.fund_type == "货币型" else pick(rng, (1.0, 10.0, 10.0, 100.0))
    large = (
        None
        if stub.status != "0" or rng.random() < 0.8
        else float(pick(rng, (1000, 5000, 10000, 100000, 1000000)))
    )
    trade = {
        "status": stub.status,
        "status_text": STATUS_TEXT[stub.status],
        "min_buy": min_buy,
        "max_buy": large,
        "can_allot": stub.status in ("0", "6"),
        "can_redeem": stub.status in ("0", "5"),
        "can_convert": rng.random() < 0.5,
        "confirm_days": 1
        if stub.fund_type in ("货币型", "债券型")
        else (2 if stub.fund_type == "QDII型" else 1),
        "redeem_to_wallet_days": 1 if stub.fund_type != "QDII型" else 3,
        "redeem_to_card_days": 3 if stub.fund_type != "QDII型" else 5,
    }
    return Fund(
        stub.code,
        stub.name,
        stub.full_name,
        stub.fund_type,
        v.FUND_TYPE_CODES[stub.fund_type],
        stub.theme,
        stub.share_class,
        stub.company,
        stub.company_full,
        stub.setup_date.isoformat(),
        stub.risk_level,
        v.RISK_LEVEL_NAMES[stub.risk_level],
        idx_code,
        idx_name,
        benchmark,
        net_asset,
        report_date.isoformat(),
        fees,
        trade,
        holdings,
        alloc,
        industry_alloc,
        series_source=SeriesSource(world, stub, tuple(managers)),
    )


def _tenure_return(series: NavSeries, start: date) -> float | None:
    if not series.dates:
        return None
    i = max(0, series.index_of(start))
    return round(series.adj[-1] / series.adj[i] - 1.0, 4)


def _top_positions(rng, chosen: list[dict], asset_ratio: float, top_lo: float, detail: str) -> list[dict]:
    """Positions in ``chosen`` (largest first) sharing a seeded part (``top_lo`` to ``top_lo + 0.3``) of
    ``asset_ratio``; each keeps its code, name and ``detail`` field (industry or bond type)."""
    bps = sorted(split_basis_points(rng, len(chosen), 10000), reverse=True)
    top_share = asset_ratio * (top_lo + rng.random() * 0.3)
    return [
        {"code": x["code"], "name": x["name"], detail: x[detail], "ratio": ratio(top_share * bp / 10000)}
        for x, bp in zip(chosen, bps, strict=True)
    ]


def _holdings(
    world: WorldView, rng, stub: FundStub, stock_ratio: float, bond_ratio: float, report_date: date
) -> dict:
    stocks: list[dict] = []
    if stock_ratio > 0:
        pref = _THEME_INDUSTRY.get(stub.theme)
        universe = world.stocks()
        candidates = [s for s in universe if s["industry"] == pref] if pref else []
        chosen = sample(rng, candidates, 6) if candidates else []
        rest = [s for s in sample(rng, universe, 14) if s not in chosen]
        stocks = _top_positions(rng, (chosen + rest)[:10], stock_ratio, 0.35, "industry")
    bonds: list[dict] = []
    if bond_ratio > 0.05:
        bonds = _top_positions(rng, sample(rng, world.bonds(), 5), bond_ratio, 0.2, "bond_type")
    return {"report_date": report_date.isoformat(), "stocks": stocks, "bonds": bonds}
