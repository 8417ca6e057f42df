"""What a recorded upstream declared: its ``initialize`` answer and its whole ``tools/list`` (``servers``).

A recording of another MCP server is only replayable as that server when the file also says what the
server was: ``serverInfo``, ``capabilities``, ``instructions``, the negotiated ``protocolVersion`` and
the tools it listed (every page, each tool as declared: ``outputSchema``, ``annotations``, ``_meta``
kept). Record mode (``finmcp-proxy --recordings``) fills it; ``finmcp-server --recordings FILE``
serves it (:mod:`server.recorded`). One row per server name: the name its answers are stored under.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from finmcp.recordings.clock import utc_now_iso
from finmcp.recordings.connection import StoreConnection
from finmcp.recordings.errors import InvalidValueError
from finmcp.recordings.responses import check_provenance
from finmcp.recordings.results import dumps

DECLARATION_KEYS: tuple[str, ...] = ("protocolVersion", "serverInfo", "capabilities", "instructions", "tools")
"""The keys of a declaration dict (each optional; absent: not known)."""

_COLUMNS = {
    "protocolVersion": "protocol_version",
    "serverInfo": "server_info",
    "capabilities": "capabilities",
    "instructions": "instructions",
    "tools": "tools",
}
_JSON_KEYS = frozenset({"serverInfo", "capabilities", "tools"})
_SELECT = (
    "SELECT protocol_version, server_info, capabilities, instructions, tools, provenance, created, updated"
    " FROM servers WHERE name = ?"
)


def check_declaration(declaration: Any, where: str) -> dict[str, Any]:
    """The declaration's known keys, checked (types as MCP has them); unknown keys are an error."""
    if not isinstance(declaration, Mapping):
        raise InvalidValueError(f"{where}: a declaration is a JSON object, got {type(declaration).__name__}")
    unknown = sorted(set(declaration) - set(DECLARATION_KEYS))
    if unknown:
        raise InvalidValueError(
            f"{where}: unknown declaration keys {', '.join(unknown)} (known: {', '.join(DECLARATION_KEYS)})"
        )
    kinds: dict[str, type] = {
        "protocolVersion": str,
        "serverInfo": dict,
        "capabilities": dict,
        "instructions": str,
        "tools": list,
    }
    out: dict[str, Any] = {}
    for key, value in declaration.items():
        if value is None:
            continue
        if not isinstance(value, kinds[key]):
            raise InvalidValueError(f"{where}: {key} must be a {kinds[key].__name__}, got {value!r:.80}")
        if isinstance(value, list):
            for tool in value:
                if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                    raise InvalidValueError(f"{where}: every tool needs a string name, got {tool!r:.80}")
        out[key] = value
    return out


class DeclarationsMixin(StoreConnection):
    """The ``servers`` table API of :class:`recordings.store.RecordingStore`."""

    def put_declaration(
        self,
        name: str,
        declaration: Mapping[str, Any],
        provenance: str = "recorded:unknown",
        *,
        created: str | None = None,
        updated: str | None = None,
    ) -> None:
        """Store what server ``name`` declared; keys given replace the stored ones, keys absent keep them.

        ``declaration``: any of ``protocolVersion, serverInfo, capabilities, instructions, tools``
        (``tools``: the whole listing, every page, each tool as declared). ``created`` / ``updated``
        default to now (an import passes the exported ones).
        """
        if not isinstance(name, str) or not name:
            raise InvalidValueError(f"server name: expected a non-empty string, got {name!r}")
        checked = check_declaration(declaration, f"server {name!r}")
        check_provenance(provenance)
        stamp = updated or utc_now_iso()
        with self.transaction():
            row = self._conn.execute("SELECT created FROM servers WHERE name = ?", (name,)).fetchone()
            if row is None:
                self._conn.execute(
                    "INSERT INTO servers (name, provenance, created, updated) VALUES (?, ?, ?, ?)",
                    (name, provenance, created or stamp, stamp),
                )
            sets = ["provenance = ?", "updated = ?"]
            values: list[Any] = [provenance, stamp]
            for key, value in checked.items():
                sets.append(f"{_COLUMNS[key]} = ?")
                values.append(dumps(value) if key in _JSON_KEYS else value)
            self._conn.execute(f"UPDATE servers SET {', '.join(sets)} WHERE name = ?", (*values, name))

    def declaration(self, name: str) -> dict[str, Any] | None:
        """What server ``name`` declared (the keys known of it), or None when nothing is stored."""
        stored = self.declaration_record(name)
        return None if stored is None else stored["declaration"]

    def declaration_record(self, name: str) -> dict[str, Any] | None:
        """``{name, declaration, provenance, created, updated}`` of server ``name``, or None."""
        with self._locked():
            row = self._conn.execute(_SELECT, (name,)).fetchone()
        if row is None:
            return None
        out: dict[str, Any] = {}
        for key, value in zip(DECLARATION_KEYS, row[:5], strict=True):
            if value is not None:
                out[key] = json.loads(value) if key in _JSON_KEYS else value
        return {"name": name, "declaration": out, "provenance": row[5], "created": row[6], "updated": row[7]}

    def declared_servers(self) -> list[str]:
        """The names of the servers whose declaration is stored, sorted."""
        with self._locked():
            rows = self._conn.execute("SELECT name FROM servers ORDER BY name").fetchall()
        return [row[0] for row in rows]
