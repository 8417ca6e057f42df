"""Removing secrets from stored copies of messages, headers and arguments.

Only the stored copy is redacted; forwarded traffic is never touched. Bodies are redacted in place
on the raw text (string values of secret-named keys, and ``Bearer <token>`` anywhere), so a body
without secrets is stored byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any
from urllib.parse import unquote_plus

REDACTED = "[REDACTED]"

SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key", "x-auth-token"}
)
"""Header names (lower case) whose values are never stored."""

SECRET_HEADER_PARTS = ("token", "secret", "password", "api-key", "apikey", "api_key", "auth")
"""Any header whose lower-case name contains one of these is a credential too (``X-Finmcp-Proxy-Token``)."""


@lru_cache(maxsize=1024)
def is_secret_header(name: str) -> bool:
    """True for header names whose values must not be stored (cached: clients repeat their headers)."""
    lowered = name.lower()
    return lowered in SECRET_HEADERS or any(part in lowered for part in SECRET_HEADER_PARTS)


def redact_url(url: str) -> str:
    """A URL with the values of secret-named query parameters and any ``user:password@`` replaced."""
    scheme, sep, rest = url.partition("://")
    if sep:
        authority, slash, tail = rest.partition("/")
        if "@" in authority:
            authority = REDACTED + "@" + authority.rsplit("@", 1)[1]
        url = scheme + sep + authority + slash + tail
    base, qmark, query = url.partition("?")
    if not qmark:
        return url
    parts = []
    for item in query.split("&"):
        name, eq, _value = item.partition("=")
        if eq and unquote_plus(name).lower() in SECRET_KEYS:
            item = f"{name}={REDACTED}"
        parts.append(item)
    return base + "?" + "&".join(parts)


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


# A secret member holds its key in quotes (``"api_key"``) and a bearer credential contains ``bearer``:
# substring searches of the lower-cased text (fast, in C: ~0.5 ns per byte each) decide whether the
# two regular expressions (case-insensitive alternations: ~40 µs per KiB) must run at all.
SECRET_HINTS = (*(f'"{key}"' for key in sorted(SECRET_KEYS)), "bearer")


def might_hold_secrets(text: str) -> bool:
    """False when ``text`` certainly holds no secret member and no bearer credential."""
    lowered = text.lower()
    for hint in SECRET_HINTS:  # noqa: SIM110 - a plain loop: any() over a generator costs more than the searches
        if hint in lowered:
            return True
    return False


def redact_text(text: str) -> str:
    """The raw JSON text with secret string values and bearer tokens replaced by ``[REDACTED]``."""
    if not might_hold_secrets(text):
        return text
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
        out.append([name_s, secret_header_value(name_s, value_s)])
    return out


def secret_header_value(name: str, value: str) -> str:
    """``value`` as stored for header ``name``: ``[REDACTED]`` for a credential."""
    return REDACTED if is_secret_header(name) else value


def redact_value(value: Any) -> Any:
    """A copy of a JSON value with every secret-named key's value replaced (for stored arguments).

    Iterative, so arguments nested as deep as a JSON parser accepts are redacted, never a
    ``RecursionError`` (which would cost the call its trace row).
    """
    if not isinstance(value, Mapping | list | tuple):
        return value
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]  # (source, parent container, key in parent)
    while stack:
        source, parent, slot = stack.pop()
        if isinstance(source, Mapping):
            copy: Any = {}
            for key, item in source.items():
                if isinstance(key, str) and key.lower() in SECRET_KEYS:
                    copy[key] = REDACTED
                else:
                    copy[key] = item
                    if isinstance(item, Mapping | list | tuple):
                        stack.append((item, copy, key))
        else:
            copy = list(source)
            for index, item in enumerate(copy):
                if isinstance(item, Mapping | list | tuple):
                    stack.append((item, copy, index))
        parent[slot] = copy
    return root[0]
