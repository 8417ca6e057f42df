"""``finmcp-proxy audit``: re-issue a run's logged calls against a server and compare the results.

Samples are audited one after another; within a sample, turns and groups in order, the calls of one
group concurrently (as they were made). Each call is ``identical`` (same ``content``,
``structuredContent`` and ``isError``; or the same JSON-RPC error code and message), ``different``
(with a JSON diff of the ``logged`` and the ``reissued`` answer), ``failed`` (the re-issued call
raised a transport error) or ``skipped`` (the
logged call itself never got an answer: transport error, cancelled, pending). Result ``_meta`` is not
compared (it carries provenance, which differs between a live server and a recording). Arguments are
sent as logged, so redacted secrets are sent as ``[REDACTED]``.

What the calls are re-issued against (``--against``): a Streamable HTTP URL, a recordings file (a
``finmcp-server --transport stdio --recordings FILE --miss strict --replay sequence`` is launched
on it, so repeated identical calls get the recorded answers in order), or with ``--against-cmd
"cmd args"`` any stdio MCP server the audit launches. ``--era`` picks the client's protocol era
(``auto`` by default: stateless when the server offers it; a stdio server is spoken to in the
handshake era).
"""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from finmcp.proxy.views import arrange
from finmcp.recordings.plumbing.protocol import LATEST_STATELESS_VERSION
from finmcp.recordings.plumbing.terminal import visible, visible_json
from finmcp.recordings.trace_store import describe, open_trace_store

SKIPPED_STATUSES = frozenset({"transport_error", "cancelled", "pending"})


def _clean(value: Any) -> Any:
    """JSON value with ``None`` members dropped (absent and null compare equal)."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def comparable_result(result: Any) -> dict[str, Any]:
    """``{content, structuredContent, isError}`` of a logged or re-issued result, ``_meta`` dropped."""
    result = result if isinstance(result, dict) else {}
    content = result.get("content")
    return {
        "content": _clean(
            [{k: v for k, v in b.items() if k != "_meta"} if isinstance(b, dict) else b for b in content]
        )
        if isinstance(content, list)
        else _clean(content),
        "structuredContent": _clean(result.get("structuredContent")),
        "isError": bool(result.get("isError", False)),
    }


def json_diff(logged: Any, reissued: Any, path: str = "") -> list[dict[str, Any]]:
    """Differences between two JSON values as ``[{path, logged, reissued}]`` (paths like ``content[0].text``)."""
    if isinstance(logged, dict) and isinstance(reissued, dict):
        out = []
        for key in list(logged) + [k for k in reissued if k not in logged]:
            sub = f"{path}.{key}" if path else str(key)
            if key not in reissued:
                out.append({"path": sub, "logged": logged[key], "reissued": "<missing>"})
            elif key not in logged:
                out.append({"path": sub, "logged": "<missing>", "reissued": reissued[key]})
            else:
                out += json_diff(logged[key], reissued[key], sub)
        return out
    if isinstance(logged, list) and isinstance(reissued, list):
        out = []
        for i in range(max(len(logged), len(reissued))):
            sub = f"{path}[{i}]"
            if i >= len(logged):
                out.append({"path": sub, "logged": "<missing>", "reissued": reissued[i]})
            elif i >= len(reissued):
                out.append({"path": sub, "logged": logged[i], "reissued": "<missing>"})
            else:
                out += json_diff(logged[i], reissued[i], sub)
        return out
    if logged != reissued or type(logged) is not type(reissued):
        return [{"path": path or "$", "logged": logged, "reissued": reissued}]
    return []


async def _reissue_and_compare(client: Client, call: dict[str, Any], timeout: float) -> dict[str, Any]:
    outcome: dict[str, Any] = {
        "call_id": call["id"],
        "sample_id": call["sample_id"],
        "trial": call["trial"],
        "turn": call["turn"],
        "group": call["call_group"],
        "seq": call["seq"],
        "tool": call["tool"],
    }
    if call["status"] in SKIPPED_STATUSES:
        return outcome | {"verdict": "skipped", "reason": f"logged status {call['status']}"}
    arguments = call["arguments"] if isinstance(call["arguments"], dict) else {}
    try:
        with anyio.fail_after(timeout):
            result = await client.call_tool(call["tool"], arguments)
    except MCPError as exc:
        if call["status"] != "rpc_error":
            return outcome | {
                "verdict": "different",
                "diff": [{"path": "$", "logged": call["status"], "reissued": f"rpc error {exc.code}: {exc}"}],
            }
        logged = call["rpc_error"] or {}
        reissued = {"code": exc.error.code, "message": exc.error.message}
        diff = json_diff({"code": logged.get("code"), "message": logged.get("message")}, reissued)
        return outcome | ({"verdict": "different", "diff": diff} if diff else {"verdict": "identical"})
    except Exception as exc:  # transport failures, timeouts, client-side validation
        return outcome | {"verdict": "failed", "reason": f"{type(exc).__name__}: {exc}"}
    if call["status"] == "rpc_error":
        return outcome | {
            "verdict": "different",
            "diff": [{"path": "$", "logged": call["rpc_error"], "reissued": "a result"}],
        }
    reissued = comparable_result(result.model_dump(mode="json", by_alias=True, exclude_none=True))
    diff = json_diff(comparable_result(call["result"]), reissued)
    return outcome | ({"verdict": "different", "diff": diff} if diff else {"verdict": "identical"})


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
    """A stdio MCP server launched from a command line (``"cmd args"``, split like a shell)."""
    argv = shlex.split(command)
    if not argv:
        raise ValueError("--against-cmd is empty")
    return StdioServerParameters(command=argv[0], args=argv[1:])


def is_recordings_file(target: str) -> bool:
    """True when ``--against`` names an existing file rather than a URL."""
    return "://" not in target and Path(target).is_file()


ERAS = ("auto", "handshake", "stateless")
"""Values of ``--era``: let the SDK client discover the era, or speak one era."""


def client_mode(era: str, target: str | StdioServerParameters) -> str:
    """The SDK client's ``mode`` for ``era`` (the SDK calls the handshake era ``legacy``)."""
    if era == "handshake" or (era == "auto" and isinstance(target, StdioServerParameters)):
        return "legacy"  # a stdio server speaks the handshake era
    if era == "stateless":
        return LATEST_STATELESS_VERSION
    return "auto"


async def audit_calls(
    calls: list[dict[str, Any]],
    url: str | StdioServerParameters,
    era: str = "auto",
    timeout: float = 60.0,
) -> list[dict[str, Any]]:
    """Re-issue the given call rows against ``url`` (or a stdio server) and compare each answer with the
    logged one; one outcome dict per call, in trace order."""
    outcomes: list[dict[str, Any]] = []
    async with Client(url, mode=client_mode(era, url)) as client:
        for trace in arrange(calls):
            for _turn, groups in trace.ordered_turns():
                for group in groups:
                    results: list[dict[str, Any] | None] = [None] * len(group)

                    async def one(i: int, call: dict[str, Any], results: list[Any] = results) -> None:
                        results[i] = await _reissue_and_compare(client, call, timeout)

                    async with anyio.create_task_group() as tg:
                        for i, call in enumerate(group):
                            tg.start_soon(one, i, call)
                    outcomes += [r for r in results if r is not None]
    return outcomes


@dataclass(frozen=True)
class AuditOptions:
    """``finmcp-proxy audit``: which logged calls, what to re-issue them against, and how to report."""

    db: str
    run: str
    sample: str | None = None
    against: str | None = None
    """A Streamable HTTP URL or a recordings file (``against_cmd`` otherwise)."""
    against_cmd: str | None = None
    """A stdio MCP server to launch: ``"cmd args..."``."""
    recordings_inventory: str | None = None
    """With a recordings file: the inventory its recordings are under."""
    era: str = "auto"
    """The client's protocol era: ``auto``, ``handshake`` or ``stateless``."""
    json: bool = False
    """Print the report as JSON."""
    timeout: float = 60.0


def cmd_audit(args: AuditOptions) -> int:
    """Print the per-call verdicts; exit 1 on any difference or failure."""
    with open_trace_store(args.db) as store:
        calls = store.calls(args.run, args.sample)
    if not calls:
        print(f"finmcp-proxy audit: no calls for run {args.run!r} in {describe(args.db)}", file=sys.stderr)
        return 2
    against_cmd = args.against_cmd
    target: str | StdioServerParameters
    try:
        if against_cmd:
            target, shown = command_server(against_cmd), against_cmd
        elif args.against is None:
            raise ValueError("give --against URL|FILE or --against-cmd COMMAND")
        elif is_recordings_file(args.against):
            target, shown = recording_server(args.against, args.recordings_inventory), args.against
        elif "://" in args.against:
            target, shown = args.against, args.against
        else:
            raise ValueError(f"--against {args.against}: neither a URL nor an existing recordings file")
    except ValueError as exc:
        print(f"finmcp-proxy audit: {exc}", file=sys.stderr)
        return 2
    try:
        outcomes = anyio.run(audit_calls, calls, target, args.era, args.timeout)
    except Exception as exc:
        print(f"finmcp-proxy audit: could not re-issue the calls against {shown}: {exc!r}", file=sys.stderr)
        return 2
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome["verdict"]] = counts.get(outcome["verdict"], 0) + 1
    if args.json:
        report = {"run_id": args.run, "counts": counts, "calls": outcomes}
        print(visible_json(json.dumps(report, ensure_ascii=False, indent=2)))
    else:
        for o in outcomes:
            where = visible(f"{o['sample_id']} t{o['turn']} g{o['group']} #{o['seq']}")
            reason = f"  ({visible(o['reason'])})" if "reason" in o else ""
            print(f"{o['verdict']:9} {where} {visible(o['tool'])}{reason}")
            for d in o.get("diff", []):
                logged = visible_json(json.dumps(d["logged"], ensure_ascii=False)[:200])
                reissued = visible_json(json.dumps(d["reissued"], ensure_ascii=False)[:200])
                print(f"            {visible(d['path'])}: logged {logged} | reissued {reissued}")
        summary = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
        print(f"audited {len(outcomes)} calls of run {visible(args.run)}: {summary}")
    return 1 if counts.get("different") or counts.get("failed") else 0
