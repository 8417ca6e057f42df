"""Group inference under load: SDK clients' concurrent and sequential calls, and how the proxy grouped them.

``python -m tests.support.group_load --era legacy|2026-07-28 --out result.json`` starts a
``finmcp-server`` (recorded answers, no latency) and a ``finmcp-proxy`` in front of it, then runs
``--clients`` SDK clients at once. Each client, for each of ``--steps`` steps (one turn each, tagged
with ``_meta`` ``io.finmcp/turn``), sends ``--parallel`` calls concurrently (an anyio task group), then
``--sequential`` calls awaited one by one. It writes the counts of :func:`score` as JSON. Run it under
``taskset -c 0`` to put the server, the proxy and the clients on one core (children inherit the
affinity): the load under which a client's next concurrent call often leaves after the proxy has
delivered the first answer (tests/proxy/test_grouping_load.py).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client

from finmcp.proxy.testing import ProxyProcess
from finmcp.server.testing import ServerProcess
from tests.support.loadgen import TOOL, record_diagnoses
from tests.support.sdk import request_meta
from tests.support.traces import wait_calls

PARALLEL_CODES = [f"{i:06d}" for i in range(1, 5)]
"""Fund codes of the concurrent calls of a step (one each)."""
SEQUENTIAL_CODES = [f"{i:06d}" for i in range(11, 15)]
"""Fund codes of the sequential calls of a step (one each)."""
HANG_GUARD_S = 900.0  # not a speed limit: only ends a run that hangs


def score(calls: list[dict[str, Any]]) -> dict[str, Any]:
    """Per step (client and turn): is the concurrent group whole, and is every sequential call alone?

    A call's kind is in its fund code (:data:`PARALLEL_CODES` or :data:`SEQUENTIAL_CODES`).
    """
    steps: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for call in calls:
        steps[(call["sample_id"], call["turn"])].append(call)
    whole = merged = 0
    sources: dict[str, int] = defaultdict(int)
    split_examples: list[list[tuple[int, str]]] = []
    for rows in steps.values():
        rows.sort(key=lambda c: c["seq"])
        kinds = [_kind(c["arguments"]) for c in rows]
        parallel = [c for c, k in zip(rows, kinds, strict=True) if k == "p"]
        sequential = [c for c, k in zip(rows, kinds, strict=True) if k == "s"]
        for c in rows:
            sources[c["group_source"]] += 1
        if len({c["call_group"] for c in parallel}) == 1:
            whole += 1
        elif len(split_examples) < 5:
            split_examples.append([(c["call_group"], c["group_source"]) for c in rows])
        groups = [c["call_group"] for c in sequential]
        if len(set(groups)) != len(groups) or set(groups) & {c["call_group"] for c in parallel}:
            merged += 1
    return {
        "steps": len(steps),
        "parallel_whole": whole,
        "sequential_merged": merged,
        "sources": dict(sources),
        "split_examples": split_examples,
    }


async def _call(client: Client, code: str, meta: Any) -> None:
    result = await client.call_tool(TOOL, {"fundNameOrCode": code}, meta=meta)
    assert not result.is_error, result


async def _drive(url: str, era: str, sample: str, steps: int, parallel: int, sequential: int) -> None:
    async with Client(url, mode=era) as client:
        for step in range(steps):
            meta = request_meta({"io.finmcp/turn": step})

            async with anyio.create_task_group() as tg:
                for code in PARALLEL_CODES[:parallel]:
                    tg.start_soon(_call, client, code, meta)
            for code in SEQUENTIAL_CODES[:sequential]:
                await _call(client, code, meta)


def run(
    era: str, clients: int, steps: int, parallel: int, sequential: int, proxy_args: list[str]
) -> dict[str, Any]:
    """Start server and proxy, run the clients, and score the trace (see :func:`score`)."""
    with tempfile.TemporaryDirectory() as tmp:
        codes = PARALLEL_CODES + SEQUENTIAL_CODES
        recordings = record_diagnoses(Path(tmp) / "rec.sqlite", codes, "imported:group-load")
        db = Path(tmp) / "runs.sqlite"
        server_args = ["--miss", "strict", "--recordings", str(recordings), "--latency", "none"]
        with (
            ServerProcess(server_args) as server,
            ProxyProcess(["--upstream", server.url, "--db", str(db), *proxy_args]) as proxy,
        ):

            async def main() -> None:
                with anyio.fail_after(HANG_GUARD_S):
                    async with anyio.create_task_group() as tg:
                        for index in range(clients):
                            url = proxy.tagged("load", f"c{index:02d}")
                            tg.start_soon(_drive, url, era, f"c{index:02d}", steps, parallel, sequential)

            anyio.run(main)
            total = clients * steps * (parallel + sequential)
            calls = wait_calls(db, "load", total, settled=True)
    result = score(calls)
    result |= {"era": era, "clients": clients, "calls": len(calls)}
    return result


def _kind(arguments: Any) -> str:
    """``p`` for a concurrent call's row, ``s`` for a sequential one's (by its fund code)."""
    values = json.loads(arguments) if isinstance(arguments, str) else arguments
    return "p" if values["fundNameOrCode"] in PARALLEL_CODES else "s"


def main() -> None:
    """Command line: see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--era", default="legacy")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--steps", type=int, default=25)
    parser.add_argument("--parallel", type=int, default=3)
    parser.add_argument("--sequential", type=int, default=2)
    parser.add_argument("--out", type=Path)
    parser.add_argument("proxy_args", nargs="*")
    args = parser.parse_args()
    result = run(args.era, args.clients, args.steps, args.parallel, args.sequential, args.proxy_args)
    text = json.dumps(result)
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
