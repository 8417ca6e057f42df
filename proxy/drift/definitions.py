"""Tool-definition drift: the recorded ``tools/list`` against the live one, per tool.

Unchanged tools are skipped by fingerprint (:func:`finmcp.recordings.tool_fingerprint.tool_fingerprint`).
For a changed tool: input schema (new required parameter, property removed or added, type changed,
enum narrowed or widened), output schema, annotations (read-only -> may act/destructive), description
and title. Each change is a :class:`~finmcp.proxy.drift.severity.Finding` with its severity.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from finmcp.proxy.drift.severity import BREAKS_REPLAY, CHANGES_REFERENCES, COSMETIC, Finding
from finmcp.proxy.drift.values import same
from finmcp.recordings.tool_fingerprint import tool_fingerprint


def by_name(tools: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Tools keyed by name (the last of a duplicated name wins)."""
    return {str(t.get("name")): t for t in tools if isinstance(t, Mapping)}


def diff_definitions(
    recorded: Iterable[Mapping[str, Any]], live: Iterable[Mapping[str, Any]]
) -> list[Finding]:
    """Findings for tools removed, added and changed between the recorded and the live list."""
    old, new = by_name(recorded), by_name(live)
    out: list[Finding] = []
    for name in sorted(old.keys() - new.keys()):
        out.append(Finding(BREAKS_REPLAY, "tool-removed", name, detail="the live server no longer lists it"))
    for name in sorted(new.keys() - old.keys()):
        out.append(Finding(COSMETIC, "tool-added", name, detail="listed by the live server only"))
    for name in sorted(old.keys() & new.keys()):
        if tool_fingerprint(old[name]) != tool_fingerprint(new[name]):
            out += diff_tool(name, old[name], new[name])
    return out


def diff_tool(name: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Finding]:
    """The changes of one tool's definition."""
    out: list[Finding] = []
    for field in ("description", "title"):
        if old.get(field) != new.get(field):
            out.append(
                Finding(
                    COSMETIC, f"{field}-changed", name, field, recorded=old.get(field), live=new.get(field)
                )
            )
    out += _schema_changes(name, "inputSchema", old.get("inputSchema"), new.get("inputSchema"))
    if not same(old.get("outputSchema"), new.get("outputSchema")):
        out.append(
            Finding(
                CHANGES_REFERENCES,
                "output-schema-changed",
                name,
                "outputSchema",
                "the structured answers' shape changed",
                old.get("outputSchema"),
                new.get("outputSchema"),
            )
        )
    out += _annotation_changes(name, old.get("annotations") or {}, new.get("annotations") or {})
    for field in ("execution",):
        if not same(old.get(field), new.get(field)):
            out.append(
                Finding(
                    COSMETIC, f"{field}-changed", name, field, recorded=old.get(field), live=new.get(field)
                )
            )
    return out


def may_act(annotations: Mapping[str, Any]) -> bool:
    """True unless the annotations say ``readOnlyHint: true``."""
    return annotations.get("readOnlyHint") is not True


def _annotation_changes(name: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Finding]:
    if same(dict(old), dict(new)):
        return []
    acts = not may_act(old) and may_act(new)
    destructive = (
        old.get("destructiveHint") is not True and new.get("destructiveHint") is True and may_act(new)
    )
    if acts or destructive:
        detail = "read-only -> may act" + (" (destructiveHint)" if new.get("destructiveHint") else "")
        return [
            Finding(CHANGES_REFERENCES, "annotations-act", name, "annotations", detail, dict(old), dict(new))
        ]
    return [Finding(COSMETIC, "annotations-changed", name, "annotations", "", dict(old), dict(new))]


def _types(schema: Mapping[str, Any]) -> Any:
    kind = schema.get("type")
    return sorted(kind) if isinstance(kind, list) else kind


def _schema_changes(name: str, where: str, old: Any, new: Any) -> list[Finding]:
    """Input-schema changes, recursing into object properties and array items."""
    old = old if isinstance(old, Mapping) else {}
    new = new if isinstance(new, Mapping) else {}
    if same(dict(old), dict(new)):
        return []
    out: list[Finding] = []
    if _types(old) != _types(new):
        out.append(Finding(BREAKS_REPLAY, "type-changed", name, where, "", _types(old), _types(new)))
    old_enum, new_enum = old.get("enum"), new.get("enum")
    if isinstance(old_enum, list) and isinstance(new_enum, list):
        lost = [v for v in old_enum if not any(same(v, w) for w in new_enum)]
        gained = [v for v in new_enum if not any(same(v, w) for w in old_enum)]
        if lost:
            out.append(
                Finding(
                    BREAKS_REPLAY, "enum-narrowed", name, where, f"values gone: {lost}", old_enum, new_enum
                )
            )
        if gained:
            out.append(
                Finding(COSMETIC, "enum-widened", name, where, f"values added: {gained}", old_enum, new_enum)
            )
    elif isinstance(new_enum, list) and old_enum is None:
        out.append(Finding(BREAKS_REPLAY, "enum-narrowed", name, where, "now an enum", None, new_enum))
    elif isinstance(old_enum, list) and new_enum is None:
        out.append(Finding(COSMETIC, "enum-widened", name, where, "no longer an enum", old_enum, None))
    old_props = old.get("properties") if isinstance(old.get("properties"), Mapping) else {}
    new_props = new.get("properties") if isinstance(new.get("properties"), Mapping) else {}
    old_req = set(old.get("required") or [])
    new_req = set(new.get("required") or [])
    for prop in sorted(new_req - old_req):
        out.append(
            Finding(
                BREAKS_REPLAY,
                "required-added",
                name,
                f"{where}.required",
                f"{prop!r} is now required",
                sorted(old_req),
                sorted(new_req),
            )
        )
    for prop in sorted(old_req - new_req):
        if prop in new_props:
            out.append(
                Finding(
                    COSMETIC,
                    "required-dropped",
                    name,
                    f"{where}.required",
                    f"{prop!r} is now optional",
                    sorted(old_req),
                    sorted(new_req),
                )
            )
    for prop in sorted(old_props.keys() - new_props.keys()):
        out.append(
            Finding(
                BREAKS_REPLAY,
                "property-removed",
                name,
                f"{where}.properties.{prop}",
                "",
                old_props[prop],
                None,
            )
        )
    for prop in sorted(new_props.keys() - old_props.keys()):
        if prop not in new_req:
            out.append(
                Finding(
                    COSMETIC,
                    "property-added",
                    name,
                    f"{where}.properties.{prop}",
                    "optional",
                    None,
                    new_props[prop],
                )
            )
    for prop in sorted(old_props.keys() & new_props.keys()):
        out += _schema_changes(name, f"{where}.properties.{prop}", old_props[prop], new_props[prop])
    if isinstance(old.get("items"), Mapping) or isinstance(new.get("items"), Mapping):
        out += _schema_changes(name, f"{where}.items", old.get("items"), new.get("items"))
    if not out:
        out.append(
            Finding(COSMETIC, "schema-changed", name, where, "other keywords changed", dict(old), dict(new))
        )
    return out
