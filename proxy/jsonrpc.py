"""Reading (never changing) JSON-RPC messages: kind, id, method, and the MCP ``_meta`` the proxy logs."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from finmcp.recordings.results import utf8

log = logging.getLogger("finmcp.proxy")

PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_META = "io.modelcontextprotocol/clientInfo"
GROUP_META = "io.finmcp/group"
"""``params._meta`` key of an explicit parallel-group tag (any JSON scalar; same value = same group)."""
TAG_META = {"io.finmcp/run": "run", "io.finmcp/sample": "sample", "io.finmcp/turn": "turn"}
"""Optional per-request tags in ``params._meta`` (for stdio hosts driven by a harness)."""

PROXY_ERROR = -32000
"""JSON-RPC error code of errors the proxy itself answers (upstream unreachable, timeout, ...)."""
SAFE_TO_REPEAT = frozenset(
    {
        "ping",
        "server/discover",
        "tools/list",
        "prompts/list",
        "prompts/get",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "completion/complete",
        "tasks/get",
        "tasks/list",
    }
)
"""MCP requests that only read, so sending one twice has the effect of once (RFC 9110 §9.2.2 "safe").

Not ``tools/call`` (a tool may place an order; its ``readOnlyHint``/``idempotentHint`` annotations are
the server's unverified claims), not ``initialize`` (each one opens a session on the upstream), nor
anything that subscribes, sets, cancels or creates."""


@dataclass(slots=True)
class Message:
    """One parsed JSON-RPC message and the raw text it came from."""

    raw: bytes
    obj: Any
    kind: str  # request | notification | response | error | invalid
    id: Any = None
    method: str | None = None
    _params: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    _meta: dict[str, Any] | None = field(default=None, repr=False, compare=False)

    @property
    def params(self) -> dict[str, Any]:
        """``params`` when it is an object, else ``{}`` (looked up once)."""
        params = self._params
        if params is None:
            found = self.obj.get("params") if isinstance(self.obj, dict) else None
            params = self._params = found if isinstance(found, dict) else {}
        return params

    @property
    def meta(self) -> dict[str, Any]:
        """``params._meta`` when it is an object, else ``{}`` (looked up once)."""
        meta = self._meta
        if meta is None:
            found = self.params.get("_meta")
            meta = self._meta = found if isinstance(found, dict) else {}
        return meta

    @property
    def id_text(self) -> str | None:
        """The id as JSON text (``1`` and ``"1"`` stay distinct), or None."""
        msg_id = self.id
        if msg_id is None:
            return None
        if type(msg_id) is int:  # the common case; the same text as json.dumps, cheaper
            return str(msg_id)
        return json.dumps(msg_id, ensure_ascii=False)


def classify(obj: Any, raw: bytes) -> Message:
    """A :class:`Message` for one decoded JSON value (anything that is not JSON-RPC is ``invalid``)."""
    if not isinstance(obj, dict):
        return Message(raw, obj, "invalid")
    method = obj.get("method")
    msg_id = obj.get("id")
    if isinstance(msg_id, bool) or not isinstance(msg_id, int | str | float | type(None)):
        msg_id = None
    if isinstance(method, str):
        return Message(raw, obj, "request" if "id" in obj else "notification", msg_id, method)
    if "result" in obj:
        return Message(raw, obj, "response", msg_id)
    if "error" in obj:
        return Message(raw, obj, "error", msg_id)
    return Message(raw, obj, "invalid", msg_id)


def parse_body(raw: bytes) -> list[Message]:
    """Every message of a body (a JSON-RPC batch gives several); unparseable text is one ``invalid``."""
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return [Message(raw, None, "invalid")]
    except RecursionError:  # nested deeper than the parser can go: still forwarded, logged as invalid
        log.warning("a JSON body of %d bytes is nested too deeply to parse; logged as invalid", len(raw))
        return [Message(raw, None, "invalid")]
    if isinstance(obj, list) and obj:
        return [classify(item, utf8(json.dumps(item, ensure_ascii=False))) for item in obj]
    return [classify(obj, raw)]


def safe_to_repeat(messages: list[Message]) -> bool:
    """True when every message of a body is a request in :data:`SAFE_TO_REPEAT` (and there is one)."""
    return bool(messages) and all(m.kind == "request" and m.method in SAFE_TO_REPEAT for m in messages)


def error_message(request_id: Any, message: str, code: int = PROXY_ERROR, data: Any = None) -> bytes:
    """A JSON-RPC error response (compact, one line) answered by the proxy itself."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    body = {"jsonrpc": "2.0", "id": request_id, "error": error}
    return utf8(json.dumps(body, ensure_ascii=False, separators=(",", ":")))
