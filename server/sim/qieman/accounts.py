"""Builders for the Qieman user-account tools (GetUserAssetView and friends).

Any well-formed user id (14 lowercase hex characters, like ``9b989c9d999f93``) names a user of the
world; a malformed id is a :class:`ToolInputError` naming the id. Sub-account ids and product codes
returned by ``GetUserAssetView`` resolve in the other account tools: ``GetFundLatestProfit`` takes those
sub-account ids with fund codes from the held strategies' compositions (or the user's own funds).
Accounts or funds the user does not hold are skipped (an empty list when nothing matches), the way the
real server answers only for what the user holds.

Amounts are yuan (2 decimals), rates fractions (4 decimals); ``profitDate`` in the brief is the epoch
milliseconds of that day's midnight in China time (UTC+8), as the real server prints it.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from finmcp.server.sim.qieman.strategies import code_list, require_text, tidy
from finmcp.server.sim.registry import BuildContext, ToolInputError, qieman_builder
from finmcp.server.world import World
from finmcp.server.world.asset_classes import asset_class_tree, leaf_for_fund
from finmcp.server.world.rng import money, proportional_bp
from finmcp.server.world.users import User

ROOT_NAME = "我的账户或总账户"
WALLET_NAME = "盈米宝账户"
WALLET_CODE = "WALLET"
CASH_LEAF = "300101010101"  # 货币现金: the wallet is a money-fund balance
_MS_PER_DAY = 86_400_000
_CHINA_OFFSET_MS = 8 * 3_600_000
_FUND_CODE_RE = re.compile(r"^\d{6}$")


def china_midnight_ms(day: date) -> int:
    """Epoch milliseconds of ``day`` 00:00 in China time (UTC+8)."""
    return (day - date(1970, 1, 1)).days * _MS_PER_DAY - _CHINA_OFFSET_MS


def _user(ctx: BuildContext, args: dict[str, Any]) -> User:
    tool = ctx.spec.name
    user_id = require_text(args, tool, "userId")
    try:
        return ctx.world.user(user_id)
    except ValueError as exc:
        raise ToolInputError(f"{tool}: {exc}") from None


def _view(asset_id: str, name: str, kind: str, only_prod: bool) -> dict[str, Any]:
    return {"assetId": asset_id, "assetName": name, "assetType": kind, "isOnlyProd": only_prod}


@qieman_builder("GetUserAssetView")
def user_asset_view(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """The account tree: root, 盈米宝 wallet, sub-accounts with the products held in each."""
    user = _user(ctx, args)
    subs = []
    for sub in user.sub_accounts:
        view = _view(sub["account_id"], sub["name"], "SUB_ACCOUNT", False)
        view["holdingProdList"] = [
            {"assetCode": p["asset_code"], **_view(p["asset_id"], p["asset_name"], "PROD", True)}
            for p in sub["products"]
        ]
        subs.append(view)
    return {
        "rootView": _view(user.root_account_id, ROOT_NAME, "ROOT_ACCOUNT", False),
        "walletView": _view(user.wallet_account_id, WALLET_NAME, "WALLET_ACCOUNT", False),
        "umaViewList": subs,
    }


@qieman_builder("GetUserAssetBrief")
def user_asset_brief(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """Total assets with the latest daily, holding and accumulated profits and their rates."""
    user = _user(ctx, args)
    brief = ctx.world.user_asset_brief(user.user_id)
    day = date.fromisoformat(brief["profit_date"]) if brief["profit_date"] else ctx.world.as_of
    return tidy(
        {
            "profitDate": china_midnight_ms(day),
            "profitProgress": None,
            "latestDailyProfit": brief["latest_daily_profit"],
            "latestDailyProfitRate": brief["latest_daily_profit_rate"],
            "accumulatedProfit": brief["accumulated_profit"],
            "accumulatedProfitRate": brief["accumulated_profit_rate"],
            "holdingProfit": brief["holding_profit"],
            "holdingProfitRate": brief["holding_profit_rate"],
            "totalAsset": brief["total_asset"],
            "uiInvestmentMaximText": None,
            "uiInvestmentMaximImageUrl": None,
        }
    )


@qieman_builder("GetFundLatestProfit")
def fund_latest_profit(ctx: BuildContext, args: dict[str, Any]) -> list[dict[str, Any]]:
    """Latest daily profit per held fund within the given sub-accounts, by fund code."""
    tool = "GetFundLatestProfit"
    user = _user(ctx, args)
    accounts = code_list(args, tool, "serviceAccountIdList")
    funds = code_list(args, tool, "fundCodeList")
    for i, code in enumerate(funds):
        if not _FUND_CODE_RE.match(code):
            raise ToolInputError(f"{tool}: fundCodeList[{i}] {code!r} is not a 6-digit fund code")
    rows = ctx.world.user_latest_profits(user.user_id, accounts, funds)
    return tidy(
        [
            {
                "fundCode": r["fund_code"],
                "dailyProfit": r["daily_profit"],
                "dailyProfitRate": r["daily_profit_rate"],
                "profitDate": r["profit_date"],
                "zeroAsset": r["zero_asset"],
                "fundName": r["fund_name"],
            }
            for r in rows
        ]
    )


@qieman_builder("GetProfitCalendar")
def profit_calendar(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """Daily total profit over the recent trading days, newest first, with each day's rate.

    A day's rate is its profit over the holdings' value at the start of that day, reconstructed
    backwards from today's value (value before a day = value after it - its profit).
    """
    user = _user(ctx, args)
    days = ctx.world.user_profit_calendar(user.user_id)
    value_after = sum(p["value"] for p in user.positions)
    rows = []
    for row in reversed(days):
        before = value_after - row["profit"]
        rate = round(row["profit"] / before, 4) if before > 0 else None
        rows.append({"profitDate": row["date"], "dailyProfit": row["profit"], "dailyProfitRate": rate})
        value_after = before
    answer: dict[str, Any] = {}
    if rows:
        answer.update(startDate=rows[-1]["profitDate"], endDate=rows[0]["profitDate"])
    answer["totalProfit"] = money(sum(r["dailyProfit"] for r in rows))
    answer["profitList"] = rows
    return tidy(answer)


def holdings_by_product(user: User) -> list[tuple[str, str, float]]:
    """(product code, name, value) for each held product plus the wallet, largest first."""
    names = {p["asset_code"]: p["asset_name"] for sub in user.sub_accounts for p in sub["products"]}
    values: dict[str, float] = {}
    for pos in user.positions:
        values[pos["product"]] = values.get(pos["product"], 0.0) + pos["value"]
    out = [(code, names[code], money(v)) for code, v in values.items()]
    if user.wallet_balance > 0:
        out.append((WALLET_CODE, WALLET_NAME, user.wallet_balance))
    return sorted(out, key=lambda t: (-t[2], t[0]))


def _class_tree(world: World, user: User, total: float) -> list[dict[str, Any]]:
    """The look-through asset-class tree of every position plus the wallet; amounts in yuan, ratios of the
    tree's total (basis points that add up exactly)."""
    values: dict[str, float] = {}
    for pos in user.positions:
        leaf = leaf_for_fund(world.require_stub(pos["fund_code"]))
        values[leaf] = values.get(leaf, 0.0) + pos["value"]
    if user.wallet_balance > 0:
        values[CASH_LEAF] = values.get(CASH_LEAF, 0.0) + user.wallet_balance
    if total <= 0:
        return []
    leaves = sorted(values)
    tree = asset_class_tree(dict(zip(leaves, proportional_bp([values[k] for k in leaves]), strict=True)))

    def in_yuan(node: dict[str, Any]) -> dict[str, Any]:
        held = sum(val for leaf, val in values.items() if leaf.startswith(node["categoryCode"]))
        return {**node, "amount": money(held), "children": [in_yuan(c) for c in node["children"]]}

    return [in_yuan(node) for node in tree]


@qieman_builder("GetUserAssetHoldingDistribution")
def holding_distribution(ctx: BuildContext, args: dict[str, Any]) -> dict[str, Any]:
    """Total assets, their look-through asset-class tree and the share of each product."""
    user = _user(ctx, args)
    total = ctx.world.user_asset_brief(user.user_id)["total_asset"]
    products = holdings_by_product(user)
    return tidy(
        {
            "totalAsset": total,
            "assetClassCategoryInfo": _class_tree(ctx.world, user, total),
            "prodDistribution": [
                {
                    "assetCode": code,
                    "assetName": name,
                    "amount": value,
                    "ratio": round(value / total, 4) if total > 0 else 0.0,
                }
                for code, name, value in products
            ],
        }
    )
