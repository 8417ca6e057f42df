"""Answer drift: a recorded call's answer against the live answer to the same call.

Both sides are JSON values (the logged result as stored; the live result as the SDK's JSON dump), with
``_meta`` dropped, a text block holding JSON parsed, then the user's normalisers applied; compared with
:func:`finmcp.proxy.drift.values.diff`. Severity: the call now errors (or fails) -> breaks-replay; a
value or structure change -> changes-references; items only moved -> cosmetic.
"""

from __future__ import annotations

from typing import Any

from finmcp.proxy.drift.normalise import Normaliser, expand_text_blocks
from finmcp.proxy.drift.severity import BREAKS_REPLAY, CHANGES_REFERENCES, COSMETIC, Finding
from finmcp.proxy.drift.values import STRUCTURAL, diff


def _clean(value: Any) -> Any:
    """JSON value with ``None`` members dropped (absent and null compare equal)."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def comparable_result(result: Any) -> dict[str, Any]:
    """``{content, structuredContent, isError}`` of a logged or re-issued result, ``_meta`` dropped."""
    result = result if isinstance(result, dict) else {}
    content = result.get("content")
    return {
        "content": _clean(
            [{k: v for k, v in b.items() if k != "_meta"} if isinstance(b, dict) else b for b in content]
        )
        if isinstance(content, list)
        else _clean(content),
        "structuredContent": _clean(result.get("structuredContent")),
        "isError": bool(result.get("isError", False)),
    }


def prepared(result: Any, normaliser: Normaliser) -> Any:
    """What is compared of a result: comparable, JSON text parsed, normalised."""
    return normaliser.apply(expand_text_blocks(comparable_result(result)))


def _error_of(rpc_error: Any) -> dict[str, Any]:
    rpc_error = rpc_error if isinstance(rpc_error, dict) else {}
    return {"code": rpc_error.get("code"), "message": rpc_error.get("message")}


def compare_answer(
    call: dict[str, Any], live: dict[str, Any], normaliser: Normaliser, where: dict[str, Any]
) -> tuple[str, list[dict[str, Any]], list[Finding]]:
    """``(verdict, diff, findings)`` for one re-issued call.

    ``live`` is ``{"result": {...}}``, ``{"rpc_error": {code, message}}`` or ``{"failed": reason}``;
    ``verdict`` is ``identical``, ``different`` or ``failed``.
    """
    tool = call["tool"]

    def finding(severity: str, kind: str, path: str, detail: str, recorded: Any, now: Any) -> Finding:
        return Finding(severity, kind, tool, path, detail, recorded, now, where)

    logged_error = call["status"] == "rpc_error"
    if "failed" in live:
        f = finding(BREAKS_REPLAY, "call-failed", "$", live["failed"], call["status"], None)
        return "failed", [], [f]
    if "rpc_error" in live:
        now = _error_of(live["rpc_error"])
        if not logged_error:
            d = [
                {
                    "path": "$",
                    "change": "type",
                    "logged": call["status"],
                    "reissued": f"rpc error {now['code']}: {now['message']}",
                }
            ]
            return (
                "different",
                d,
                [
                    finding(
                        BREAKS_REPLAY,
                        "now-errors",
                        "$",
                        "the call now answers a JSON-RPC error",
                        call["status"],
                        now,
                    )
                ],
            )
        d = diff(_error_of(call["rpc_error"]), now)
        return (
            _verdict(d),
            d,
            [
                finding(CHANGES_REFERENCES, "value", c["path"], "error changed", c["logged"], c["reissued"])
                for c in d
            ],
        )
    if logged_error:
        d = [{"path": "$", "change": "type", "logged": call["rpc_error"], "reissued": "a result"}]
        return (
            "different",
            d,
            [
                finding(
                    CHANGES_REFERENCES,
                    "now-answers",
                    "$",
                    "a recorded error is now a result",
                    call["rpc_error"],
                    "a result",
                )
            ],
        )
    old, new = prepared(call["result"], normaliser), prepared(live["result"], normaliser)
    d = diff(old, new)
    findings: list[Finding] = []
    if not old.get("isError") and new.get("isError"):
        findings.append(
            finding(BREAKS_REPLAY, "now-errors", "isError", "the call now answers isError", False, True)
        )
    for c in d:
        if c["path"] == "isError":
            continue
        if c["change"] == "moved":
            severity, kind = COSMETIC, "moved"
        else:
            severity, kind = CHANGES_REFERENCES, "structure" if c["change"] in STRUCTURAL else "value"
        findings.append(finding(severity, kind, c["path"], c["change"], c["logged"], c["reissued"]))
    return _verdict(d), _structured_first(d), findings


def _verdict(d: list[dict[str, Any]]) -> str:
    return "different" if d else "identical"


def _structured_first(d: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Changes under ``structuredContent`` before those in ``content`` (the useful paths first)."""
    return sorted(d, key=lambda c: 0 if str(c["path"]).startswith("structuredContent") else 1)
