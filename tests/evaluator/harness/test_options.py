"""``finmcp-eval run`` and ``demo`` become frozen, picklable options (what a Ray task receives)."""

from __future__ import annotations

import pickle

from finmcp.evaluator.cli import build_parser
from finmcp.evaluator.harness.cli import demo_options, run_options
from finmcp.evaluator.harness.options import AgentOptions, DemoOptions, RunOptions


def test_run_flags_become_run_options() -> None:
    args = build_parser().parse_args(
        [
            "run",
            "--agent",
            "noisy",
            "--noise",
            "0.2",
            "--spawn",
            "--run",
            "r",
            "--sample",
            "a",
            "--sample",
            "b",
            "--group-tags",
            "off",
            "--no-progress",
            "--seed",
            "3",
            "--llm-model",
            "m",
        ]  # fmt: skip
    )
    options = run_options(args)
    assert options.run == "r" and options.spawn and options.proxy is None
    assert options.samples == ("a", "b") and not options.group_tags and not options.progress
    assert options.agent == AgentOptions(
        kind="noisy", noise="0.2", seed=3, llm_model="m", llm_key_env=args.llm_key_env
    )
    assert pickle.loads(pickle.dumps(options)) == options


def test_defaults_of_the_flags_and_of_the_options_agree() -> None:
    args = build_parser().parse_args(
        ["run", "--agent", "oracle", "--proxy", "http://127.0.0.1:1/mcp", "--run", "r"]
    )
    assert run_options(args) == RunOptions(
        run="r", agent=AgentOptions(llm_key_env=args.llm_key_env), proxy="http://127.0.0.1:1/mcp"
    )
    assert demo_options(build_parser().parse_args(["demo"])) == DemoOptions()
