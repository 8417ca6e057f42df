"""``finmcp-eval model``: serve a scripted model (OpenAI-compatible) on loopback until SIGINT/SIGTERM.

Prints the shared ready line ``finmcp-eval ready: http://HOST:PORT (model BENCH POLICY)`` on stderr
once it accepts requests. Default port 8771 (the viewer has 8770). The parser part is light; serving
imports uvicorn and the benchmark when it runs.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any

from finmcp.evaluator.errors import EvalInputError
from finmcp.recordings.plumbing.flags import add_bench

DEFAULT_PORT = 8771


def add_parser(sub: Any) -> None:
    """The ``model`` subcommand."""
    p = sub.add_parser(
        "model", help="serve a scripted OpenAI-compatible model that plays a benchmark's gold plan (no LLM)"
    )
    add_bench(p, default="finmcp-sim", help="benchmark: finmcp-sim (default) or a references file")
    p.add_argument(
        "--policy", choices=["oracle", "noisy"], default="oracle", help="oracle (default) or noisy"
    )
    p.add_argument(
        "--noise",
        default="0.1",
        help="noisy rates: RATE or drop=,wrong=,over=,split=,merge=,reorder= (default 0.1)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the noisy policy (default 0)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 = any free)"
    )


@dataclass(frozen=True)
class ModelOptions:
    """``finmcp-eval model``: the benchmark, the policy and where to listen."""

    bench: str = "finmcp-sim"
    policy: str = "oracle"
    noise: str = "0.1"
    seed: int = 0
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT


def model_options(args: argparse.Namespace) -> ModelOptions:
    """The typed options of parsed ``finmcp-eval model`` arguments."""
    return ModelOptions(args.bench, args.policy, args.noise, args.seed, args.host, args.port)


def build_script(options: ModelOptions) -> Any:
    """The :class:`evaluator.scripted.plan.Script` of the options (bad input: EvalInputError)."""
    from finmcp.evaluator.agents.noisy import NoiseRates
    from finmcp.evaluator.benchmarks import open_references
    from finmcp.evaluator.scripted.plan import Script

    rates = NoiseRates.parse(options.noise) if options.policy == "noisy" else None
    try:
        refs = open_references(options.bench).samples
    except EvalInputError:
        raise
    except Exception as exc:  # unreadable or invalid references
        raise EvalInputError(f"--bench {options.bench}: {exc}") from None
    if not refs:
        raise EvalInputError(f"--bench {options.bench}: no samples")
    return Script(refs, options.policy, rates, options.seed)


def run(options: ModelOptions) -> int:
    """Serve until interrupted; returns the exit status (2 with one line when the port cannot be bound)."""
    import asyncio

    import uvicorn

    from finmcp.evaluator.scripted.app import build_app
    from finmcp.recordings.plumbing.launch import announce_ready
    from finmcp.recordings.plumbing.listener import ListenError, bind_listener, socket_url

    script = build_script(options)
    try:
        sock = bind_listener(
            "finmcp-eval model", options.host, options.port, exposes="a scripted model", token=None
        )
    except ListenError as exc:
        print(f"finmcp-eval model: {exc}", file=sys.stderr)
        return 2
    base = socket_url(sock)
    server = uvicorn.Server(
        uvicorn.Config(build_app(script), log_level="warning", access_log=False, lifespan="off")
    )

    async def main() -> None:
        async def announce() -> None:
            while not server.started and not server.should_exit:
                await asyncio.sleep(0.01)
            if server.started:
                announce_ready("finmcp-eval", base, f"model {options.bench} {options.policy}")

        watcher = asyncio.ensure_future(announce())
        try:
            await server.serve(sockets=[sock])
        finally:
            watcher.cancel()

    asyncio.run(main())
    return 0
