"""``finmcp-eval run``: drive an agent over a benchmark through the proxy, then (optionally) score it."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from evaluator.errors import EvalInputError
from recordings.plumbing.flags import add_bench, add_llm_endpoint, add_recordings, add_trace_store


def add_parser(sub: Any) -> None:
    """Register ``run`` on the ``finmcp-eval`` subparsers."""
    p = sub.add_parser("run", help="drive an agent over a benchmark through finmcp-proxy")
    add_bench(p, default="finmcp-sim", help="benchmark: finmcp-sim (default) or a references file")
    p.add_argument("--agent", choices=("oracle", "noisy", "openai"), required=True)
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
    add_llm_endpoint(
        p,
        purpose="--agent openai",
        url_aliases=["--base-url"],
        model_aliases=["--model"],
        key_aliases=["--api-key-env"],
    )
    p.add_argument("--max-calls", type=int, default=20, help="tool calls per turn (FinMCP: 20)")
    p.add_argument("--max-steps", type=int, help="assistant steps per turn (FinToolBench: 5)")
    p.add_argument("--top-k", type=int, help="offer only the BM25 top-K tools (FATR-style; e.g. 20)")
    p.add_argument("--inject-tags", action="store_true", help="append finance tags to tool descriptions")
    p.add_argument("--temperature", type=float, help="sampling temperature (openai)")
    p.add_argument("--server-latency", default="none", help="latency model of the spawned server")
    p.add_argument("--server-miss", choices=("simulate", "strict"), default="simulate")
    p.add_argument("--mcp-client", choices=("lean", "sdk"), default="lean", help="harness MCP client")
    p.add_argument("--out", help="score the run and write report.{json,md,html} here")
    p.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples for --out")
    p.add_argument("--no-progress", action="store_true")


def make_agent(args: argparse.Namespace) -> Any:
    """The agent the arguments ask for."""
    from evaluator.agents import NoiseRates, NoisyAgent, OracleAgent

    if args.agent == "oracle":
        return OracleAgent()
    if args.agent == "noisy":
        return NoisyAgent(NoiseRates.parse(args.noise), args.seed)
    from evaluator.agents.openai_agent import OpenAIAgent
    from evaluator.llm import Endpoint, LlmError

    if args.max_calls < 1 or (args.max_steps is not None and args.max_steps < 1):
        raise EvalInputError("--max-calls and --max-steps must be >= 1")
    if args.top_k is not None and args.top_k < 1:
        raise EvalInputError("--top-k must be >= 1")
    try:
        chat = Endpoint.from_args(args, "--agent openai").client(temperature=args.temperature)
    except LlmError as exc:
        raise EvalInputError(str(exc)) from None
    return OpenAIAgent(chat, args.max_calls, args.max_steps, args.top_k, args.inject_tags)


def _paths(args: argparse.Namespace) -> tuple[Path | None, Path]:
    db = Path(args.db) if args.db else (Path("out/runs.sqlite") if args.spawn else None)
    if args.state:
        state = Path(args.state)
    elif db is not None:
        state = db.with_name(db.name + ".harness.jsonl")
    else:
        raise EvalInputError("with --proxy, give --db (the proxy's trace DB) or --state FILE")
    return db, state


def run(args: argparse.Namespace) -> int:
    """``finmcp-eval run``."""
    from evaluator.agents.history import RecordedOutputs
    from evaluator.harness.runner import RunConfig
    from evaluator.harness.setup import load_bench
    from evaluator.harness.spawn import SpawnConfig, SpawnError, Stack

    if args.concurrency < 1 or args.trials < 1:
        raise EvalInputError("--concurrency and --trials must be >= 1")
    db, state = _paths(args)
    workdir = (db or state).parent
    bench = load_bench(args.bench, workdir, args.inventory, args.recordings, args.limit, args.sample or None)
    agent = make_agent(args)
    outputs = RecordedOutputs(str(bench.recordings), bench.inventory) if bench.recordings else None
    stack = None
    try:
        if args.spawn:
            assert db is not None
            db.parent.mkdir(parents=True, exist_ok=True)
            spawn = SpawnConfig(
                db=db,
                inventory=bench.inventory_name,
                recordings=bench.recordings,
                miss=args.server_miss,
                latency=args.server_latency,
                seed=args.seed,
            )
            try:
                stack = Stack(spawn).start()
            except SpawnError as exc:
                raise EvalInputError(f"--spawn: {exc}") from None
            proxy_url = stack.proxy_base
        else:
            proxy_url = args.proxy
        config = RunConfig(
            run_id=args.run,
            proxy_url=proxy_url,
            state_path=state,
            db_path=db,
            concurrency=args.concurrency,
            trials=args.trials,
            resume=args.resume,
            group_tags=args.group_tags == "on",
            mcp_client=args.mcp_client,
            progress=not args.no_progress,
        )
        summary = asyncio.run(_drive(bench.refs, agent, config, outputs))
    finally:
        if stack is not None:
            stack.stop()
        if outputs is not None:
            outputs.close()
    print(summary.line())
    for key, error in list(summary.errors.items())[:10]:
        print(f"  failed {key}: {error}")
    if len(summary.errors) > 10:
        print(f"  ... {len(summary.errors) - 10} more failures in {state}")
    if args.out:
        if db is None:
            raise EvalInputError("--out needs the trace DB (--db)")
        write_report(bench, db, state, args.run, Path(args.out), args.bootstrap, args.seed)
    return 0


async def _drive(refs: list[Any], agent: Any, config: Any, outputs: Any) -> Any:
    from evaluator.harness.runner import run_agent

    try:
        return await run_agent(refs, agent, config, outputs)
    finally:
        await agent.aclose()


def write_report(
    bench: Any, db: Path, state: Path, run_id: str, out: Path, bootstrap: int, seed: int
) -> dict[str, Any]:
    """Score ``run_id`` and write ``report.json``, ``report.md`` and ``report.html`` under ``out``."""
    from evaluator.harness.scoring import score_run
    from evaluator.harness.state import RunState
    from evaluator.reports.html import render_html
    from evaluator.reports.markdown import render_markdown
    from evaluator.reports.pipeline import print_warnings

    records = RunState(state).records(run_id)
    report = score_run(
        bench.refs, db, run_id, records, bench.inventory, bootstrap, seed, bench.name, bench.format
    )
    print_warnings(report, "finmcp-eval run")
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, ensure_ascii=False, indent=1, default=str), "utf-8")
    (out / "report.md").write_text(render_markdown(report), "utf-8")
    (out / "report.html").write_text(render_html(report), "utf-8")
    overall = (report.get("official") or report.get("tool_selection") or {}).get("overall")
    print(f"wrote {out / 'report.json'}, {out / 'report.md'}, {out / 'report.html'}")
    print(json.dumps({"overall": overall}, ensure_ascii=False))
    return report
