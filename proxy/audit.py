"""``finmcp-proxy audit``: the drift audit. Re-issue recorded calls against a live server, compare the
tool definitions and the answers, and class every finding by what it can do to a benchmark.

The recorded side is a run in a trace store (``--db --run [--sample]``: its logged calls, and the
``tools/list`` answers logged in its sessions as the recorded definitions) or a recordings file
(``--recording FILE``: its recorded responses, and its recorded declaration when it has one). The live
side is a Streamable HTTP URL (``--against URL``; ``--upstream-ca``, ``--upstream-header`` as the
proxy's), a stdio command launched with the caller's environment (``--against-cmd``), or a recordings
file served by a stdio finmcp-server (``--against FILE``).

Definitions: tools added/removed, input schema (new required parameter, type change, enum
narrowed/widened, property removed), output schema, annotations, description/title
(:mod:`finmcp.proxy.drift.definitions`). Answers: only calls of tools annotated ``readOnlyHint`` are
re-issued unless ``--include-acting``; samples one after another, within a sample turns and groups in
order, the calls of one group concurrently (as they were made). Both sides are compared as JSON values
(numbers by value, lists by element, objects by key, a text block holding JSON parsed) under the
user's normalisers (``--ignore``, ``--mask``, ``--volatile``). Each call is ``identical``,
``different``, ``failed`` (the re-issued call raised a transport error) or ``skipped`` (never
answered when logged, may act, or its tool is gone). Result ``_meta`` is not compared. Arguments are
sent as logged, so redacted secrets are sent as ``[REDACTED]``. ``--era`` picks the client's protocol
era (``auto`` by default: stateless when the server offers it; a stdio server is spoken to in the
handshake era). Exit: 0 no finding at or above ``--fail-on``, 1 findings, 2 usage error.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from finmcp.proxy.baseline import baseline_lines, baseline_section
from finmcp.proxy.drift.answers import comparable_result, compare_answer
from finmcp.proxy.drift.definitions import by_name, diff_definitions, may_act
from finmcp.proxy.drift.html import drift_page
from finmcp.proxy.drift.normalise import Normaliser
from finmcp.proxy.drift.report import build_report, text_lines
from finmcp.proxy.drift.severity import DEFAULT_FAIL_ON, Finding, exit_code
from finmcp.proxy.drift.sources import Recorded, from_recordings, from_trace
from finmcp.proxy.drift.values import diff
from finmcp.proxy.views import arrange
from finmcp.recordings.plumbing.protocol import LATEST_STATELESS_VERSION
from finmcp.recordings.plumbing.terminal import visible_json

__all__ = ["comparable_result", "json_diff", "AuditOptions", "cmd_audit", "audit_calls"]

SKIPPED_STATUSES = frozenset({"transport_error", "cancelled", "pending"})


def json_diff(logged: Any, reissued: Any, path: str = "") -> list[dict[str, Any]]:
    """Differences between two JSON values as ``[{path, change, logged, reissued}]`` (see
    :func:`finmcp.proxy.drift.values.diff`: numbers by value, lists by element)."""
    return diff(logged, reissued, path)


def recording_server(path: str | Path, inventory: str | None = None) -> StdioServerParameters:
    """A stdio finmcp-server serving the recordings file strictly, answers in recorded order.

    A file that holds a recorded server (another MCP server recorded through the proxy) is served as
    that server (``finmcp-server --recordings FILE``, docs/server.md): ``inventory`` names which one
    when the file declares several (``--server NAME``). For finmcp's own inventories ``inventory`` is
    the inventory the recordings are under (``--recordings-inventory``), as before.
    """
    from finmcp.recordings.store import RecordingStore
    from finmcp.tool_specs.inventory import builtin_names

    argv = ["-m", "finmcp.server", "--transport", "stdio", "--recordings", str(path), "--miss", "strict"]
    argv += ["--replay", "sequence", "--latency", "none"]
    if inventory:
        with RecordingStore.open(path) as store:
            declared = store.declared_servers()
        recorded = inventory in declared and inventory not in builtin_names()
        argv += ["--server" if recorded else "--recordings-inventory", inventory]
    return StdioServerParameters(command=sys.executable, args=argv)


def command_server(command: str) -> StdioServerParameters:
    """A stdio MCP server launched from a command line (``"cmd args"``, split like a shell), with the
    caller's whole environment (the SDK's default passes only a few variables such as PATH and HOME)."""
    argv = shlex.split(command)
    if not argv:
        raise ValueError("--against-cmd is empty")
    return StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))


def is_recordings_file(target: str) -> bool:
    """True when ``--against`` names an existing file rather than a URL."""
    return "://" not in target and Path(target).is_file()


ERAS = ("auto", "handshake", "stateless")
"""Values of ``--era``: let the SDK client discover the era, or speak one era."""


def client_mode(era: str, target: Any) -> str:
    """The SDK client's ``mode`` for ``era`` (the SDK calls the handshake era ``legacy``)."""
    if era == "handshake" or (era == "auto" and isinstance(target, StdioServerParameters)):
        return "legacy"  # a stdio server speaks the handshake era
    if era == "stateless":
        return LATEST_STATELESS_VERSION
    return "auto"


@dataclass(frozen=True)
class HttpOptions:
    """How to reach an HTTP target: extra headers (already expanded) and a CA file."""

    headers: tuple[tuple[bytes, bytes], ...] = ()
    ca_file: str | None = None


@asynccontextmanager
async def _connect(target: str | StdioServerParameters, era: str, http: HttpOptions) -> AsyncIterator[Client]:
    """An open SDK client on ``target`` (for HTTPS or extra headers, over an HTTP client of its own,
    closed with it)."""
    if isinstance(target, str) and (http.headers or http.ca_file or target.startswith("https://")):
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        from finmcp.proxy.upstream_tls import client_context

        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in http.headers}
        async with httpx2.AsyncClient(headers=headers, verify=client_context(http.ca_file)) as web:
            transport = streamable_http_client(target, http_client=web)
            async with Client(transport, mode=client_mode(era, target)) as client:
                yield client
        return
    async with Client(target, mode=client_mode(era, target)) as client:
        yield client


async def _list_tools(client: Client) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    for _page in range(1000):
        page = await client.list_tools(cursor=cursor)
        tools += [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in page.tools]
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _where(call: dict[str, Any]) -> dict[str, Any]:
    return {
        "call_id": call["id"],
        "session": call.get("session_key"),
        "sample_id": call["sample_id"],
        "trial": call.get("trial"),
        "turn": call["turn"],
        "group": call["call_group"],
        "seq": call["seq"],
    }


async def _reissue(client: Client, call: dict[str, Any], timeout: float) -> dict[str, Any]:
    """The live answer: ``{"result": ...}``, ``{"rpc_error": ...}`` or ``{"failed": reason}``."""
    arguments = call["arguments"] if isinstance(call["arguments"], dict) else {}
    try:
        with anyio.fail_after(timeout):
            result = await client.call_tool(call["tool"], arguments)
    except MCPError as exc:
        return {"rpc_error": {"code": exc.error.code, "message": exc.error.message}}
    except Exception as exc:  # transport failures, timeouts, client-side validation
        return {"failed": f"{type(exc).__name__}: {exc}"}
    return {"result": result.model_dump(mode="json", by_alias=True, exclude_none=True)}


@dataclass
class Plan:
    """What to re-issue: the normalisers, and which tools are skipped with the reason."""

    normaliser: Normaliser = field(default_factory=Normaliser)
    skip: dict[str, str] = field(default_factory=dict)
    timeout: float = 60.0


async def _one(client: Client, call: dict[str, Any], plan: Plan) -> dict[str, Any]:
    where = _where(call)
    outcome: dict[str, Any] = where | {"tool": call["tool"]}
    if call["status"] in SKIPPED_STATUSES:
        return outcome | {"verdict": "skipped", "reason": f"logged status {call['status']}"}
    if call["tool"] in plan.skip:
        return outcome | {"verdict": "skipped", "reason": plan.skip[call["tool"]]}
    live = await _reissue(client, call, plan.timeout)
    verdict, changes, findings = compare_answer(call, live, plan.normaliser, where)
    outcome["verdict"] = verdict
    if "failed" in live:
        outcome["reason"] = live["failed"]
    if changes:
        outcome["diff"] = changes
    outcome["findings"] = [f.as_json() for f in findings]
    outcome["_findings"] = findings
    return outcome


async def _reissue_all(client: Client, calls: list[dict[str, Any]], plan: Plan) -> list[dict[str, Any]]:
    outcomes: list[dict[str, Any]] = []
    for trace in arrange(calls):
        for _turn, groups in trace.ordered_turns():
            for group in groups:
                results: list[dict[str, Any] | None] = [None] * len(group)

                async def one(i: int, call: dict[str, Any], results: list[Any] = results) -> None:
                    results[i] = await _one(client, call, plan)

                async with anyio.create_task_group() as tg:
                    for i, call in enumerate(group):
                        tg.start_soon(one, i, call)
                outcomes += [r for r in results if r is not None]
    return outcomes


async def audit_calls(
    calls: list[dict[str, Any]],
    url: str | StdioServerParameters,
    era: str = "auto",
    timeout: float = 60.0,
) -> list[dict[str, Any]]:
    """Re-issue the given call rows (every one, read-only or not) against ``url`` (or a stdio server)
    and compare each answer with the logged one; one outcome dict per call, in trace order."""
    async with _connect(url, era, HttpOptions()) as client:
        outcomes = await _reissue_all(client, calls, Plan(timeout=timeout))
    for o in outcomes:
        o.pop("_findings", None)
    return outcomes


def skipped_tools(
    calls: list[dict[str, Any]],
    recorded: list[dict[str, Any]] | None,
    live: list[dict[str, Any]],
    include_acting: bool,
) -> dict[str, str]:
    """Tools whose calls are not re-issued, with the reason: gone from the live server, or may act
    (not annotated ``readOnlyHint`` in the recorded or in the live definition; declared on one side
    only, with no recorded definitions to tell) without ``include_acting``. A tool neither side
    declares is re-issued: the recorded answer was a server's refusal of an unknown tool, and so
    should the live one be."""
    old, new = by_name(recorded or []), by_name(live)
    out: dict[str, str] = {}
    for tool in sorted({str(c["tool"]) for c in calls}):
        if tool not in new and tool in old:
            out[tool] = "the live server no longer lists this tool"
            continue
        definitions = [d for d in (old.get(tool), new.get(tool)) if d is not None]
        undeclared = not definitions and (recorded is not None or bool(new))
        acts = not undeclared and (
            not definitions or any(may_act(d.get("annotations") or {}) for d in definitions)
        )
        if not include_acting and acts:
            out[tool] = "may act (not annotated readOnlyHint): not re-issued without --include-acting"
    return out


@dataclass(frozen=True)
class AuditOptions:
    """``finmcp-proxy audit``: what is audited, against what, under which normalisers, reported how."""

    db: str | None = None
    run: str | None = None
    sample: str | None = None
    recording: str | None = None
    """A recordings file as the recorded side (instead of ``db``/``run``)."""
    against: str | None = None
    """A Streamable HTTP URL or a recordings file (``against_cmd`` otherwise)."""
    against_cmd: str | None = None
    """A stdio MCP server to launch: ``"cmd args..."`` (with the caller's environment)."""
    recordings_inventory: str | None = None
    """With a recordings file: the inventory its recordings are under."""
    upstream_header: Sequence[tuple[bytes, bytes]] = ()
    upstream_ca: str | None = None
    era: str = "auto"
    """The client's protocol era: ``auto``, ``handshake`` or ``stateless``."""
    json: str | None = None
    """Write the JSON report to this file (``-``: stdout instead of the text report)."""
    html: str | None = None
    """Write the report as a self-contained HTML page to this file."""
    ignore: Sequence[str] = ()
    mask: Sequence[str] = ()
    volatile: bool = False
    include_acting: bool = False
    tool_baseline: str | None = None
    """List the live tools that differ from this tool-definition baseline file (docs/proxy.md)."""
    fail_on: str = DEFAULT_FAIL_ON
    timeout: float = 60.0


def _target(args: AuditOptions) -> tuple[str | StdioServerParameters, str]:
    if args.against_cmd:
        return command_server(args.against_cmd), args.against_cmd
    if args.against is None:
        raise ValueError("give --against URL|FILE or --against-cmd COMMAND")
    if is_recordings_file(args.against):
        return recording_server(args.against, args.recordings_inventory), args.against
    if "://" in args.against:
        return args.against, args.against
    raise ValueError(f"--against {args.against}: neither a URL nor an existing recordings file")


def _recorded(args: AuditOptions) -> Recorded:
    if args.recording:
        if args.db or args.run:
            raise ValueError("give either --recording FILE or --db/--run, not both")
        if not Path(args.recording).is_file():
            raise ValueError(f"--recording {args.recording}: no such file")
        return from_recordings(args.recording, args.recordings_inventory)
    if not (args.db and args.run):
        raise ValueError("give --db TRACE --run RUN, or --recording FILE")
    return from_trace(args.db, args.run, args.sample)


async def _audit(
    recorded: Recorded, target: str | StdioServerParameters, args: AuditOptions, normaliser: Normaliser
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, str]]:
    http = HttpOptions(tuple(args.upstream_header), args.upstream_ca)
    async with _connect(target, args.era, http) as client:
        live = await _list_tools(client)
        plan = Plan(
            normaliser, skipped_tools(recorded.calls, recorded.tools, live, args.include_acting), args.timeout
        )
        return live, await _reissue_all(client, recorded.calls, plan), plan.skip


def cmd_audit(args: AuditOptions) -> int:
    """Print the drift report; exit 0 (nothing at/above ``--fail-on``), 1 (findings) or 2 (usage)."""
    try:
        normaliser = Normaliser.build(args.ignore, args.mask, args.volatile)
        recorded = _recorded(args)
        target, shown = _target(args)
    except ValueError as exc:
        print(f"finmcp-proxy audit: {exc}", file=sys.stderr)
        return 2
    if not recorded.calls and recorded.tools is None:
        print(f"finmcp-proxy audit: no calls for {recorded.label}", file=sys.stderr)
        return 2
    try:
        live, outcomes, skipped = anyio.run(_audit, recorded, target, args, normaliser)
    except Exception as exc:
        print(f"finmcp-proxy audit: could not re-issue the calls against {shown}: {exc!r}", file=sys.stderr)
        return 2
    definitions = diff_definitions(recorded.tools, live) if recorded.tools is not None else None
    report = build_report(
        source=recorded.label,
        target=shown,
        run_id=args.run,
        outcomes=outcomes,
        definition_findings=definitions,
        recorded_tools=len(recorded.tools) if recorded.tools is not None else None,
        live_tools=len(live),
        normalisers=list(normaliser.shown),
        fail_on=args.fail_on,
        notes=recorded.notes,
        skipped_tools=skipped,
    )
    if args.tool_baseline:
        report["baseline"] = baseline_section(args.tool_baseline, live)
    text = json.dumps(report, ensure_ascii=False, indent=2, default=str)
    if args.json and args.json != "-":
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    if args.html:
        Path(args.html).write_text(drift_page(report), encoding="utf-8")
    if args.json == "-":
        print(visible_json(text))
    else:
        for line in text_lines(report) + baseline_lines(report.get("baseline")):
            print(line)
    findings = [Finding(f["severity"], f["kind"], f["tool"]) for f in report["findings"]]
    return exit_code(findings, args.fail_on)
