"""``finmcp-eval run``: drive an agent over a benchmark through the proxy, then (optionally) score it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from evaluator.errors import EvalInputError
from recordings.plumbing.eventloop import LOOPS
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
    p.add_argument(
        "--max-tokens", type=int, help="completion tokens per request (openai; default: the endpoint's)"
    )
    p.add_argument("--server-latency", default="none", help="latency model of the spawned server")
    p.add_argument("--server-miss", choices=("simulate", "strict"), default="simulate")
    p.add_argument(
        "--loop", choices=LOOPS, default="auto", help="the harness's event loop (auto: uvloop when installed)"
    )
    p.add_argument("--out", help="score the run and write report.{json,md,html} here")
    p.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples for --out")
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
    fan.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="local (this process) or ray: --shards N Ray tasks, each with its own server + proxy",
    )
    fan.add_argument("--shards", type=int, help="how many shards --executor ray runs")
    fan.add_argument(
        "--workdir",
        help="local folder for run state and proxy outboxes with --db postgresql:// (default out)",
    )


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
    if getattr(args, "max_tokens", None) is not None and args.max_tokens < 1:
        raise EvalInputError("--max-tokens must be >= 1")
    try:
        chat = Endpoint.from_args(args, "--agent openai").client(
            temperature=args.temperature, max_tokens=getattr(args, "max_tokens", None)
        )
    except LlmError as exc:
        raise EvalInputError(str(exc)) from None
    return OpenAIAgent(chat, args.max_calls, args.max_steps, args.top_k, args.inject_tags)


def run(args: argparse.Namespace) -> int:
    """``finmcp-eval run``."""
    from evaluator.harness.execute import load, paths, run_pass
    from evaluator.harness.shards import parse_shard

    if args.concurrency < 1 or args.trials < 1:
        raise EvalInputError("--concurrency and --trials must be >= 1")
    if args.executor == "ray":
        from evaluator.harness.ray_executor import run_on_ray

        return run_on_ray(args)
    if args.shards is not None:
        raise EvalInputError("--shards N needs --executor ray (one process per shard: --shard I/N)")
    shard = parse_shard(args.shard, args.shard_base) if args.shard else None
    if shard is not None and args.out:
        raise EvalInputError(
            "--out scores the whole run: once every shard has finished, run finmcp-eval score --run "
            f"{args.run} (or use --executor ray --shards N --out DIR)"
        )
    result = run_pass(args, shard)
    print(result.summary.line() + (f" [shard {shard}: {len(result.samples)} samples]" if shard else ""))
    print_failures(result.summary, result.state)
    if args.out:
        db, _, workdir = paths(args, None)
        if db is None:
            raise EvalInputError("--out needs the trace DB (--db)")
        write_report(
            load(args, workdir), db, [result.state], args.run, Path(args.out), args.bootstrap, args.seed
        )
    return 0


def print_failures(summary: Any, state: Path) -> None:
    """Up to 10 failed samples of a summary, then how many more are in ``state``."""
    for key, error in list(summary.errors.items())[:10]:
        print(f"  failed {key}: {error}")
    if len(summary.errors) > 10:
        print(f"  ... {len(summary.errors) - 10} more failures in {state}")


def write_report(
    bench: Any,
    db: str | Path,
    state: Path | list[Path],
    run_id: str,
    out: Path,
    bootstrap: int,
    seed: int,
) -> dict[str, Any]:
    """Score ``run_id`` and write ``report.json``, ``report.md`` and ``report.html`` under ``out``.

    ``state``: the run-state file, or the files of all its shards."""
    from evaluator.harness.scoring import score_run
    from evaluator.harness.state import RunState
    from evaluator.reports.html import render_html
    from evaluator.reports.markdown import render_markdown
    from evaluator.reports.pipeline import print_warnings

    records = [
        r for path in (state if isinstance(state, list) else [state]) for r in RunState(path).records(run_id)
    ]
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
