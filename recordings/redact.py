r"""Removing secrets from stored copies of messages, headers and arguments.

Only the stored copy is redacted; forwarded traffic is never touched. Bodies are redacted in place
on the raw text (string values of secret-named keys, and ``Bearer <token>`` anywhere), so a body
without secrets is stored byte for byte.

What counts is the parsed message, not its spelling: JSON may write any character of a key or a
value as a ``\uXXXX`` escape (``"\u0061piKey"`` is the key ``apiKey``), which no pattern on the raw
text sees. A body holding an escape of an ASCII character (the only characters secret key names and
``Bearer`` credentials are made of) is therefore parsed, and its secrets are looked for in the decoded
keys and strings; when it holds one, the stored copy is the redacted message re-encoded (compact
JSON), since it cannot be patched in place. Bodies with nothing to redact are still stored as sent.
"""

from __future__ import annotations

import json
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


# ``\u00XX`` for XX in 20..7f: an escaped ASCII character, which could spell a secret key or ``bearer``
# (escapes of other characters, such as the CJK text ensure_ascii encoders write, cannot)
_ASCII_ESCAPE = re.compile(r"\\u00[2-7][0-9a-fA-F]")


def redact_text(text: str) -> str:
    """The JSON text with secret string values, bearer tokens and configured values replaced by ``[REDACTED]``.

    Patched in place on the raw text; a body whose secrets hide behind ``\\u`` escapes, or that holds
    a configured secret value (:func:`set_secret_values`), is judged on its parsed form (see the module
    docstring) and, when it holds one, stored re-encoded. Text that is not JSON has configured values
    replaced where they appear.
    """
    literal = bool(_literal_forms) and (_holds_literal(text) or "\\/" in text)
    if literal or _ASCII_ESCAPE.search(text) is not None:
        parsed = _redact_parsed(text)
        if parsed == _NOT_JSON:
            if literal:
                text = _replace_literals(text, _literal_forms)
        elif parsed is not None:
            return parsed
    if not might_hold_secrets(text):
        return text
    text = _SECRET_MEMBER.sub(lambda m: m.group(1) + '"' + REDACTED + '"', text)
    return _BEARER.sub(lambda m: m.group(1) + REDACTED, text)


_NOT_JSON = ""  # _redact_parsed's answer for text it cannot parse (a str, so the signature stays simple)


def _redact_parsed(text: str) -> str | None:
    """The redacted message re-encoded when its decoded form holds a secret, else None (patch the text).

    :data:`_NOT_JSON` when the text is not JSON (never the answer for JSON text).
    """
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):
        return _NOT_JSON
    changed = False

    def clean(value: Any) -> Any:
        nonlocal changed
        if isinstance(value, str):
            redacted = _redact_string(value)
            if redacted is not value:
                changed = True
            return redacted
        if isinstance(value, list):
            return [clean(item) for item in value]
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                if key.lower() in SECRET_KEYS and isinstance(item, str):
                    changed = True
                    out[clean(key)] = REDACTED
                else:
                    out[clean(key)] = clean(item)
            return out
        return value

    try:
        cleaned = clean(message)
    except RecursionError:  # nested deeper than Python recurses: the raw patterns are all there is
        return None
    if not changed:
        return None
    encoded = json.dumps(cleaned, ensure_ascii=False, separators=(",", ":"))
    try:
        encoded.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (escaped in the original): keep it escaped
        encoded = json.dumps(cleaned, ensure_ascii=True, separators=(",", ":"))
    return encoded


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
    """``value`` as stored for header ``name``: ``[REDACTED]`` for a credential or a configured secret value."""
    if is_secret_header(name) or (_literal_values and _replace_literals(value, _literal_values) is not value):
        return REDACTED
    return value


def redact_value(value: Any) -> Any:
    """A copy of a JSON value with every secret-named key's value, bearer token and configured secret
    value replaced (for stored arguments and recorded answers): what :func:`redact_text` does to text.

    Iterative, so arguments nested as deep as a JSON parser accepts are redacted, never a
    ``RecursionError`` (which would cost the call its trace row).
    """
    if isinstance(value, str):
        return _redact_string(value)
    if not isinstance(value, Mapping | list | tuple):
        return value
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]  # (source, parent container, key in parent)
    while stack:
        source, parent, slot = stack.pop()
        if isinstance(source, Mapping):
            copy: Any = {}
            for key, item in source.items():
                if isinstance(key, str):
                    secret = key.lower() in SECRET_KEYS
                    key = _redact_string(key)
                    if secret:
                        copy[key] = REDACTED
                        continue
                copy[key] = _redact_string(item) if isinstance(item, str) else item
                if isinstance(item, Mapping | list | tuple):
                    stack.append((item, copy, key))
        else:
            copy = [_redact_string(item) if isinstance(item, str) else item for item in source]
            for index, item in enumerate(copy):
                if isinstance(item, Mapping | list | tuple):
                    stack.append((item, copy, index))
        parent[slot] = copy
    return root[0]


def _redact_string(value: str) -> str:
    """One decoded string with bearer tokens and configured secret values replaced (``value`` itself
    when there is nothing to replace)."""
    out = value
    if "bearer" in value.lower():
        redacted = _BEARER.sub(lambda m: m.group(1) + REDACTED, value)
        if redacted != value:
            out = redacted
    if _literal_values:
        out = _replace_literals(out, _literal_values)
    return out


# ---------------------------------------------------------------- configured secret values

MIN_SECRET_VALUE = 8
"""Configured secret values shorter than this are not looked for in stored text (they would match
ordinary words and numbers); :func:`set_secret_values` returns them so the caller can warn."""

_literal_values: tuple[str, ...] = ()
"""The configured values as decoded text (longest first)."""
_literal_forms: tuple[str, ...] = ()
"""The values and their JSON-escaped spellings, as they appear in JSON text (longest first)."""


def set_secret_values(values: Iterable[str]) -> list[str]:
    """Redact these literal values from every stored text from now on (the proxy's ``--upstream-header``
    values), even where they look like nothing secret; replaces any earlier set.

    A value ``SCHEME CREDENTIAL`` (``Bearer sk-…``) counts with its credential alone too. Returns the
    values (or credentials) shorter than :data:`MIN_SECRET_VALUE`, which are not looked for.
    """
    global _literal_values, _literal_forms
    wanted: set[str] = set()
    short: list[str] = []
    for value in values:
        value = value.strip()
        candidates = [value]
        scheme, _, credential = value.partition(" ")
        if credential.strip() and scheme.isalpha():
            candidates.append(credential.strip())
        for candidate in candidates:
            if len(candidate) >= MIN_SECRET_VALUE:
                wanted.add(candidate)
            elif candidate:
                short.append(candidate)
    forms = set(wanted)
    for value in wanted:
        forms.add(json.dumps(value, ensure_ascii=False)[1:-1])
        forms.add(json.dumps(value)[1:-1])
    _literal_values = tuple(sorted(wanted, key=len, reverse=True))
    _literal_forms = tuple(sorted(forms, key=len, reverse=True))
    return short


def has_secret_values() -> bool:
    """True when :func:`set_secret_values` configured any value to look for."""
    return bool(_literal_values)


def _holds_literal(text: str) -> bool:
    return any(form in text for form in _literal_forms)


def _replace_literals(text: str, forms: tuple[str, ...]) -> str:
    """``text`` with each of ``forms`` replaced by ``[REDACTED]`` (``text`` itself when none occurs)."""
    for form in forms:
        if form in text:
            text = text.replace(form, REDACTED)
    return text
