"""The typed options of ``finmcp-eval run`` and ``demo``: what the command lines build from their flags.

:mod:`evaluator.harness.cli` builds them from the parsed flags; the engines
(:func:`evaluator.harness.execute.run_pass`, the Ray executor, the demo) take these, never the
``argparse.Namespace``, and a Ray task receives them pickled as they are.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AgentOptions:
    """Which agent drives the run and how (``--agent`` and its flags)."""

    kind: str = "oracle"
    """``oracle``, ``noisy``, ``openai``, ``cmd`` or ``python`` (:mod:`evaluator.tasks.external`)."""
    noise: str = "0.1"
    seed: int = 0
    llm_url: str | None = None
    llm_model: str | None = None
    llm_key_env: str | None = None
    llm_timeout: float = 60.0
    llm_retries: int = 2
    max_calls: int = 20
    max_steps: int | None = None
    top_k: int | None = None
    inject_tags: bool = False
    temperature: float | None = None
    max_tokens: int | None = None
    retry: int = 0
    """``--retry N`` (oracle): retry a transient-looking failed call up to N times, honouring
    ``Retry-After``; give up with a message instead of the gold reply (0: never retry)."""
    target: str | None = None
    """``cmd``: the command line; ``python``: ``MODULE:FUNCTION``."""
    task_timeout: float = 600.0
    """``cmd``/``python``: seconds per task before it fails (a program's process group is killed)."""


@dataclass(frozen=True)
class RunOptions:
    """One ``finmcp-eval run``: the benchmark, where calls go, the trace store, the agent, fan-out."""

    run: str
    agent: AgentOptions
    bench: str = "finmcp-sim"
    proxy: str | None = None
    spawn: bool = False
    db: str | None = None
    state: str | None = None
    concurrency: int = 8
    trials: int = 1
    resume: bool = False
    group_tags: bool = True
    limit: int | None = None
    samples: tuple[str, ...] = ()
    inventory: str | None = None
    recordings: str | None = None
    seed: int = 0
    server_latency: str = "none"
    server_miss: str = "simulate"
    loop: str = "auto"
    out: str | None = None
    bootstrap: int = 2000
    progress: bool = True
    shard: str | None = None
    shard_base: int = 0
    executor: str = "local"
    shards: int | None = None
    workdir: str | None = None
    faults: str | None = None
    """``--faults SCHEDULE``: a fault schedule file (the spawned server serves it; stored with the run)."""
    clean_run: str | None = None
    """``--clean-run RUN``: the same agent's run without faults in the same trace DB (ΔTF1/ΔEMR)."""


@dataclass(frozen=True)
class DemoOptions:
    """One ``finmcp-eval demo``."""

    out: str = "out/demo"
    limit: int | None = None
    concurrency: int = 8
    bootstrap: int = 1000
    seed: int = 0
    progress: bool = True
    loop: str = "auto"
