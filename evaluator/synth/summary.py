"""Short assistant replies built from what the calls returned (the reference's ``assistant`` text)."""

from __future__ import annotations

from typing import Any

from finmcp.evaluator.synth.extract import output_value

_NAME_KEYS = ("fundName", "基金名称", "策略名称", "poName", "title", "公告标题", "assetName", "strategyName")


def _names(value: Any, out: list[str], limit: int) -> None:
    if len(out) >= limit:
        return
    if isinstance(value, list):
        for item in value:
            _names(item, out, limit)
    elif isinstance(value, dict):
        for key in _NAME_KEYS:
            name = value.get(key)
            if isinstance(name, str) and name and name not in out:
                out.append(name)
                break
        for item in value.values():
            if isinstance(item, dict | list):
                _names(item, out, limit)


def summarize(calls: list[tuple[str, dict[str, Any]]], lang: str = "zh") -> str:
    """A reply listing, per tool called, a few names its output mentions."""
    lines = []
    for tool, result in calls:
        names: list[str] = []
        _names(output_value(result), names, 3)
        if lang == "zh":
            lines.append(f"- {tool}：" + ("、".join(names) if names else "已获取结果"))
        else:
            lines.append(f"- {tool}: " + (", ".join(names) if names else "result received"))
    head = "根据查询结果，整理如下：" if lang == "zh" else "Here is what the tools returned:"
    tail = (
        "以上信息仅供参考，不构成投资建议。"
        if lang == "zh"
        else "This is information, not investment advice."
    )
    return "\n".join([head, *lines, tail])
