"""``finmcp-proxy replay``: re-issue a run's logged calls against a server and compare the results.

Samples are replayed one after another; within a sample, turns and groups in order, the calls of one
group concurrently (as they were made). Each call is ``identical`` (same ``content``,
``structuredContent`` and ``isError``; or the same JSON-RPC error code and message), ``different``
(with a JSON diff), ``failed`` (the replayed call raised a transport error) or ``skipped`` (the
logged call itself never got an answer: transport error, cancelled, pending). Result ``_meta`` is not
compared (it carries provenance, which differs between a live server and a replay). Arguments are
sent as logged, so redacted secrets are sent as ``[REDACTED]``.

What the calls are replayed against (``--against``): a Streamable HTTP URL, a recordings file (a
``finmcp-server --transport stdio --recordings FILE --miss strict --replay sequence`` is launched
on it, so repeated identical calls get the recorded answers in order), or with ``--against-cmd
"cmd args"`` any stdio MCP server the replay launches.
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

from proxy.views import arrange
from recordings.trace_source import describe, open_trace_reader

SKIPPED_STATUSES = frozenset({"transport_error", "cancelled", "pending"})


def _clean(value: Any) -> Any:
    """JSON value with ``None`` members dropped (absent and null compare equal)."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def comparable_result(result: Any) -> dict[str, Any]:
    """``{content, structuredContent, isError}`` of a logged or replayed result, ``_meta`` dropped."""
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


def json_diff(logged: Any, replayed: Any, path: str = "") -> list[dict[str, Any]]:
    """Differences between two JSON values as ``[{path, logged, replayed}]`` (paths like ``content[0].text``)."""
    if isinstance(logged, dict) and isinstance(replayed, dict):
        out = []
        for key in list(logged) + [k for k in replayed if k not in logged]:
            sub = f"{path}.{key}" if path else str(key)
            if key not in replayed:
                out.append({"path": sub, "logged": logged[key], "replayed": "<missing>"})
            elif key not in logged:
                out.append({"path": sub, "logged": "<missing>", "replayed": replayed[key]})
            else:
                out += json_diff(logged[key], replayed[key], sub)
        return out
    if isinstance(logged, list) and isinstance(replayed, list):
        out = []
        for i in range(max(len(logged), len(replayed))):
            sub = f"{path}[{i}]"
            if i >= len(logged):
                out.append({"path": sub, "logged": "<missing>", "replayed": replayed[i]})
            elif i >= len(replayed):
                out.append({"path": sub, "logged": logged[i], "replayed": "<missing>"})
            else:
                out += json_diff(logged[i], replayed[i], sub)
        return out
    if logged != replayed or type(logged) is not type(replayed):
        return [{"path": path or "$", "logged": logged, "replayed": replayed}]
    return []


async def _replay_call(client: Client, call: dict[str, Any], timeout: float) -> dict[str, Any]:
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
                "diff": [{"path": "$", "logged": call["status"], "replayed": f"rpc error {exc.code}: {exc}"}],
            }
        logged = call["rpc_error"] or {}
        replayed = {"code": exc.error.code, "message": exc.error.message}
        diff = json_diff({"code": logged.get("code"), "message": logged.get("message")}, replayed)
        return outcome | ({"verdict": "different", "diff": diff} if diff else {"verdict": "identical"})
    except Exception as exc:  # transport failures, timeouts, client-side validation
        return outcome | {"verdict": "failed", "reason": f"{type(exc).__name__}: {exc}"}
    if call["status"] == "rpc_error":
        return outcome | {
            "verdict": "different",
            "diff": [{"path": "$", "logged": call["rpc_error"], "replayed": "a result"}],
        }
    replayed = comparable_result(result.model_dump(mode="json", by_alias=True, exclude_none=True))
    diff = json_diff(comparable_result(call["result"]), replayed)
    return outcome | ({"verdict": "different", "diff": diff} if diff else {"verdict": "identical"})


def recording_server(path: str | Path, inventory: str | None = None) -> StdioServerParameters:
    """A stdio finmcp-server serving the recordings file strictly, answers in recorded order."""
    argv = ["-m", "server", "--transport", "stdio", "--recordings", str(path), "--miss", "strict"]
    argv += ["--replay", "sequence", "--latency", "none"]
    if inventory:
        argv += ["--recordings-inventory", inventory]
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


async def replay_run(
    calls: list[dict[str, Any]],
    url: str | StdioServerParameters,
    mode: str = "auto",
    timeout: float = 60.0,
) -> list[dict[str, Any]]:
    """Replay the given call rows against ``url`` (or a stdio server); one outcome dict per call, in trace order."""
    outcomes: list[dict[str, Any]] = []
    if isinstance(url, StdioServerParameters) and mode == "auto":
        mode = "legacy"  # a stdio server speaks the handshake era
    async with Client(url, mode=mode) as client:
        for trace in arrange(calls):
            for _turn, groups in trace.ordered_turns():
                for group in groups:
                    results: list[dict[str, Any] | None] = [None] * len(group)

                    async def one(i: int, call: dict[str, Any], results: list[Any] = results) -> None:
                        results[i] = await _replay_call(client, call, timeout)

                    async with anyio.create_task_group() as tg:
                        for i, call in enumerate(group):
                            tg.start_soon(one, i, call)
                    outcomes += [r for r in results if r is not None]
    return outcomes


@dataclass(frozen=True)
class ReplayOptions:
    """``finmcp-proxy replay``: which logged calls, what to re-issue them against, and how to report."""

    db: str
    run: str
    sample: str | None = None
    against: str | None = None
    """A Streamable HTTP URL or a recordings file (``against_cmd`` otherwise)."""
    against_cmd: str | None = None
    """A stdio MCP server to launch: ``"cmd args..."``."""
    recordings_inventory: str | None = None
    """With a recordings file: the inventory its recordings are under."""
    mode: str = "auto"
    """The client's protocol era: ``auto`` or ``legacy``."""
    json: bool = False
    """Print the report as JSON."""
    timeout: float = 60.0


def cmd_replay(args: ReplayOptions) -> int:
    """Print the per-call verdicts; exit 1 on any difference or failure."""
    with open_trace_reader(args.db) as store:
        calls = store.calls(args.run, args.sample)
    if not calls:
        print(f"finmcp-proxy replay: no calls for run {args.run!r} in {describe(args.db)}", file=sys.stderr)
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
        print(f"finmcp-proxy replay: {exc}", file=sys.stderr)
        return 2
    try:
        outcomes = anyio.run(replay_run, calls, target, args.mode, args.timeout)
    except Exception as exc:
        print(f"finmcp-proxy replay: could not replay against {shown}: {exc!r}", file=sys.stderr)
        return 2
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome["verdict"]] = counts.get(outcome["verdict"], 0) + 1
    if args.json:
        print(
            json.dumps(
                {"run_id": args.run, "counts": counts, "calls": outcomes}, ensure_ascii=False, indent=2
            )
        )
    else:
        for o in outcomes:
            where = f"{o['sample_id']} t{o['turn']} g{o['group']} #{o['seq']}"
            print(f"{o['verdict']:9} {where} {o['tool']}" + (f"  ({o['reason']})" if "reason" in o else ""))
            for d in o.get("diff", []):
                logged = json.dumps(d["logged"], ensure_ascii=False)[:200]
                replayed = json.dumps(d["replayed"], ensure_ascii=False)[:200]
                print(f"            {d['path']}: logged {logged} | replayed {replayed}")
        summary = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
        print(f"replayed {len(outcomes)} calls of run {args.run}: {summary}")
    return 1 if counts.get("different") or counts.get("failed") else 0
