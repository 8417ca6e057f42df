"""MCP protocol versions and their eras: the one place that knows which versions are stateless.

Two eras exist. The *handshake* era (2024-11-05 ... 2025-11-25) opens a session with ``initialize``
and ``Mcp-Session-Id``. The *stateless* era (2026-07-28 on) has no handshake: each request carries the
version and client info in ``params._meta`` and the ``MCP-Protocol-Version``, ``Mcp-Method`` and
``Mcp-Name`` headers. A dated version newer than every known one belongs to the stateless era, so a
future revision is never mistaken for the handshake era.

The known lists mirror ``mcp_types.version`` (``HANDSHAKE_PROTOCOL_VERSIONS``,
``MODERN_PROTOCOL_VERSIONS``) of the SDK pinned in pyproject; a unit test keeps them equal. They are
not imported from there because importing ``mcp_types`` loads every SDK type (~0.4 s), and the data
layer and the evaluator do not otherwise need the SDK.
"""

from __future__ import annotations

import re
from datetime import date
from functools import lru_cache
from typing import Literal

HANDSHAKE_VERSIONS: tuple[str, ...] = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""Released revisions negotiated with ``initialize``, oldest first."""
STATELESS_VERSIONS: tuple[str, ...] = ("2026-07-28",)
"""Released revisions with the stateless per-request envelope, oldest first."""
KNOWN_VERSIONS: tuple[str, ...] = (*HANDSHAKE_VERSIONS, *STATELESS_VERSIONS)
LATEST_HANDSHAKE_VERSION = HANDSHAKE_VERSIONS[-1]
LATEST_STATELESS_VERSION = STATELESS_VERSIONS[-1]
FIRST_STATELESS_VERSION = STATELESS_VERSIONS[0]

Era = Literal["handshake", "stateless", "invalid"]
HANDSHAKE: Era = "handshake"
STATELESS: Era = "stateless"
INVALID: Era = "invalid"

HANDSHAKE_ERA_LABEL = "handshake"
STATELESS_ERA_LABEL = "stateless"
"""How a session's era is stored in traces (``sessions.era``): ``handshake`` or ``stateless``."""
ERA_LABELS = frozenset({HANDSHAKE_ERA_LABEL, STATELESS_ERA_LABEL})
_OLD_ERA_LABELS = {FIRST_STATELESS_VERSION: STATELESS_ERA_LABEL}
"""Labels traces stored before the era had one word: the stateless era was stored as ``2026-07-28``."""

_DATED = re.compile(r"\d{4}-\d{2}-\d{2}")
_HANDSHAKE_SET = frozenset(HANDSHAKE_VERSIONS)
_STATELESS_SET = frozenset(STATELESS_VERSIONS)


def version_date(version: object) -> date | None:
    """The calendar date a ``YYYY-MM-DD`` version names, or None when it is not one."""
    if not isinstance(version, str) or not _DATED.fullmatch(version):
        return None
    try:
        return date.fromisoformat(version)
    except ValueError:
        return None


@lru_cache(maxsize=64)
def _classify_dated(version: str) -> Era:
    when = version_date(version)
    if when is None or when < date.fromisoformat(HANDSHAKE_VERSIONS[0]):
        return INVALID
    return STATELESS if when >= date.fromisoformat(FIRST_STATELESS_VERSION) else HANDSHAKE


def era_of(version: object) -> Era:
    """``handshake``, ``stateless`` or ``invalid`` (not a string, not ``YYYY-MM-DD``, before 2024-11-05).

    Known versions answer from the lists; an unknown dated version answers by its date: on or after
    the first stateless revision it is stateless (a future revision), between the first handshake
    revision and that date it is handshake.
    """
    if not isinstance(version, str):
        return INVALID
    if version in _STATELESS_SET:
        return STATELESS
    if version in _HANDSHAKE_SET:
        return HANDSHAKE
    return _classify_dated(version)


def is_stateless(version: object) -> bool:
    """True for a stateless-era version (2026-07-28 or any later date)."""
    if not isinstance(version, str):
        return False
    return version in _STATELESS_SET or (
        version not in _HANDSHAKE_SET and _classify_dated(version) == STATELESS
    )


def is_handshake(version: object) -> bool:
    """True for a handshake-era version (2024-11-05 ... before 2026-07-28)."""
    return era_of(version) == HANDSHAKE


def is_known(version: object) -> bool:
    """True for a released revision in :data:`KNOWN_VERSIONS`."""
    return isinstance(version, str) and (version in _HANDSHAKE_SET or version in _STATELESS_SET)


def era_label(version: object) -> str:
    """The trace's era label of a version seen in ``_meta``: ``stateless`` or else ``handshake``."""
    return STATELESS_ERA_LABEL if is_stateless(version) else HANDSHAKE_ERA_LABEL


def stored_era(label: str | None) -> str | None:
    """A ``sessions.era`` value as read from a trace, in today's words (an older trace's ``2026-07-28``
    reads as ``stateless``); None stays None."""
    return _OLD_ERA_LABELS.get(label, label) if label is not None else None


def check_version(version: object) -> str:
    """``version`` itself when it names an era; else ``ValueError`` saying what is wrong with it."""
    if era_of(version) != INVALID:
        return str(version)
    if not isinstance(version, str):
        raise ValueError(
            f"protocol version {version!r}: expected a string such as {LATEST_STATELESS_VERSION!r}"
        )
    raise ValueError(
        f"protocol version {version!r}: expected a date YYYY-MM-DD no older than {HANDSHAKE_VERSIONS[0]}"
        f" (known: {', '.join(KNOWN_VERSIONS)})"
    )
