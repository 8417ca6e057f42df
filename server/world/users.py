"""Users: risk profiles, accounts (root, wallet, sub-accounts), holdings, profits.

Any well-formed user id (14 lowercase hex characters, like the samples' ``9b989c9d999f93``) names a
user: the real account tools answer for whatever id they are given, so the world synthesises the
user deterministically from (seed, id). ``World.user_ids(n)`` lists a stable set of ids to sample.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from finmcp.recordings.plumbing.seeding import derive_seed, rng_for

from . import vocab as v
from .asset_classes import asset_class_tree, leaf_for_fund
from .names import person_name
from .rng import money, pick, proportional_bp, sample, split_basis_points, weighted_pick

if TYPE_CHECKING:
    from .view import WorldView

USER_ID_RE = re.compile(r"^[0-9a-f]{14}$")
_ALNUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_SUB_NAMES = ("默认账户", "长期s定投", "货币三佳", "极简长投", "稳健理财", "养老钱", "教育金", "备用金")
PROFIT_CALENDAR_DAYS = 30


def check_user_id(user_id: str) -> str:
    """Return ``user_id`` or raise ValueError naming what is wrong."""
    if not isinstance(user_id, str) or not USER_ID_RE.match(user_id):
        raise ValueError(f"userId {user_id!r} is not 14 lowercase hex characters (e.g. '9b989c9d999f93')")
    return user_id


def account_id(seed: int, *key: object) -> str:
    """A service-account id: 'SA0A0JT' + 8 uppercase alphanumerics (15 characters, like the samples)."""
    n = derive_seed(seed, "account_id", *key)
    chars = []
    for _ in range(8):
        n, r = divmod(n, 36)
        chars.append(_ALNUM[r])
    return "SA0A0JT" + "".join(chars)


@dataclass
class User:
    """A user with accounts and positions; amounts in yuan (2 decimals)."""

    user_id: str
    name: str
    risk_profile: str
    risk_profile_name: str
    root_account_id: str
    wallet_account_id: str
    wallet_balance: float
    sub_accounts: list[dict]
    realised_profit: float
    positions: list[dict]  # one per (sub-account, product, fund): shares, value, cost, daily profits

    def to_dict(self) -> dict:
        return asdict(self)


def build_user(world: WorldView, user_id: str) -> User:
    """The user named by ``user_id`` (any well-formed id)."""
    check_user_id(user_id)
    seed = world.seed
    rng = rng_for(seed, "user", user_id)
    profile = weighted_pick(rng, ("C1", "C2", "C3", "C4", "C5"), (1, 3, 4, 3, 1))
    strategies = world.strategy_codes()
    subs = []
    positions = []
    names = sample(rng, _SUB_NAMES[1:], 3)
    for si in range(1 + rng.randrange(3)):
        sub_id = account_id(seed, user_id, "sub", si)
        products: list[dict[str, Any]] = []
        for pi in range(1 + rng.randrange(3)):
            amount = money(500 + rng.random() ** 2 * 60000)
            if rng.random() < 0.7:
                code = pick(rng, strategies)
                st = world.require_strategy(code)
                prod: dict[str, Any] = {
                    "asset_code": code,
                    "asset_id": account_id(seed, user_id, "prod", si, pi),
                    "asset_name": st.name,
                    "amount": amount,
                }
                funds = [(c["fund_code"], c["weight_bp"]) for c in st.composition]
            else:
                prod = {
                    "asset_code": "FUND",
                    "asset_id": account_id(seed, user_id, "prod", si, pi),
                    "asset_name": "基金自助交易",
                    "amount": amount,
                }
                chosen = sorted(sample(rng, world.fund_codes(), 1 + rng.randrange(4)))
                funds = list(zip(chosen, split_basis_points(rng, len(chosen)), strict=True))
            if any(p["asset_code"] == prod["asset_code"] for p in products):
                continue
            products.append(prod)
            for fc, bp in funds:
                positions.append(_position(world, rng, sub_id, prod["asset_code"], fc, amount * bp / 10000))
        subs.append(
            {"account_id": sub_id, "name": "默认账户" if si == 0 else names[si - 1], "products": products}
        )
    return User(
        user_id,
        person_name(seed, "user_name", user_id),
        profile,
        v.RISK_PROFILE_NAMES[profile],
        account_id(seed, user_id, "root"),
        account_id(seed, user_id, "wallet"),
        money(rng.random() ** 2 * 20000),
        subs,
        money(rng.random() * 3000),
        positions,
    )


def _position(world: WorldView, rng, sub_id: str, product: str, fund_code: str, value: float) -> dict:
    """One fund position valued at ``value`` on as_of, with its daily profits over recent trading days."""
    stub = world.require_stub(fund_code)
    gain = -0.08 + rng.random() * 0.3 if stub.fund_type != "货币型" else rng.random() * 0.03
    rets = world.recent_returns(fund_code, PROFIT_CALENDAR_DAYS)
    growth = 1.0
    for _, r in rets:
        growth *= 1.0 + r
    level = value / growth  # value before the first day of the window
    profits = []
    for d, r in rets:
        profits.append({"date": d, "profit": round(level * r, 4)})
        level *= 1.0 + r
    return {
        "account_id": sub_id,
        "product": product,
        "fund_code": fund_code,
        "fund_name": stub.name,
        "fund_type": stub.fund_type,
        "value": money(value),
        "cost": money(value / (1 + gain)),
        "value_date": rets[-1][0] if rets else None,
        "daily_profits": profits,
    }


def latest_profits(
    user: User, account_ids: list[str] | None = None, fund_codes: list[str] | None = None
) -> list[dict]:
    """Latest daily profit per fund, summed over the user's positions (filtered by accounts/funds)."""
    acc: dict[str, dict] = {}
    for p in user.positions:
        if account_ids and p["account_id"] not in account_ids:
            continue
        if fund_codes and p["fund_code"] not in fund_codes:
            continue
        last = p["daily_profits"][-1] if p["daily_profits"] else {"date": p["value_date"], "profit": 0.0}
        row = acc.setdefault(
            p["fund_code"],
            {
                "fund_code": p["fund_code"],
                "fund_name": p["fund_name"],
                "profit_date": last["date"],
                "daily_profit": 0.0,
                "value": 0.0,
            },
        )
        row["daily_profit"] += last["profit"]
        row["value"] += p["value"]
    out = []
    for code in sorted(acc):
        row = acc[code]
        base = row["value"] - row["daily_profit"]
        out.append(
            {
                "fund_code": code,
                "fund_name": row["fund_name"],
                "profit_date": row["profit_date"],
                "daily_profit": round(row["daily_profit"], 4),
                "daily_profit_rate": round(row["daily_profit"] / base, 4) if base > 0 else 0.0,
                "zero_asset": row["value"] <= 0,
            }
        )
    return out


def profit_calendar(user: User) -> list[dict]:
    """Total daily profit over the last trading days (ascending by date)."""
    days: dict[str, float] = {}
    for p in user.positions:
        for d in p["daily_profits"]:
            days[d["date"]] = days.get(d["date"], 0.0) + d["profit"]
    return [{"date": d, "profit": round(x, 2)} for d, x in sorted(days.items())]


def asset_brief(user: User) -> dict:
    """Totals: assets, latest daily profit and rate, holding profit and accumulated profit."""
    value = sum(p["value"] for p in user.positions)
    cost = sum(p["cost"] for p in user.positions)
    cal_rows = profit_calendar(user)
    latest: dict[str, Any] = cal_rows[-1] if cal_rows else {"date": None, "profit": 0.0}
    total = value + user.wallet_balance
    holding = value - cost
    realised = user.realised_profit
    return {
        "profit_date": latest["date"],
        "total_asset": money(total),
        "latest_daily_profit": money(latest["profit"]),
        "latest_daily_profit_rate": round(latest["profit"] / (total - latest["profit"]), 4)
        if total > latest["profit"]
        else 0.0,
        "holding_profit": money(holding),
        "holding_profit_rate": round(holding / cost, 4) if cost else 0.0,
        "accumulated_profit": money(holding + realised),
        "accumulated_profit_rate": round((holding + realised) / cost, 4) if cost else 0.0,
    }


def holding_distribution(world: WorldView, user: User) -> dict:
    """The user's fund positions aggregated into the asset-class tree (by value)."""
    values: dict[str, float] = {}
    for p in user.positions:
        leaf = leaf_for_fund(world.require_stub(p["fund_code"]))
        values[leaf] = values.get(leaf, 0.0) + p["value"]
    total = sum(values.values())
    if total <= 0:
        return {"total": 0.0, "tree": []}
    leaves = sorted(values)
    raw = [values[k] for k in leaves]
    bps = proportional_bp(raw)
    return {"total": money(total), "tree": asset_class_tree(dict(zip(leaves, bps, strict=True)))}


def known_user_ids(seed: int, n: int) -> list[str]:
    """A stable list of ``n`` user ids for sampling (any other well-formed id is also a user)."""
    return [f"{derive_seed(seed, 'user_id', i) % (16**14):014x}" for i in range(n)]
