"""Run / sample / turn / trial tags: from the URL path, from ``X-Finmcp-*`` headers, or from defaults.

URL form: ``/r/{run}/s/{sample}/t/{turn}/mcp`` where every ``/{letter}/{value}`` pair is optional
(``k/{trial}`` tags a repeated trial). Headers ``X-Finmcp-Run``, ``X-Finmcp-Sample``,
``X-Finmcp-Turn``, ``X-Finmcp-Trial`` override the path; they are stripped before forwarding.
Turns are stored exactly as given (the harness sends 0-based turns).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import unquote

PATH_KEYS = {"r": "run", "s": "sample", "t": "turn", "k": "trial"}
HEADER_KEYS = {
    b"x-finmcp-run": "run",
    b"x-finmcp-sample": "sample",
    b"x-finmcp-turn": "turn",
    b"x-finmcp-trial": "trial",
}


class TagError(ValueError):
    """A tag that cannot be used (named in the message)."""


@dataclass(frozen=True, slots=True)
class Tags:
    """Where a message belongs: ``run``, ``sample``, ``turn`` (int), ``trial`` (int, default 0)."""

    run: str | None = None
    sample: str | None = None
    turn: int | None = None
    trial: int = 0

    def merged(self, **values: str | None) -> Tags:
        """These tags with the given textual values applied (None leaves a tag unchanged)."""
        changes: dict[str, Any] = {}
        for name, value in values.items():
            if value is None:
                continue
            if name in ("turn", "trial"):
                changes[name] = _integer(name, value)
            else:
                if not value:
                    raise TagError(f"{name} tag is empty")
                changes[name] = value
        return replace(self, **changes) if changes else self


def _integer(name: str, value: str) -> int:
    try:
        number = int(value.strip())
    except ValueError:
        raise TagError(f"{name} tag {value!r} is not an integer") from None
    if number < 0:
        raise TagError(f"{name} tag {value!r} must be >= 0")
    return number


def split_path(path: str, defaults: Tags) -> tuple[Tags, str]:
    """``(tags, rest)`` for a request path: the leading ``/{letter}/{value}`` pairs become tags.

    ``rest`` is what follows (``/mcp``, ``/`` or ``""``). Values are percent-decoded.
    """
    parts = path.split("/")
    # parts[0] is "" (the path starts with "/")
    values: dict[str, str] = {}
    i = 1
    while i + 1 < len(parts) and parts[i] in PATH_KEYS and parts[i + 1] != "":
        name = PATH_KEYS[parts[i]]
        if name in values:
            raise TagError(f"{name} tag given twice in the path {path!r}")
        values[name] = unquote(parts[i + 1])
        i += 2
    rest = "/" + "/".join(parts[i:]) if i < len(parts) else ""
    return defaults.merged(**values), rest


def header_tags(tags: Tags, headers: Mapping[bytes, bytes] | Iterable[tuple[bytes, bytes]]) -> Tags:
    """``tags`` overridden by any ``X-Finmcp-*`` header among ``headers`` (lower-case names).

    ``headers`` is a mapping or a list of pairs (where a name repeats, the last value counts).
    """
    if not isinstance(headers, Mapping):
        headers = dict(headers)
    values: dict[str, str] = {}
    for name, key in HEADER_KEYS.items():
        value = headers.get(name)
        if value is not None:
            values[key] = value.decode("utf-8", errors="replace")
    return tags.merged(**values) if values else tags
