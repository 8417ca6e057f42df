"""Asset-class taxonomy: map funds to leaf classes and aggregate weights into the 3-level tree."""

from __future__ import annotations

from .funds import FundStub
from .vocab import ASSET_CLASSES

_INDEX_LEAF = {
    "沪深300": "300101030103",
    "上证50": "300101030103",
    "中证A500": "300101030103",
    "中证500": "300101030106",
    "中证1000": "300101030107",
    "恒生科技": "300101030140",
    "港股通科技": "300101030140",
    "中证医疗": "300101030111",
    "中证白酒": "300101030110",
    "中证消费": "300101030110",
    "半导体": "300101030113",
    "科创50": "300101030113",
    "科创100": "300101030113",
    "创业板": "300101030113",
    "创业板50": "300101030113",
    "证券公司": "300101030114",
    "中证银行": "300101030114",
    "新能源车": "300101030112",
    "光伏产业": "300101030112",
    "中证军工": "300101030112",
    "黄金": "300101040101",
}
_STOCK_LEAF = {
    "医疗健康": "300101030111",
    "医药健康": "300101030111",
    "医疗创新": "300101030111",
    "消费升级": "300101030110",
    "品质生活": "300101030110",
    "内需增长": "300101030110",
    "科技创新": "300101030113",
    "数字经济": "300101030113",
    "科技领航": "300101030113",
    "先进制造": "300101030112",
    "高端装备": "300101030112",
    "新能源": "300101030112",
    "价值精选": "300101030103",
    "核心价值": "300101030103",
    "量化精选": "300101030107",
}


def leaf_for_fund(stub: FundStub) -> str:
    """The LEVEL2 asset-class code a fund is counted under."""
    t, theme = stub.fund_type, stub.theme
    if t == "货币型":
        return "300101010101"
    if t == "债券型":
        if "短债" in theme:
            return "300101020101"
        if "可转债" in theme:
            return "300101020401"
        if any(k in theme for k in ("增强", "双债", "永利", "回报")):
            return "300101020202"
        return "300101020102"
    if t == "QDII型":
        if "债" in theme:
            return "300101020301"
        if "纳斯达克" in theme or "标普" in theme:
            return "300101030202"
        if "DAX" in theme:
            return "300101030207"
        if "恒生" in theme:
            return "300101030140"
        return "300101030299"
    if t == "指数型":
        return _INDEX_LEAF.get(theme, "300101030150")
    if t == "FOF" or "偏债" in theme:
        return "300101020203"
    return _STOCK_LEAF.get(theme, "300101030150")


def asset_class_tree(leaf_bp: dict[str, int]) -> list[dict]:
    """Nested TOP_LEVEL -> LEVEL1 -> LEVEL2 nodes; weights are integer basis points (sum 10000 = 100%).

    ``amount`` is the percentage (2 decimals) and ``ratio`` the fraction (4 decimals); every parent's
    basis points are exactly the sum of its children's, so ratios add up without rounding drift.
    """
    totals: dict[str, int] = {}
    for leaf, bp in leaf_bp.items():
        if leaf not in ASSET_CLASSES or len(leaf) != 12:
            raise ValueError(f"asset_class_tree: {leaf!r} is not a LEVEL2 asset-class code")
        if bp <= 0:
            continue
        for code in (leaf[:8], leaf[:10], leaf):
            totals[code] = totals.get(code, 0) + bp

    def node(code: str) -> dict:
        name, level, color = ASSET_CLASSES[code]
        kids = sorted(
            (c for c in totals if len(c) == len(code) + 2 and c.startswith(code)),
            key=lambda c: (-totals[c], c),
        )
        return {
            "categoryCode": code,
            "categoryName": name,
            "levelType": level,
            "amount": round(totals[code] / 100, 2),
            "ratio": round(totals[code] / 10000, 4),
            "color": color,
            "children": [node(c) for c in kids],
        }

    return [node(c) for c in sorted(c for c in totals if len(c) == 8)]
