"""A "bring your own agent" program for tests: reads a finmcp-task/1, calls tools with the mcp SDK
client at the task's MCP URL, prints an answer.

It knows the answers because a test lets it read the references (the task does not carry the gold
plan): ``--refs FILE`` (default: the shipped finmcp-sim). Per turn it replays the gold call groups
(each group's calls concurrently, tagged with the group's index like finmcp's own agents) and prints
the gold reply (FinToolBench: the ground truth). It also checks what the harness promises: the task
on stdin equals the file ``FINMCP_TASK_FILE``, ``FINMCP_MCP_URL`` is the task's URL, ``OPENAI_BASE_URL``
its model URL, and the URL's ``tools/list`` lists exactly the task's ``tools`` when it names some.

``--mode`` makes it misbehave: ``crash`` (stderr, exit 3), ``hang`` (sleeps; a child in its process
group sleeps too), ``silent`` (prints nothing), ``flood`` (prints 3 MiB), ``error`` (a JSON error).
``--fail SAMPLE=MODE`` misbehaves on that sample only. ``solve`` is the same agent as a ``python:``
callable; ``picky`` one that fails on some samples.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

import anyio
from mcp.client import Client

from finmcp.evaluator.tasks.model import Task


def _reference(refs: str | None, sample: str) -> Any:
    from finmcp.evaluator.benchmarks import open_references

    found = {r.id: r for r in open_references(refs or "finmcp-sim").samples}
    return found[sample]


async def _call(client: Client, tool: str, arguments: dict[str, Any], meta: Any) -> None:
    await client.call_tool(tool, arguments, meta=meta)


async def solve(task: Task, refs: str | None = None) -> str:
    """Replay the gold calls of the task's turn through its MCP URL; the gold reply."""
    ref = _reference(refs or os.environ.get("BYO_REFS"), task.sample)
    async with Client(task.mcp_url, mode="legacy") as client:
        listed = await client.list_tools()
        names = [t.name for t in listed.tools]
        if task.tools is not None and sorted(names) != sorted(task.tools):
            raise RuntimeError(f"tools/list gave {len(names)} tools, the task names {len(task.tools)}")
        for index, group in enumerate(ref.turns[task.turn].calls):
            async with anyio.create_task_group() as tg:
                for call in group:
                    meta: Any = {"io.finmcp/group": index}  # the SDK's open TypedDict
                    tg.start_soon(_call, client, call.tool, call.arguments, meta)
    if ref.source == "fintoolbench":
        return str(ref.ground_truth)
    return str(ref.turns[task.turn].assistant or "ok")


async def picky(task: Task) -> Any:
    """A ``python:`` agent that fails on purpose by sample: ``*-0002`` raises, ``*-0003`` returns
    nothing, ``*-0004`` outlasts any short ``--task-timeout``; the rest are solved (:func:`solve`)."""
    if task.sample.endswith("-0002"):
        raise ValueError("the agent broke on purpose")
    if task.sample.endswith("-0003"):
        return None
    if task.sample.endswith("-0004"):
        await anyio.sleep(300)
    return {"answer": await solve(task)}


def stuck(task: Task) -> str:
    """A sync ``python:`` agent that never returns on ``*-0002`` and answers a constant elsewhere."""
    if task.sample.endswith("-0002"):
        time.sleep(3600)
    return "constant"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", default="replay")
    parser.add_argument("--refs")
    parser.add_argument("--fail", action="append", default=[], help="SAMPLE=MODE: misbehave on that sample")
    args = parser.parse_args(argv)
    text = sys.stdin.read()
    task = Task.from_json(text)
    args.mode = dict(spec.split("=", 1) for spec in args.fail).get(task.sample, args.mode)
    with open(os.environ["FINMCP_TASK_FILE"], encoding="utf-8") as fh:
        if json.loads(fh.read()) != json.loads(text):
            print("task file differs from stdin", file=sys.stderr)
            return 4
    if (
        os.environ.get("FINMCP_MCP_URL") != task.mcp_url
        or os.environ.get("OPENAI_BASE_URL") != task.model_url
    ):
        print("door variables differ from the task", file=sys.stderr)
        return 4
    if args.mode == "crash":
        print("Traceback (most recent call last):\nValueError: the agent broke on purpose", file=sys.stderr)
        return 3
    if args.mode == "hang":
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])  # same process group
        time.sleep(300)
        return 0
    if args.mode == "silent":
        return 0
    if args.mode == "flood":
        chunk = "x" * 65536
        for _ in range(48):
            sys.stdout.write(chunk)
        sys.stdout.flush()
        return 0
    if args.mode == "error":
        print(json.dumps({"answer": None, "error": "no idea"}))
        return 0
    print(anyio.run(solve, task, args.refs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
