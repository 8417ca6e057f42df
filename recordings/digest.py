"""A content digest of a recordings file: what it serves, not how SQLite happens to store it.

``sha256:<hex>`` over the rows of ``responses`` and ``response_steps`` (every column that changes an
answer: inventory, tool, lookup key, step, arguments, content, structured content, error flags,
notifications, latency) and of ``servers`` (what a recorded server declared), read in key order. Row ids, ``created`` times and provenance are left out, and the file's
pages are never read, so a checkpoint, a ``VACUUM`` or re-importing the same recordings keeps the
digest; a changed, added or removed answer changes it. Run fingerprints use it (docs/harness.md).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager

from finmcp.recordings.tool_fingerprint import FINGERPRINT_PREFIX

DIGESTED = (
    (
        "responses",
        "inventory, tool, args_key, arguments, content, structured_content, is_error, latency_ms",
        "inventory, tool, args_key",
    ),
    (
        "response_steps",
        "inventory, tool, args_key, step, arguments, content, structured_content, is_error, rpc_error,"
        " notifications, latency_ms",
        "inventory, tool, args_key, step",
    ),
    ("servers", "name, protocol_version, server_info, capabilities, instructions, tools", "name"),
)
"""(table, columns digested, order) of each table a digest covers."""


def recordings_digest(conn: sqlite3.Connection, locked: Callable[[], AbstractContextManager[object]]) -> str:
    """The digest of the recordings on ``conn`` (see the module docstring); each table read in one pass under ``locked``."""
    sha = hashlib.sha256()
    for table, columns, order in DIGESTED:
        sha.update(f"\x00table {table}\x00".encode())
        with locked():
            cursor = conn.execute(f"SELECT {columns} FROM {table} ORDER BY {order}")
            while rows := cursor.fetchmany(1000):
                for row in rows:
                    sha.update(json.dumps(list(row), ensure_ascii=False, separators=(",", ":")).encode())
                    sha.update(b"\n")
    return FINGERPRINT_PREFIX + sha.hexdigest()
