"""Removing secrets from stored copies of messages, headers and arguments.

Only the stored copy is redacted; forwarded traffic is never touched. Bodies are redacted in place
on the raw text (string values of secret-named keys, and ``Bearer <token>`` anywhere), so a body
without secrets is stored byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "[REDACTED]"

SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key", "x-auth-token"}
)
"""Header names (lower case) whose values are never stored."""

SECRET_KEYS = frozenset(
    {
        "apikey",
        "api_key",
        "api-key",
        "x-api-key",
        "authorization",
        "access_token",
        "accesstoken",
        "refresh_token",
        "auth_token",
        "token",
        "password",
        "passwd",
        "secret",
        "client_secret",
        "cookie",
    }
)
"""JSON object keys (compared case-insensitively, whole key) whose string values are never stored."""

_KEY_ALTERNATION = "|".join(sorted((re.escape(k) for k in SECRET_KEYS), key=len, reverse=True))
_SECRET_MEMBER = re.compile(
    r'("(?i:' + _KEY_ALTERNATION + r')"\s*:\s*)"(?:[^"\\]|\\.)*"',
)
# A bearer credential: 16+ token characters with at least one digit, so prose such as "bearer bonds"
# or "bearer instruments" is left alone.
_BEARER = re.compile(r"(?i)(\bbearer\s+)(?=[A-Za-z._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]{16,}")


def redact_text(text: str) -> str:
    """The raw JSON text with secret string values and bearer tokens replaced by ``[REDACTED]``."""
    text = _SECRET_MEMBER.sub(lambda m: m.group(1) + '"' + REDACTED + '"', text)
    return _BEARER.sub(lambda m: m.group(1) + REDACTED, text)


def redact_headers(headers: Mapping[str, Any] | Iterable[tuple[Any, Any]]) -> list[list[str]]:
    """Headers as ``[[name, value], ...]`` in their original order, secret values replaced.

    Accepts a mapping or a sequence of pairs (bytes are decoded as Latin-1, as HTTP does).
    """
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    out: list[list[str]] = []
    for name, value in pairs:
        name_s = name.decode("latin-1") if isinstance(name, bytes) else str(name)
        value_s = value.decode("latin-1") if isinstance(value, bytes) else str(value)
        if name_s.lower() in SECRET_HEADERS:
            value_s = REDACTED
        out.append([name_s, value_s])
    return out


def redact_value(value: Any) -> Any:
    """A copy of a JSON value with every secret-named key's value replaced (for stored arguments)."""
    if isinstance(value, Mapping):
        return {
            key: REDACTED if isinstance(key, str) and key.lower() in SECRET_KEYS else redact_value(item)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_value(item) for item in value]
    return value
