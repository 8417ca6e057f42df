"""Tool-definition baselines (``finmcp-proxy --tool-baseline FILE``): a tool whose definition drifts is told.

The baseline is a JSON file the user may commit, like a snapshot test. For each upstream (its label
as the proxy logs it: a redacted URL or ``cmd:COMMAND``) it holds each tool's fingerprint
(:func:`recordings.tool_fingerprint.tool_fingerprint`), the fingerprinted part of its definition
(:func:`~recordings.tool_fingerprint.definition_view`) and when the tool was first seen::

    {"format": "finmcp-tool-baseline", "version": 1,
     "upstreams": {"http://127.0.0.1:8765/mcp": {"first_seen": "...Z", "updated": "...Z",
        "tools": {"get_time": {"fingerprint": "sha256:...", "first_seen": "...Z",
                               "definition": {"name": "get_time", "description": "...", ...}}}}}}

It is created on first contact (the first complete ``tools/list`` of an upstream it does not hold)
and written atomically (a temporary file renamed over it, other upstreams' entries kept). It is never
updated silently: a later listing that differs is a finding (:class:`BaselineFinding`) until the user
accepts the current definitions with ``--tool-baseline-update``.

:func:`compare_to_baseline` is the pure comparison (the drift audit calls it too);
:class:`BaselineWatch` is the proxy's side: it sees every ``tools/list`` answer it forwards.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from finmcp.recordings.clock import utc_now_iso
from finmcp.recordings.tool_fingerprint import definition_view, tool_fingerprint

log = logging.getLogger("finmcp.proxy")

BASELINE_FORMAT = "finmcp-tool-baseline"
BASELINE_VERSION = 1
PARTS = {
    "inputSchema": "input schema",
    "outputSchema": "output schema",
    "annotations": "annotations",
    "description": "description",
    "title": "title",
    "execution": "execution",
}
"""Definition fields compared, and how a finding names each."""
NOTE_METHOD = "finmcp/tool_drift"
"""The ``method`` of the trace's note row that lists a session's findings."""


class BaselineError(ValueError):
    """The baseline file cannot be read or written (the message names the file and why)."""


@dataclass(frozen=True, slots=True)
class BaselineFinding:
    """One tool that differs from the baseline: ``change`` is ``changed``, ``added`` or ``removed``.

    ``parts`` names what changed (``input schema``, ``output schema``, ``annotations``,
    ``description``, ``title``, ``execution``; empty unless ``changed``).
    """

    tool: str
    change: str
    parts: tuple[str, ...] = ()
    baseline_fingerprint: str | None = None
    current_fingerprint: str | None = None

    def describe(self) -> str:
        """One line for a person: ``tool 'x' changed: description, input schema``."""
        if self.change == "changed":
            return f"tool {self.tool!r} changed: {', '.join(self.parts) or 'definition'}"
        if self.change == "added":
            return f"tool {self.tool!r} is new (not in the baseline)"
        return f"tool {self.tool!r} is gone (in the baseline, not listed)"

    def as_dict(self) -> dict[str, Any]:
        """JSON form (the trace note, ``/healthz``)."""
        return {
            "tool": self.tool,
            "change": self.change,
            "parts": list(self.parts),
            "baseline": self.baseline_fingerprint,
            "current": self.current_fingerprint,
        }


def compare_to_baseline(
    baseline: Mapping[str, Any], tools: Iterable[Mapping[str, Any]], *, complete: bool = True
) -> list[BaselineFinding]:
    """The findings of ``tools`` (a ``tools/list`` result's tools) against one upstream's baseline.

    ``baseline`` is an upstream's entry (``{"tools": {name: {"fingerprint", "definition"}}}``) or its
    ``tools`` mapping. A tool absent from the baseline is ``added``; with ``complete`` (the listing
    holds every page), a baseline tool not listed is ``removed``. Sorted by tool name.
    """
    inner = baseline.get("tools")
    known: Mapping[str, Any] = (
        inner if isinstance(inner, Mapping) and "fingerprint" not in inner else baseline
    )
    findings: list[BaselineFinding] = []
    seen: set[str] = set()
    for tool in tools:
        name = str(tool.get("name"))
        seen.add(name)
        current = tool_fingerprint(tool)
        entry = known.get(name)
        if entry is None:
            findings.append(BaselineFinding(name, "added", (), None, current))
        elif entry.get("fingerprint") != current:
            parts = _changed_parts(entry.get("definition") or {}, definition_view(tool))
            findings.append(BaselineFinding(name, "changed", parts, entry.get("fingerprint"), current))
    if complete:
        for name in known:
            if name not in seen:
                findings.append(BaselineFinding(name, "removed", (), known[name].get("fingerprint"), None))
    return sorted(findings, key=lambda f: (f.tool, f.change))


def _changed_parts(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[str, ...]:
    from finmcp.recordings.canonical import canonical_json

    return tuple(
        label
        for key, label in PARTS.items()
        if canonical_json(old.get(key)) != canonical_json(new.get(key))  # 1 and 1.0 are equal
    )


def upstream_entry(
    tools: Iterable[Mapping[str, Any]], now: str, previous: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A baseline entry for ``tools``; a tool whose fingerprint ``previous`` already holds keeps its first-seen time."""
    old = (previous or {}).get("tools", {})
    entry_tools = {}
    for tool in tools:
        name, fingerprint = str(tool.get("name")), tool_fingerprint(tool)
        kept = old.get(name)
        first = kept["first_seen"] if kept and kept.get("fingerprint") == fingerprint else now
        entry_tools[name] = {
            "fingerprint": fingerprint,
            "first_seen": first,
            "definition": definition_view(tool),
        }
    return {
        "first_seen": (previous or {}).get("first_seen", now),
        "updated": now,
        "tools": dict(sorted(entry_tools.items())),
    }


def load_baseline(path: str | Path) -> dict[str, Any]:
    """The baseline file's content (an empty baseline when the file does not exist yet)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {"format": BASELINE_FORMAT, "version": BASELINE_VERSION, "upstreams": {}}
    except OSError as exc:
        raise BaselineError(f"tool baseline {path}: cannot read it ({exc.strerror or exc})") from exc
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise BaselineError(f"tool baseline {path}: not JSON ({exc})") from exc
    if not isinstance(data, dict) or data.get("format") != BASELINE_FORMAT:
        raise BaselineError(f"tool baseline {path}: not a {BASELINE_FORMAT} file (its 'format' field)")
    if data.get("version") != BASELINE_VERSION:
        raise BaselineError(
            f"tool baseline {path}: version {data.get('version')!r}; this finmcp reads version {BASELINE_VERSION}"
        )
    upstreams = data.get("upstreams")
    if not isinstance(upstreams, dict) or not all(
        isinstance(e, dict) and isinstance(e.get("tools"), dict) for e in upstreams.values()
    ):
        raise BaselineError(
            f"tool baseline {path}: 'upstreams' must map each upstream to {{'tools': {{...}}}}"
        )
    return data


def write_baseline_entry(path: str | Path, upstream: str, entry: Mapping[str, Any]) -> None:
    """Set one upstream's entry in the file, atomically (re-read first: other upstreams' entries are kept)."""
    path = Path(path)
    data = load_baseline(path)
    data["upstreams"][upstream] = entry
    data["upstreams"] = dict(sorted(data["upstreams"].items()))
    text = json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False) + "\n"
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise BaselineError(f"tool baseline {path}: cannot write it ({exc.strerror or exc})") from exc


SESSIONS_KEPT = 1024
"""Sessions whose unfinished listing and told findings are kept (the oldest is forgotten past it)."""


@dataclass
class _Listing:
    """One session's state: the pages of its ``tools/list`` listing seen so far (a page with
    ``nextCursor`` continues it) and the findings already told to it."""

    tools: list[Mapping[str, Any]] = field(default_factory=list)
    told: set[BaselineFinding] = field(default_factory=set)


class BaselineWatch:
    """The proxy's baseline: checks each forwarded ``tools/list`` page, warns, keeps ``/healthz``'s drift.

    ``update``: accept the current definitions (``--tool-baseline-update``): each complete listing
    replaces the upstream's entry instead of being compared.
    """

    def __init__(self, path: str | Path, upstream: str, update: bool = False) -> None:
        self.path = Path(path)
        self.upstream = upstream
        self.update = update
        data = load_baseline(self.path)  # a bad file is an error at start, never later
        self.entry: dict[str, Any] | None = data["upstreams"].get(upstream)
        self.listings: dict[str, _Listing] = {}
        self.drift: dict[str, BaselineFinding] = {}
        self._warned: set[BaselineFinding] = set()

    def observe(self, session_key: str, result: Mapping[str, Any]) -> list[BaselineFinding]:
        """Check one ``tools/list`` result page of a session; the findings not yet told to this session."""
        tools = result.get("tools")
        if not isinstance(tools, list):
            return []
        tools = [t for t in tools if isinstance(t, Mapping)]
        listing = self.listings.get(session_key)
        if listing is None:
            listing = self.listings[session_key] = _Listing()
            if len(self.listings) > SESSIONS_KEPT:
                del self.listings[next(iter(self.listings))]
        listing.tools.extend(tools)
        complete = not result.get("nextCursor")
        everything = listing.tools
        if complete:
            listing.tools = []  # the next listing of this session starts afresh
        if self.entry is None or self.update:
            if complete:
                self._accept(everything)
            return []
        findings = compare_to_baseline(self.entry, everything, complete=complete)
        if complete:  # a complete listing is the truth about every baseline tool
            self.drift = {f.tool: f for f in findings}
        else:
            self.drift.update({f.tool: f for f in findings})
        new = [f for f in findings if f not in listing.told]
        listing.told.update(new)
        for finding in new:
            if finding not in self._warned:
                self._warned.add(finding)
                log.warning(
                    "tool-definition drift from %s (baseline %s): %s; accept it with --tool-baseline-update",
                    self.upstream,
                    self.path,
                    finding.describe(),
                )
        return new

    def _accept(self, tools: Sequence[Mapping[str, Any]]) -> None:
        entry = upstream_entry(tools, utc_now_iso(), self.entry)
        if self.entry is not None and self.entry.get("tools") == entry["tools"]:
            return  # nothing new: the file is not rewritten
        first = self.entry is None
        try:
            write_baseline_entry(self.path, self.upstream, entry)
        except BaselineError as exc:
            log.error("%s", exc)
            return
        self.entry = entry
        self.drift = {}
        log.info(
            "tool baseline %s: %s %d tools of %s",
            self.path,
            "created with" if first else "updated to",
            len(tools),
            self.upstream,
        )

    def note(self, findings: Sequence[BaselineFinding]) -> dict[str, Any]:
        """The body of the trace's note row for a session's new findings."""
        return {
            "upstream": self.upstream,
            "baseline": str(self.path),
            "findings": [f.as_dict() for f in findings],
        }

    def health(self) -> dict[str, Any]:
        """``/healthz``'s ``tool_drift``: how many tools differ from the baseline now, and which."""
        return {
            "count": len(self.drift),
            "tools": [f.as_dict() for f in sorted(self.drift.values(), key=lambda f: f.tool)],
            "baseline": str(self.path),
        }


def baseline_section(path: str, live: list[dict[str, Any]]) -> dict[str, Any]:
    """The live tools against each upstream of a tool-definition baseline file: what differs."""
    upstreams = load_baseline(path).get("upstreams") or {}
    return {
        "file": path,
        "upstreams": {
            label: [f.as_dict() | {"message": f.describe()} for f in compare_to_baseline(entry, live)]
            for label, entry in sorted(upstreams.items())
        },
    }


def baseline_lines(section: dict[str, Any] | None) -> list[str]:
    """The text report's lines of a baseline section (none without ``--tool-baseline``)."""
    if section is None:
        return []
    if not section["upstreams"]:
        return [f"baseline {section['file']}: no upstream recorded yet"]
    lines = []
    for label, found in section["upstreams"].items():
        lines.append(f"baseline {section['file']} ({label}): {len(found) or 'no'} tools differ")
        lines += [f"  {f['message']}" for f in found]
    return lines
