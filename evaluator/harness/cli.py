"""``finmcp-eval run`` and ``demo``: their flags, and the typed options (:mod:`evaluator.harness.options`)
they become; :func:`run` drives an agent over a benchmark through the proxy, then (optionally) scores it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.harness.options import AgentOptions, DemoOptions, RunOptions
from finmcp.recordings.plumbing.eventloop import LOOPS
from finmcp.recordings.plumbing.flags import add_bench, add_llm_endpoint, add_recordings, add_trace_store
from finmcp.recordings.plumbing.options import options_from


def add_parser(sub: Any) -> None:
    """Register ``run`` on the ``finmcp-eval`` subparsers."""
    p = sub.add_parser("run", help="drive an agent over a benchmark through finmcp-proxy")
    add_bench(p, default="finmcp-sim", help="benchmark: finmcp-sim (default) or a references file")
    p.add_argument(
        "--agent",
        required=True,
        metavar="AGENT",
        help="oracle, noisy, openai, cmd:'COMMAND' (a program per task) or python:MODULE:FUNCTION",
    )
    p.add_argument(
        "--task-timeout",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="cmd:/python: agents: seconds per task (default 600; a program's process group is killed)",
    )
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--proxy", metavar="URL", help="a running finmcp-proxy, e.g. http://127.0.0.1:8766/mcp"
    )
    where.add_argument(
        "--spawn", action="store_true", help="start finmcp-server + finmcp-proxy on free ports"
    )
    p.add_argument("--run", required=True, help="run id (the proxy's run tag)")
    add_trace_store(p, help="trace store the proxy writes (default out/runs.sqlite with --spawn)")
    p.add_argument("--state", help="run-state JSONL (default: DB path + .harness.jsonl)")
    p.add_argument("--concurrency", type=int, default=8, help="samples in flight")
    p.add_argument("--trials", type=int, default=1, help="repeat every sample k times (/k/{trial} tags)")
    p.add_argument("--resume", action="store_true", help="skip samples this run already finished")
    p.add_argument(
        "--group-tags", choices=("on", "off"), default="on", help="tag each step's group explicitly"
    )
    p.add_argument("--limit", type=int, help="a stratified slice of N samples")
    p.add_argument("--sample", action="append", default=[], help="run only this sample id (repeatable)")
    p.add_argument("--inventory", help="inventory for a references file (default: the references' own)")
    add_recordings(p, help="recordings file: the spawned server replays it; gold outputs in history")
    p.add_argument("--seed", type=int, default=0, help="seed of the noisy agent and the spawned server")
    p.add_argument(
        "--noise", default="0.1", help="noisy rates: RATE or drop=,wrong=,over=,split=,merge=,reorder="
    )
    add_llm_endpoint(p, purpose="--agent openai")
    p.add_argument("--max-calls", type=int, default=20, help="tool calls per turn (FinMCP: 20)")
    p.add_argument("--max-steps", type=int, help="assistant steps per turn (FinToolBench: 5)")
    p.add_argument("--top-k", type=int, help="offer only the BM25 top-K tools (FATR-style; e.g. 20)")
    p.add_argument("--inject-tags", action="store_true", help="append finance tags to tool descriptions")
    p.add_argument("--temperature", type=float, help="sampling temperature (openai)")
    p.add_argument(
        "--max-tokens", type=int, help="completion tokens per request (openai; default: the endpoint's)"
    )
    p.add_argument(
        "--retry",
        type=int,
        default=0,
        metavar="N",
        help="oracle: retry a transient failure up to N times (honouring Retry-After), else say it gave up",
    )
    p.add_argument(
        "--faults",
        metavar="SCHEDULE",
        help="a fault schedule (JSON, docs/server.md): the spawned server injects it; stored with the run",
    )
    p.add_argument(
        "--clean-run",
        metavar="RUN",
        help="with --faults and --report-dir: the same agent's clean run in the same DB (for ΔTF1/ΔEMR)",
    )
    p.add_argument("--server-latency", default="none", help="latency model of the spawned server")
    p.add_argument("--server-miss", choices=("simulate", "strict"), default="simulate")
    p.add_argument(
        "--loop", choices=LOOPS, default="auto", help="the harness's event loop (auto: uvloop when installed)"
    )
    p.add_argument("--report-dir", dest="out", help="score the run and write report.{json,md,html} here")
    p.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples for --report-dir")
    p.add_argument("--no-progress", action="store_true")
    fan = p.add_argument_group("fanning out (docs/scale.md)")
    fan.add_argument(
        "--shard",
        metavar="I/N",
        help="run only shard I of N (0-based: 0/4..3/4, as $JOB_COMPLETION_INDEX; stratified, deterministic)",
    )
    fan.add_argument(
        "--shard-base",
        type=int,
        choices=(0, 1),
        default=0,
        help="1: --shard indices are 1-based (1/4..4/4, Slurm --array=1-4)",
    )
    ray_help = "local (this process) or ray: --shards N Ray tasks, each with its own server + proxy"
    fan.add_argument("--executor", choices=("local", "ray"), default="local", help=ray_help)
    fan.add_argument("--shards", type=int, help="how many shards --executor ray runs")
    fan.add_argument(
        "--workdir",
        help="local folder for run state and proxy outboxes with --db postgresql:// (default out)",
    )


def add_demo_arguments(p: argparse.ArgumentParser) -> None:
    """Options of ``finmcp-eval demo``."""
    p.add_argument("--out-dir", dest="out", default="out/demo", help="output folder (default out/demo)")
    p.add_argument("--limit", type=int, help="a stratified slice of N samples (default: all 613)")
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for the CIs")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-progress", action="store_true")
    p.add_argument(
        "--loop", choices=LOOPS, default="auto", help="the harness's event loop (auto: uvloop when installed)"
    )


def run_options(args: argparse.Namespace) -> RunOptions:
    """The typed options of parsed ``finmcp-eval run`` arguments."""
    return options_from(
        RunOptions,
        args,
        agent=agent_options(args),
        group_tags=args.group_tags == "on",
        samples=tuple(args.sample),
        progress=not args.no_progress,
    )


def agent_options(args: argparse.Namespace) -> AgentOptions:
    """The typed ``--agent`` of parsed ``finmcp-eval run`` arguments (``cmd:``/``python:`` split off)."""
    from finmcp.evaluator.tasks.external import split_agent

    kind, target = split_agent(args.agent)
    if target is None and kind not in ("oracle", "noisy", "openai"):
        raise EvalInputError(
            f"--agent {kind!r}: expected oracle, noisy, openai, cmd:COMMAND or python:MODULE:FUNCTION"
        )
    return options_from(AgentOptions, args, kind=kind, target=target)


def demo_options(args: argparse.Namespace) -> DemoOptions:
    """The typed options of parsed ``finmcp-eval demo`` arguments."""
    return options_from(DemoOptions, args, progress=not args.no_progress)


def run(options: RunOptions) -> int:
    """``finmcp-eval run``: one pass (or one shard), or every shard on Ray; scores the run with ``--report-dir``."""
    from finmcp.evaluator.harness.execute import paths, run_pass
    from finmcp.evaluator.harness.reporting import print_failures, write_report
    from finmcp.evaluator.harness.shards import parse_shard

    if options.concurrency < 1 or options.trials < 1:
        raise EvalInputError("--concurrency and --trials must be >= 1")
    if options.executor == "ray":
        from finmcp.evaluator.harness.ray_executor import run_on_ray

        return run_on_ray(options)
    if options.shards is not None:
        raise EvalInputError("--shards N needs --executor ray (one process per shard: --shard I/N)")
    shard = parse_shard(options.shard, options.shard_base) if options.shard else None
    if shard is not None and options.out:
        raise EvalInputError(
            "--report-dir scores the whole run: once every shard has finished, run finmcp-eval score --run "
            f"{options.run} (or use --executor ray --shards N --report-dir DIR)"
        )
    result = run_pass(options, shard)
    print(result.summary.line() + (f" [shard {shard}: {len(result.samples)} samples]" if shard else ""))
    print_failures(result.summary, result.state)
    if options.out:
        db, _, _ = paths(options, None)
        if db is None:
            raise EvalInputError("--report-dir needs the trace DB (--db)")
        write_report(
            result.bench,
            db,
            [result.state],
            options.run,
            Path(options.out),
            options.bootstrap,
            options.seed,
            options.clean_run,
        )
    return 0
