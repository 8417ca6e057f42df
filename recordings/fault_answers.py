"""What a scheduled fault answers (:mod:`recordings.fault_schedule`): the result or JSON-RPC error sent.

Every faulted answer is marked: a result's ``_meta`` (a JSON-RPC error's ``data``) holds
``io.finmcp/source = "fault"`` and ``io.finmcp/fault = {kind, transient, position, schedule, rule,
repeat[, retry_after]}``. The texts say what a client would be told by a real API: a transient fault
says ``(transient; retry)``, a permanent one ``(permanent; do not retry)``; a rate limit says
``Retry-After: N`` (seconds). ``truncated``, ``empty`` and ``wrong_values`` change the normal answer
(which the caller passes in) and look like success: nothing on the wire but the marker says so.
"""

from __future__ import annotations

import json
import re
from typing import Any

from finmcp.recordings.fault_schedule import Fault
from finmcp.recordings.plumbing.seeding import unit_draw

SOURCE_KEY = "io.finmcp/source"
FAULT_KEY = "io.finmcp/fault"
RETRY_AFTER_KEY = "io.finmcp/retry_after"
INTERNAL_ERROR = -32603
NEEDS_ANSWER = frozenset({"truncated", "empty", "wrong_values"})
"""Kinds that alter the normal answer (the others replace it)."""
_DECIMAL = re.compile(r"^-?\d+\.\d+$")


def _tail(fault: Fault) -> str:
    return "(transient; retry)" if fault.transient else "(permanent; do not retry)"


def _meta(fault: Fault) -> dict[str, Any]:
    return {SOURCE_KEY: "fault", FAULT_KEY: fault.marker()}


def rpc_error(fault: Fault, tool: str) -> dict[str, Any]:
    """The JSON-RPC error object of an ``rpc_error`` fault (``code``, ``message``, ``data`` marker)."""
    return {
        "code": INTERNAL_ERROR,
        "message": f"Internal error in tool {tool!r}: upstream failure {_tail(fault)} (injected fault)",
        "data": _meta(fault),
    }


def replacing_result(fault: Fault, tool: str) -> dict[str, Any]:
    """The ``isError`` result of an ``is_error``, ``timeout`` or ``rate_limit`` fault."""
    if fault.kind == "timeout":
        text = f"Upstream timeout: {tool} did not answer within {fault.timeout_ms:g} ms {_tail(fault)} (injected fault)"
    elif fault.kind == "rate_limit":
        text = (
            f"Rate limit exceeded for {tool}: HTTP 429, Retry-After: {fault.retry_after:g} seconds"
            f" {_tail(fault)} (injected fault)"
        )
    else:
        text = f"Upstream service error: {tool} failed {_tail(fault)} (injected fault)"
    meta = _meta(fault)
    if fault.kind == "rate_limit":
        meta[RETRY_AFTER_KEY] = fault.retry_after
    return {"content": [{"type": "text", "text": text}], "isError": True, "_meta": meta}


def altered_result(fault: Fault, normal: dict[str, Any], seed: int) -> dict[str, Any]:
    """The normal answer made ``truncated`` (text cut in half, no structured content), ``empty`` (every
    list emptied: valid JSON, no data) or ``wrong_values`` (every number, and every decimal written as
    a string, scaled by a seeded factor in [0.5, 0.9] or [1.1, 1.5])."""
    meta = {**(normal.get("_meta") or {}), **_meta(fault)}
    texts = [
        b.get("text", "")
        for b in normal.get("content") or []
        if isinstance(b, dict) and b.get("type") == "text"
    ]
    whole = "".join(texts)
    structured = normal.get("structuredContent")
    if fault.kind == "truncated":
        if not whole:
            whole = json.dumps(structured, ensure_ascii=False)
        return {
            "content": [{"type": "text", "text": whole[: max(1, len(whole) // 2)]}],
            "isError": False,
            "_meta": meta,
        }
    salt = (fault.place.sample or "", fault.place.trial, fault.place.turn, fault.place.as_meta()["sample"])

    def change(value: Any) -> Any:
        return _emptied(value) if fault.kind == "empty" else _wrong(value, seed, salt, "$")

    try:
        parsed = json.loads(whole) if whole else None
    except json.JSONDecodeError:
        parsed = None
    if parsed is not None:
        content = [{"type": "text", "text": json.dumps(change(parsed), ensure_ascii=False)}]
    elif fault.kind == "empty":
        content = [{"type": "text", "text": "[]"}]
    else:
        content = [{"type": "text", "text": whole}]
    out: dict[str, Any] = {"content": content, "isError": bool(normal.get("isError")), "_meta": meta}
    if structured is not None:
        out["structuredContent"] = change(structured)
    return out


def _emptied(value: Any) -> Any:
    if isinstance(value, list):
        return []
    if isinstance(value, dict):
        return {k: _emptied(v) for k, v in value.items()}
    return value


def _wrong(value: Any, seed: int, salt: tuple[Any, ...], path: str) -> Any:
    if isinstance(value, dict):
        return {k: _wrong(v, seed, salt, f"{path}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [_wrong(v, seed, salt, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return _scaled(float(value), seed, salt, path, isinstance(value, int))
    if isinstance(value, str) and _DECIMAL.match(value):
        decimals = len(value.split(".")[1])
        return f"{float(_scaled(float(value), seed, salt, path, False)):.{decimals}f}"
    return value


def _scaled(number: float, seed: int, salt: tuple[Any, ...], path: str, integral: bool) -> float | int:
    u = unit_draw(seed, "wrong-values", *salt, path)
    factor = 0.5 + 0.4 * (u * 2) if u < 0.5 else 1.1 + 0.4 * ((u - 0.5) * 2)
    if number == 0:
        return 1 if integral else round(factor - 0.5, 4)
    if integral:
        changed = round(number * factor)
        return changed if changed != number else int(number) + 1
    return round(number * factor, 6)
