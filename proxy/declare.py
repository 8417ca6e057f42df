"""Record mode's memory of what the upstream declared, and of what it sent while answering each call.

:class:`Declared` is fed by the tracer (:mod:`proxy.capture`): the ``initialize`` (or 2026
``server/discover``) result gives ``protocolVersion``, ``serverInfo``, ``capabilities`` and
``instructions``; ``tools/list`` results give the tool list, page after page (a page following one
that had a ``nextCursor`` continues the listing; any other page starts a new one), stored whole once
the last page arrived. Everything stored is redacted like the rest of the recording.

The name a recording is stored under (:func:`server_name`): ``--recordings-inventory`` when given,
else ``NAME`` of an upstream URL ``.../NAME/mcp``, else the upstream's ``serverInfo.name`` (finmcp's
own server calls itself ``finmcp-NAME``: its recordings keep the inventory name ``NAME``), else
``finmcp65`` when no ``serverInfo`` was seen before the first answer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from finmcp.recordings.errors import InvalidValueError
from finmcp.recordings.redact import redact_value
from finmcp.recordings.store import RecordingStore

log = logging.getLogger("finmcp.proxy")

SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"
FINMCP_PREFIX = "finmcp-"
FALLBACK_NAME = "finmcp65"
NOTIFICATION_METHODS = frozenset({"notifications/progress", "notifications/message"})
"""The notifications recorded with the call they were sent for (replayed before its result)."""


def server_name(server_info: Any) -> str | None:
    """The recordings name of an upstream that calls itself ``server_info["name"]`` (None: no name)."""
    if not isinstance(server_info, dict):
        return None
    name = server_info.get("name")
    if not isinstance(name, str) or not name:
        return None
    if name.startswith(FINMCP_PREFIX) and len(name) > len(FINMCP_PREFIX):
        return name[len(FINMCP_PREFIX) :]
    return name


class Declared:
    """What one upstream declared, learned from the answers the proxy forwards (one per proxy process).

    ``submit(op)`` queues ``op(store)`` on the trace writer (never run on the event loop).
    """

    def __init__(
        self,
        store: RecordingStore,
        submit: Callable[[Callable[[], None]], object],
        provenance: str,
        name: str | None,
    ) -> None:
        self.store = store
        self.submit = submit
        self.provenance = provenance
        self.fixed = name is not None
        self._name = name
        self._pages: dict[str, tuple[list[Any], bool]] = {}  # session key -> (tools so far, more to come)
        self.failures = 0

    @property
    def name(self) -> str:
        """The name answers and the declaration are stored under."""
        return self._name or FALLBACK_NAME

    def learn_server(self, result: dict[str, Any], discover: bool = False) -> None:
        """An ``initialize`` result (or a 2026 ``server/discover`` result: ``discover``)."""
        info = result.get("serverInfo")
        if discover:
            meta = result.get("_meta")
            info = meta.get(SERVER_INFO_META) if isinstance(meta, dict) else None
        if not self.fixed and self._name is None:
            self._name = server_name(info)
        declared: dict[str, Any] = {}
        version = result.get("protocolVersion")
        if discover:
            versions = result.get("supportedVersions")
            version = versions[-1] if isinstance(versions, list) and versions else None
        for key, value in (
            ("protocolVersion", version),
            ("serverInfo", info),
            ("capabilities", result.get("capabilities")),
            ("instructions", result.get("instructions")),
        ):
            if value is not None:
                declared[key] = value
        self._put(declared)

    def learn_listing(self, session_key: str, result: dict[str, Any]) -> None:
        """One ``tools/list`` page; the whole listing is stored once its last page arrived."""
        tools = result.get("tools")
        if not isinstance(tools, list):
            return
        so_far, more = self._pages.get(session_key, ([], False))
        listing = (so_far if more else []) + tools
        cursor = result.get("nextCursor")
        if isinstance(cursor, str) and cursor:
            self._pages[session_key] = (listing, True)
            return
        self._pages.pop(session_key, None)
        self._put({"tools": listing})

    def _put(self, declared: dict[str, Any]) -> None:
        if not declared:
            return
        stored = redact_value(declared)

        def op() -> None:
            try:
                self.store.put_declaration(self.name, stored, self.provenance)
            except InvalidValueError as exc:  # e.g. a tool without a name: logged, not recorded
                self.failures += 1
                log.warning("declaration of %s not recorded: %s", self.name, exc)

        self.submit(op)


def call_notification(method: str | None, params: Any) -> dict[str, Any] | None:
    """The stored form of a notification sent while answering a call (None: not one to record)."""
    if method not in NOTIFICATION_METHODS:
        return None
    note: dict[str, Any] = {"method": method}
    if isinstance(params, dict):
        note["params"] = redact_value(params)
    return note
