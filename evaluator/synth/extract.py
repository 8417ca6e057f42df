"""Entities a tool output hands to later steps: fund and strategy codes, account ids, plan ids, NAV dates.

The planner binds arguments from these, and the verifier re-extracts them to check that a chain's
dependency really carried data (the value a step consumed occurs in its source step's output).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

FUND_CODE = re.compile(r"^[0-9]{6}$")
_FUND_KEYS = ("fundCode", "基金代码")
_FUND_NAME_KEYS = ("fundName", "基金名称")
_STRATEGY_KEYS = ("策略代码", "strategyCode", "poCode")
_STRATEGY_NAME_KEYS = ("策略名称", "strategyName", "poName")
_WEIGHT_KEYS = ("持仓占比", "ratio", "weight")


@dataclass
class Entities:
    """Ordered, de-duplicated entity values found in one output."""

    fund_code: list[str] = field(default_factory=list)
    fund_names: dict[str, str] = field(default_factory=dict)
    fund_weights: dict[str, float] = field(default_factory=dict)
    strategy_code: list[str] = field(default_factory=list)
    strategy_names: dict[str, str] = field(default_factory=dict)
    service_account_id: list[str] = field(default_factory=list)
    announcement_id: list[str] = field(default_factory=list)
    asset_plan_id: list[str] = field(default_factory=list)
    nav_series: list[tuple[str, float]] = field(default_factory=list)
    asset_allocation: list[tuple[str, float]] = field(default_factory=list)

    def values(self, entity: str) -> list[Any]:
        """The values of one entity type (``nav_series`` gives the dates)."""
        if entity == "nav_series":
            return [d for d, _ in self.nav_series]
        if entity == "portfolio_weights":
            return list(self.fund_weights)
        if entity == "asset_allocation":
            return [name for name, _ in self.asset_allocation]
        return list(getattr(self, entity, []) or [])


def _add(items: list, value: Any) -> None:
    if value not in items:
        items.append(value)


def _ratio(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and value.endswith("%"):
        try:
            return float(value[:-1]) / 100
        except ValueError:
            return None
    return None


def _visit(node: Any, out: Entities) -> None:
    if isinstance(node, list):
        for item in node:
            _visit(item, out)
        return
    if not isinstance(node, dict):
        return
    for key in _FUND_KEYS:
        code = node.get(key)
        if isinstance(code, str) and FUND_CODE.match(code):
            _add(out.fund_code, code)
            name = next((node[k] for k in _FUND_NAME_KEYS if isinstance(node.get(k), str)), None)
            if name:
                out.fund_names.setdefault(code, name)
            weight = next((_ratio(node[k]) for k in _WEIGHT_KEYS if k in node), None)
            if weight is not None and weight > 0:
                out.fund_weights.setdefault(code, weight)
            break
    for key in _STRATEGY_KEYS:
        code = node.get(key)
        if isinstance(code, str) and code:
            _add(out.strategy_code, code)
            name = next((node[k] for k in _STRATEGY_NAME_KEYS if isinstance(node.get(k), str)), None)
            if name:
                out.strategy_names.setdefault(code, name)
            break
    if node.get("assetType") == "PROD" and isinstance(node.get("assetCode"), str):
        code = node["assetCode"]
        if code not in ("FUND", "WALLET"):
            _add(out.strategy_code, code)
            if isinstance(node.get("assetName"), str):
                out.strategy_names.setdefault(code, node["assetName"])
    if node.get("assetType") == "SUB_ACCOUNT" and isinstance(node.get("assetId"), str):
        _add(out.service_account_id, node["assetId"])
    if isinstance(node.get("公告ID"), str):
        _add(out.announcement_id, node["公告ID"])
    if isinstance(node.get("assetPlanId"), str):
        _add(out.asset_plan_id, node["assetPlanId"])
    if isinstance(node.get("navDate"), str) and isinstance(node.get("nav"), int | float):
        out.nav_series.append((node["navDate"], float(node["nav"])))
    if (
        isinstance(node.get("assetClass"), str)
        and isinstance(node.get("ratio"), int | float)
        and "funds" not in node
    ):
        out.asset_allocation.append((node["assetClass"], float(node["ratio"])))
    for value in node.values():
        if isinstance(value, dict | list):
            _visit(value, out)


def output_value(result: dict[str, Any]) -> Any:
    """The JSON value of an MCP result's text content (None when the text is not JSON)."""
    texts = [b.get("text", "") for b in result.get("content") or [] if isinstance(b, dict)]
    try:
        return json.loads("".join(texts))
    except (json.JSONDecodeError, TypeError):
        return None


def extract(result: dict[str, Any]) -> Entities:
    """Entities of one MCP result (empty for errors and non-JSON text)."""
    out = Entities()
    if result.get("isError"):
        return out
    _visit(output_value(result), out)
    return out
